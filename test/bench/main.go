// Command bench measures the operator side by side with baselines in one run and writes a table of
// ratios: admission through the API server against the same CRD with no webhook and with the same
// rules as admission policies; the webhook handlers over HTTPS against a trivial stdlib handler;
// convergence against a plain client making the same writes, and the writes of the steady state;
// the manager's memory per byte of what it caches; start to serving and certificate swap.
//
// Every comparison runs its variants in interleaved rounds and reports the median of the rounds
// and their spread [min–max]. It reports numbers and never fails on them; make bench runs it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/seedlabs/webhook-operator/test/testenv"
)

// settings are every section's sizes.
type settings struct {
	admission   admissionSettings
	handlers    handlerSettings
	convergence convergenceSettings
	memory      int
	certSwaps   int
}

func main() {
	out := flag.String("out", filepath.Join("bin", "bench", "report.md"), "Where to write the report.")
	managerBinary := flag.String("manager", filepath.Join("bin", "manager"), "The manager binary (make build).")
	quick := flag.Bool("quick", false, "Small sizes, to try the bench out in a minute or two; the numbers are not worth much.")
	flag.Parse()

	s := settings{
		admission:   admissionSettings{rounds: 5, requests: 300, concurrency: []int{1, 8}},
		handlers:    handlerSettings{rounds: 5, duration: 500 * time.Millisecond, concurrency: []int{1, 8}},
		convergence: convergenceSettings{rounds: 3, perKind: 1000, workers: 8},
		memory:      10000,
		certSwaps:   5,
	}
	if *quick {
		s.admission.rounds, s.admission.requests = 2, 60
		s.handlers.rounds, s.handlers.duration = 2, 200*time.Millisecond
		s.convergence.rounds, s.convergence.perKind = 1, 100
		s.memory, s.certSwaps = 600, 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, s, *out, *managerBinary); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, s settings, out, managerBinary string) (err error) {
	root, err := testenv.ModuleRoot()
	if err != nil {
		return err
	}
	if !filepath.IsAbs(managerBinary) {
		managerBinary = filepath.Join(root, managerBinary)
	}
	if !filepath.IsAbs(out) {
		out = filepath.Join(root, out)
	}
	workDir, err := os.MkdirTemp("", "webhook-operator-bench-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(workDir) }()
	r := &report{settings: s, started: time.Now()}
	logf := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "%s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
	}

	logf("handlers over HTTPS against a trivial stdlib handler")
	if r.handlers, err = runHandlers(ctx, s.handlers, root, workDir); err != nil {
		return fmt.Errorf("handlers: %w", err)
	}

	logf("starting the control plane")
	c, err := startCluster(ctx, workDir)
	if err != nil {
		return err
	}
	defer func() {
		if stopErr := c.stop(); err == nil {
			err = stopErr
		}
	}()
	mf := managerFlags{binary: managerBinary, logPath: filepath.Join(filepath.Dir(out), "manager.log")}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	_ = os.Remove(mf.logPath)

	// The admission comparison runs with the controllers idle, as the other variants have none.
	if err := c.holdLease(ctx); err != nil {
		return err
	}
	m, err := c.startManager(mf)
	if err != nil {
		return err
	}
	firstStart := m.servingAfter
	sampleJSON, err := readSampleJSON(filepath.Join(root, "config", "samples", "auth_v1alpha1_welcome.yaml"))
	if err != nil {
		return err
	}
	var sample map[string]any
	if err := yaml.Unmarshal(sampleJSON, &sample); err != nil {
		return err
	}
	logf("admission through the API server: webhooks, bare CRD, ValidatingAdmissionPolicy, MutatingAdmissionPolicy")
	if r.admission, err = runAdmission(ctx, c, s.admission, sample); err != nil {
		return fmt.Errorf("admission: %w", errors.Join(err, m.stop()))
	}
	if err := m.stop(); err != nil {
		return err
	}

	smp, err := readSamples(root)
	if err != nil {
		return err
	}
	logf("convergence: %d objects of each kind, operator against a plain client, %d rounds", s.convergence.perKind, s.convergence.rounds)
	r.convergence, m, r.startups, err = runConvergence(ctx, c, mf, s.convergence, smp)
	if err != nil {
		return fmt.Errorf("convergence: %w", err)
	}
	r.startups = append([]time.Duration{firstStart}, r.startups...)
	logf("memory with %d objects", s.memory)
	r.memory, err = runMemory(ctx, c, m, smp, s.memory, s.convergence.workers)
	if err != nil {
		return fmt.Errorf("memory: %w", errors.Join(err, m.stop()))
	}
	logf("certificate swap")
	r.certSwap, err = runCertificateSwap(c, s.certSwaps)
	if err := errors.Join(err, m.stop()); err != nil {
		return fmt.Errorf("certificate swap: %w", err)
	}
	r.finished = time.Now()

	text := r.markdown()
	if err := os.WriteFile(out, []byte(text), 0o644); err != nil {
		return err
	}
	fmt.Print(text)
	logf("wrote %s", out)
	return nil
}
