// Command welcome-web is the operand of the Welcome custom resource: a small
// web server that answers "Hello <NAME>" under /hello/ and reports its health
// under /healthz.
//
// It reads NAME (required) and PORT (default 8088) from the environment and
// shuts down gracefully on SIGTERM or SIGINT. welcome-web --version prints the
// version and commit it was built from.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/seedlabs/webhook-operator/internal/version"
)

const (
	// helloPathPrefix is the path prefix under which the greeting is served.
	helloPathPrefix = "/hello/"
	// healthPath is the path of the health endpoint that the readiness and
	// liveness probes of the Deployment call.
	healthPath = "/healthz"
	// healthBody is the body answered by the health endpoint.
	healthBody = "ok"
	// allowedMethods is the value of the Allow header on a 405 answer.
	allowedMethods = "GET, HEAD"

	// nameEnv is the environment variable holding the name to greet.
	nameEnv = "NAME"
	// portEnv is the environment variable holding the TCP port to listen on.
	portEnv = "PORT"
	// defaultPort is the TCP port used when PORT is not set.
	defaultPort = 8088

	// shutdownTimeout bounds how long in-flight requests may take to finish
	// after a shutdown signal; it stays below the default 30s termination
	// grace period of a Pod.
	shutdownTimeout = 10 * time.Second

	// Limits of the http.Server, so a slow or oversized client cannot hold a
	// connection or memory indefinitely.
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 10 * time.Second
	writeTimeout      = 10 * time.Second
	idleTimeout       = 60 * time.Second
	maxHeaderBytes    = 16 << 10
)

// config is the server configuration read from the environment.
type config struct {
	// name is the name greeted under /hello/.
	name string
	// port is the TCP port to listen on, between 1 and 65535.
	port int
}

// address is the listen address for all interfaces on the configured port.
func (c config) address() string {
	return ":" + strconv.Itoa(c.port)
}

// loadConfig reads the configuration through getenv and reports every
// invalid or missing variable at once.
func loadConfig(getenv func(string) string) (config, error) {
	cfg := config{name: getenv(nameEnv), port: defaultPort}
	var errs []error
	if cfg.name == "" {
		errs = append(errs, fmt.Errorf("%s is not set: set it to the name to greet", nameEnv))
	}
	if raw := getenv(portEnv); raw != "" {
		port, err := strconv.Atoi(raw)
		if err != nil || port < 1 || port > 65535 {
			errs = append(errs, fmt.Errorf("%s=%q is not a valid port: must be a whole number between 1 and 65535, or unset for %d", portEnv, raw, defaultPort))
		} else {
			cfg.port = port
		}
	}
	if len(errs) > 0 {
		return config{}, errors.Join(errs...)
	}
	return cfg, nil
}

// newHandler answers the greeting for name under /hello/ and "ok" under
// /healthz, to GET and HEAD only. It never copies request input into a
// response.
func newHandler(name string) http.Handler {
	greeting := "Hello " + name
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body string
		switch {
		case r.URL.Path == healthPath:
			body = healthBody
		case strings.HasPrefix(r.URL.Path, helloPathPrefix):
			body = greeting
		default:
			http.NotFound(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", allowedMethods)
			http.Error(w, http.StatusText(http.StatusMethodNotAllowed), http.StatusMethodNotAllowed)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "text/plain; charset=utf-8")
		h.Set("Content-Length", strconv.Itoa(len(body)))
		h.Set("X-Content-Type-Options", "nosniff")
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodHead {
			return
		}
		_, _ = w.Write([]byte(body))
	})
}

// statusRecorder remembers the status code written through it for the access log.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

// WriteHeader records code and passes it on.
func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

// Write records an implicit 200 and passes b on.
func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap gives http.ResponseController access to the underlying writer.
func (s *statusRecorder) Unwrap() http.ResponseWriter {
	return s.ResponseWriter
}

// withAccessLog logs one line per request with its method, path, status and duration.
func withAccessLog(logger *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		status := rec.status
		if status == 0 {
			status = http.StatusOK
		}
		logger.LogAttrs(r.Context(), slog.LevelInfo, "request",
			slog.String("method", r.Method),
			slog.String("path", r.URL.Path),
			slog.Int("status", status),
			slog.Duration("duration", time.Since(start)),
		)
	})
}

// newServer returns an http.Server for handler with every timeout and the
// header size bounded, logging its own errors through logger.
func newServer(handler http.Handler, logger *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
}

// run serves cfg on ln until ctx is done, then stops accepting connections and
// waits up to shutdownTimeout for in-flight requests. It returns nil after a
// clean shutdown and an error if serving fails or the requests outlive the timeout.
func run(ctx context.Context, cfg config, ln net.Listener, logger *slog.Logger) error {
	srv := newServer(withAccessLog(logger, newHandler(cfg.name)), logger)
	logger.Info("serving", "address", ln.Addr().String(), "name", cfg.name)
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()

	select {
	case err := <-serveErr:
		return fmt.Errorf("serving on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}

	logger.Info("shutting down", "reason", context.Cause(ctx).Error(), "timeout", shutdownTimeout.String())
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		_ = srv.Close()
		return fmt.Errorf("finishing in-flight requests: %w", err)
	}
	if err := <-serveErr; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving on %s: %w", ln.Addr(), err)
	}
	return nil
}

func main() {
	showVersion := flag.Bool("version", false, "Print the version and commit welcome-web was built from, and exit.")
	flag.Parse()
	if *showVersion {
		fmt.Println(version.String("welcome-web"))
		return
	}
	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	if err := serveFromEnvironment(logger); err != nil {
		logger.Error("welcome-web failed", "error", err.Error())
		os.Exit(1)
	}
}

// serveFromEnvironment loads the configuration, listens on its port and serves
// until SIGTERM or SIGINT.
func serveFromEnvironment(logger *slog.Logger) error {
	cfg, err := loadConfig(os.Getenv)
	if err != nil {
		return fmt.Errorf("invalid configuration: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	// After the first signal, restore default handling so a second one kills
	// the process without waiting for the graceful shutdown.
	context.AfterFunc(ctx, stop)

	ln, err := net.Listen("tcp", cfg.address())
	if err != nil {
		return fmt.Errorf("listening on %s: %w", cfg.address(), err)
	}
	return run(ctx, cfg, ln, logger)
}
