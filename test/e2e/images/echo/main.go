// Command e2e-echo is the end-to-end test's application for DeployObjects: on every port in
// $LISTEN (comma-separated) it answers GET / with a JSON document of its version ($APP_VERSION,
// set in its image), the port that answered, its arguments and its whole environment, so the
// test can see what reached the process through each Service port. On SIGTERM it goes on serving for
// $DRAIN_SECONDS (default 5), as a well-behaved server does while the endpoint change reaches
// every proxy, then finishes its requests and exits.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"
)

// Reply is what GET / answers.
type Reply struct {
	Version  string            `json:"version"`
	Port     int               `json:"port"`
	Hostname string            `json:"hostname"`
	Args     []string          `json:"args"`
	Env      map[string]string `json:"env"`
}

func main() {
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

func run() error {
	var ports []int
	for _, p := range strings.Split(os.Getenv("LISTEN"), ",") {
		port, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || port < 1 || port > 65535 {
			return fmt.Errorf("LISTEN=%q: want comma-separated ports", os.Getenv("LISTEN"))
		}
		ports = append(ports, port)
	}
	drain := 5 * time.Second
	if s := os.Getenv("DRAIN_SECONDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return fmt.Errorf("DRAIN_SECONDS=%q: want a whole number of seconds", s)
		}
		drain = time.Duration(n) * time.Second
	}
	env := map[string]string{}
	for _, e := range os.Environ() {
		k, v, _ := strings.Cut(e, "=")
		env[k] = v
	}
	hostname, _ := os.Hostname()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	g, gctx := errgroup.WithContext(ctx)
	var servers []*http.Server
	for _, port := range ports {
		reply, err := json.Marshal(Reply{Version: os.Getenv("APP_VERSION"), Port: port, Hostname: hostname, Args: os.Args[1:], Env: env})
		if err != nil {
			return err
		}
		ln, err := net.Listen("tcp", ":"+strconv.Itoa(port))
		if err != nil {
			return err
		}
		srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(reply)
		})}
		servers = append(servers, srv)
		g.Go(func() error {
			if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		})
	}
	log.Printf("e2e-echo %s serving on %v", os.Getenv("APP_VERSION"), ports)
	<-gctx.Done()
	if ctx.Err() != nil {
		log.Printf("stopping: serving %s more, then finishing the requests in flight", drain)
		time.Sleep(drain)
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, srv := range servers {
		_ = srv.Shutdown(shutdown)
	}
	return g.Wait()
}
