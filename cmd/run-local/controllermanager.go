package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/seedlabs/webhook-operator/certs"
)

// serviceAccountSigningKey is the file in envtest's kube-apiserver cert dir holding the key that
// signs service account tokens (--service-account-signing-key-file).
const serviceAccountSigningKey = "sa-signer.key"

// controllerManagerFiles says where kube-controller-manager's binary is and where its files go.
type controllerManagerFiles struct {
	// binary is the kube-controller-manager executable.
	binary string
	// workDir receives its kubeconfig, the API server's CA and its serving certificate.
	workDir string
	// logPath receives its standard output and standard error.
	logPath string
}

// controllerManager is kube-controller-manager running as a child process.
type controllerManager struct {
	cmd     *exec.Cmd
	logPath string
	logFile *os.File
	// healthURL is its /healthz, served with a certificate from run-local's CA.
	healthURL string
	client    *http.Client
	// done is closed once the process has exited and waitErr is set.
	done    chan struct{}
	waitErr error
}

// startControllerManager starts kube-controller-manager against env's API server as an admin
// user, with every default controller and no leader election.
func startControllerManager(env *envtest.Environment, ca *certs.CA, files controllerManagerFiles) (*controllerManager, error) {
	user, err := env.AddUser(envtest.User{Name: "run-local-controller-manager", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, fmt.Errorf("provisioning its user: %w", err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return nil, fmt.Errorf("building its kubeconfig: %w", err)
	}
	kubeconfigPath := filepath.Join(files.workDir, "kube-controller-manager.kubeconfig")
	if err := os.WriteFile(kubeconfigPath, kubeconfig, 0o600); err != nil {
		return nil, err
	}
	rootCAPath := filepath.Join(files.workDir, "kube-apiserver-ca.crt")
	if err := os.WriteFile(rootCAPath, env.ControlPlane.APIServer.CA, 0o644); err != nil {
		return nil, err
	}
	servingDir := filepath.Join(files.workDir, "kube-controller-manager-serving")
	if err := writeServingPair(ca, servingDir, webhookHost); err != nil {
		return nil, fmt.Errorf("writing its serving certificate: %w", err)
	}
	port, err := freePort(webhookHost)
	if err != nil {
		return nil, err
	}

	args := []string{
		"--kubeconfig=" + kubeconfigPath,
		"--authentication-kubeconfig=" + kubeconfigPath,
		"--authorization-kubeconfig=" + kubeconfigPath,
		"--leader-elect=false",
		"--controllers=*",
		"--bind-address=" + webhookHost,
		"--secure-port=" + strconv.Itoa(port),
		"--tls-cert-file=" + filepath.Join(servingDir, "tls.crt"),
		"--tls-private-key-file=" + filepath.Join(servingDir, "tls.key"),
		"--root-ca-file=" + rootCAPath,
	}
	// Without the key the service account token controller stays off; everything else works.
	saKey := filepath.Join(env.ControlPlane.APIServer.CertDir, serviceAccountSigningKey)
	if _, err := os.Stat(saKey); err == nil {
		args = append(args, "--service-account-private-key-file="+saKey)
	}

	if err := os.MkdirAll(filepath.Dir(files.logPath), 0o700); err != nil {
		return nil, err
	}
	logFile, err := os.Create(files.logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(files.binary, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// Die with run-local even when it is killed without a chance to stop anything.
		Pdeathsig: syscall.SIGKILL,
		// Keep Ctrl-C in a terminal from reaching it directly: run-local stops it after the Manager.
		Setpgid: true,
	}

	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.CertPEM)
	c := &controllerManager{
		cmd:       cmd,
		logPath:   files.logPath,
		logFile:   logFile,
		healthURL: "https://" + net.JoinHostPort(webhookHost, strconv.Itoa(port)) + "/healthz",
		client: &http.Client{Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		}},
		done: make(chan struct{}),
	}
	if err := c.start(); err != nil {
		_ = logFile.Close()
		return nil, err
	}
	return c, nil
}

// start starts the process and waits for it in the background.
//
// Linux sends Pdeathsig when the thread that started the child exits, not the process, and the Go
// runtime may retire threads. The goroutine that starts the child therefore stays locked to its
// thread until the child is gone, and only then lets the thread go.
func (c *controllerManager) start() error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := c.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		c.waitErr = c.cmd.Wait()
		close(c.done)
	}()
	return <-started
}

// pid is the process ID of kube-controller-manager.
func (c *controllerManager) pid() int {
	return c.cmd.Process.Pid
}

// exited is closed when the process has exited.
func (c *controllerManager) exited() <-chan struct{} {
	return c.done
}

// exitError describes how the process exited; call it only after exited is closed.
func (c *controllerManager) exitError() error {
	if c.waitErr == nil {
		return fmt.Errorf("kube-controller-manager exited with status 0; its log is %s", c.logPath)
	}
	return fmt.Errorf("kube-controller-manager exited: %w; its log is %s", c.waitErr, c.logPath)
}

// healthy returns nil once /healthz answers ok.
func (c *controllerManager) healthy(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.healthURL, nil)
	if err != nil {
		return err
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", c.healthURL, resp.Status)
	}
	return nil
}

// stop sends SIGTERM, waits up to timeout for the process to exit, then kills it.
func (c *controllerManager) stop(timeout time.Duration) error {
	defer func() { _ = c.logFile.Close() }()
	c.client.CloseIdleConnections()
	select {
	case <-c.done:
		return nil
	default:
	}
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-c.done:
		return nil
	case <-timer.C:
		_ = c.cmd.Process.Kill()
		<-c.done
		return fmt.Errorf("kube-controller-manager did not exit within %s of SIGTERM and was killed", timeout)
	}
}

// freePort returns a TCP port on host that nothing listens on right now.
func freePort(host string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}
