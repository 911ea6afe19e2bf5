// Command manager runs the webhook-operator: one controller-runtime Manager serving the admission
// webhooks and running the controllers for Welcome, Memcached and DeployObject.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/seedlabs/webhook-operator/internal/operator"
	"github.com/seedlabs/webhook-operator/internal/scheme"
	"github.com/seedlabs/webhook-operator/internal/version"
)

func main() {
	var opts operator.Options
	opts.BindFlags(flag.CommandLine)
	zapOpts := zap.Options{Development: false}
	zapOpts.BindFlags(flag.CommandLine)
	showVersion := flag.Bool("version", false, "Print the version and commit the manager was built from, and exit.")
	checkIn := flag.String("check-admission-in", "", "Check through the API server that the webhooks default and refuse a DeployObject "+
		"of --welcome-image in this namespace (server-side dry runs, nothing stored), print what they did, and exit: the chart's helm test.")
	flag.Parse()
	if *showVersion {
		fmt.Println(version.String("manager"))
		return
	}
	if *checkIn != "" {
		os.Exit(checkAdmission(*checkIn, opts.WelcomeImage))
	}
	logger := zap.New(zap.UseFlagOptions(&zapOpts))
	ctrl.SetLogger(logger)
	// What client-go logs through klog comes out in the same stream, in the same encoding.
	klog.SetLogger(logger)
	logStandardLibraryTo(logger)
	log := ctrl.Log.WithName("setup")
	if limit, ok := operator.MemoryLimit(os.Getenv); ok {
		debug.SetMemoryLimit(limit)
		log.Info("set the Go runtime's soft memory limit", "bytes", limit)
	}

	mgr, err := operator.New(ctrl.GetConfigOrDie(), opts)
	if err != nil {
		log.Error(err, "unable to set up the manager")
		os.Exit(1)
	}
	log.Info("starting the manager", "version", version.Version(), "commit", version.Commit(), "welcomeImage", opts.WelcomeImage, "webhookPort", opts.WebhookPort)
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "the manager stopped with an error")
		os.Exit(1)
	}
}

// logStandardLibraryTo sends what the standard library logs to logger: net/http's server, which
// controller-runtime gives no logger of its own, logs a failed TLS handshake (a caller without a
// trusted client certificate) through package log, which slog's default logger takes over.
func logStandardLibraryTo(logger logr.Logger) {
	slog.SetDefault(slog.New(logr.ToSlogHandler(logger.WithName("stdlib"))))
}

// checkAdmission runs operator.CheckAdmission in namespace and returns the exit code: 0 when
// both webhooks served it.
func checkAdmission(namespace, image string) int {
	c, err := client.New(ctrl.GetConfigOrDie(), client.Options{Scheme: scheme.New()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	saw, err := operator.CheckAdmission(ctx, c, namespace, image)
	if err != nil {
		fmt.Fprintln(os.Stderr, "admission check failed:", err)
		return 1
	}
	fmt.Println("admission check passed:", saw)
	return 0
}
