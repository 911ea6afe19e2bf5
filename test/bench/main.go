// Command bench measures the operator side by side with baselines in one run and writes a table of
// ratios: admission through the API server against the same CRD with no webhook and with the same
// rules as admission policies; the webhook handlers over HTTPS against a trivial stdlib handler;
// convergence against a plain client making the same writes, and the writes of the steady state;
// reads, writes and storage migrations through the conversion webhook against a kind that converts
// with None; the manager's memory per byte of what it caches; start to serving and certificate swap.
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
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/yaml"

	"github.com/seedlabs/webhook-operator/test/testenv"
)

// settings are every section's sizes.
type settings struct {
	admission   admissionSettings
	handlers    handlerSettings
	convergence convergenceSettings
	conversion  conversionSettings
	memory      memorySettings
	hostile     hostileSettings
	certSwaps   int
	// sections are the sections to run: handlers, admission, convergence, conversion, memory, start.
	sections map[string]bool
}

func main() {
	out := flag.String("out", filepath.Join("bin", "bench", "report.md"), "Where to write the report.")
	managerBinary := flag.String("manager", filepath.Join("bin", "manager"), "The manager binary (make build).")
	quick := flag.Bool("quick", false, "Small sizes, to try the bench out in a minute or two; the numbers are not worth much.")
	memoryObjects := flag.String("memory-objects", "", "The numbers of custom resources the memory section measures a new leader with, comma-separated; empty means 1000,10000,30000, or 300,1000 with -quick.")
	throughAPI := flag.Int("memory-through-api", 10000, "How many of the memory section's custom resources are stored through kube-apiserver; the rest are written straight into etcd as copies (300 with -quick).")
	sections := flag.String("sections", "handlers,admission,convergence,conversion,memory,start",
		"The sections to run, comma-separated; hostile (about 15 minutes) runs only when named, best after memory.")
	floodDuration := flag.Duration("flood-duration", 10*time.Minute, "How long the hostile section floods the webhooks with refused creates.")
	baselineManager := flag.String("baseline-manager", "", "A manager binary the memory and hostile sections also start, to compare with.")
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))

	s := settings{
		admission:   admissionSettings{rounds: 11, requests: 300, concurrency: []int{1, 8}},
		handlers:    handlerSettings{rounds: 5, duration: 500 * time.Millisecond, concurrency: []int{1, 8}},
		convergence: convergenceSettings{rounds: 3, perKind: 1000, workers: 8},
		conversion:  conversionSettings{perKind: 1000, rounds: 5, lists: 5, gets: 100, writes: 50, migrations: 3, bigList: 10000, workers: 8},
		memory:      memorySettings{steps: []int{1000, 10000, 30000}, workers: 16, hostile: 500, childPadding: 1 << 20, metadataPadding: 256 << 10},
		hostile:     hostileSettings{deployments: 1000, envBytes: 1 << 20, floodRate: 300},
		certSwaps:   5,
		sections:    map[string]bool{},
	}
	for _, name := range strings.Split(*sections, ",") {
		s.sections[strings.TrimSpace(name)] = true
	}
	if *quick {
		s.admission.rounds, s.admission.requests = 2, 60
		s.handlers.rounds, s.handlers.duration = 2, 200*time.Millisecond
		s.convergence.rounds, s.convergence.perKind = 1, 100
		s.conversion = conversionSettings{perKind: 100, rounds: 2, lists: 2, gets: 20, writes: 10, migrations: 1, bigList: 1000, workers: 8}
		s.memory.steps, s.memory.hostile, s.certSwaps = []int{300, 1000}, 50, 2
		*throughAPI = min(*throughAPI, 300)
		s.hostile.deployments, s.hostile.envBytes, *floodDuration = 100, 256<<10, 20*time.Second
	}
	s.hostile.floodDuration, s.hostile.baselineManager = *floodDuration, *baselineManager
	if *memoryObjects != "" {
		s.memory.steps = nil
		for _, n := range strings.Split(*memoryObjects, ",") {
			steps, err := strconv.Atoi(strings.TrimSpace(n))
			if err != nil || steps <= 0 {
				fmt.Fprintf(os.Stderr, "bench: -memory-objects: %q is not a number of objects\n", n)
				os.Exit(2)
			}
			s.memory.steps = append(s.memory.steps, steps)
		}
	}
	s.memory.baselineManager, s.memory.throughAPI = *baselineManager, *throughAPI
	if *throughAPI < 3 {
		fmt.Fprintln(os.Stderr, "bench: -memory-through-api: the copies need one custom resource of each kind stored through kube-apiserver")
		os.Exit(2)
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
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
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
	// The report is rewritten after every section, so that a section that fails keeps the others.
	write := func() error {
		r.finished = time.Now()
		return os.WriteFile(out, []byte(r.markdown()), 0o644)
	}

	if s.sections["handlers"] {
		logf("handlers over HTTPS against a trivial stdlib handler")
		if r.handlers, err = runHandlers(ctx, s.handlers, root, workDir); err != nil {
			return fmt.Errorf("handlers: %w", err)
		}
		if err := write(); err != nil {
			return err
		}
	}
	if !s.sections["admission"] && !s.sections["convergence"] && !s.sections["conversion"] && !s.sections["memory"] && !s.sections["start"] && !s.sections["hostile"] {
		fmt.Print(r.markdown())
		return nil
	}

	logf("starting the control plane")
	c, err := startCluster(ctx, workDir)
	if err != nil {
		return err
	}
	var m *managerProcess
	defer func() {
		if m != nil {
			err = errors.Join(err, m.stop())
		}
		err = errors.Join(err, c.stop())
	}()
	mf := managerFlags{binary: managerBinary, logPath: filepath.Join(filepath.Dir(out), "manager.log")}
	_ = os.Remove(mf.logPath)
	smp, err := readSamples(root)
	if err != nil {
		return err
	}

	if s.sections["admission"] {
		// With the controllers idle, as the other variants have none.
		if err := c.holdLease(ctx); err != nil {
			return err
		}
		if m, err = c.startManager(mf); err != nil {
			return err
		}
		r.startups = append(r.startups, m.servingAfter)
		sample, err := readSampleMap(filepath.Join(root, "config", "samples", "auth_v1_welcome.yaml"))
		if err != nil {
			return err
		}
		logf("admission through the API server: webhooks, bare CRD, VAP, VAP+MAP, trivial webhooks")
		if r.admission, err = runAdmission(ctx, c, s.admission, sample); err != nil {
			return fmt.Errorf("admission: %w", err)
		}
		if err := write(); err != nil {
			return err
		}
	}

	if s.sections["convergence"] {
		if m != nil {
			err, m = m.stop(), nil
			if err != nil {
				return err
			}
		}
		logf("convergence: %d objects of each kind, operator against a plain client, %d rounds", s.convergence.perKind, s.convergence.rounds)
		var startups []time.Duration
		r.convergence, m, startups, err = runConvergence(ctx, c, mf, s.convergence, smp, logf)
		r.startups = append(r.startups, startups...)
		if err != nil {
			return fmt.Errorf("convergence: %w", err)
		}
		if err := write(); err != nil {
			return err
		}
	}

	if s.sections["conversion"] {
		if m != nil {
			err, m = m.stop(), nil
			if err != nil {
				return err
			}
		}
		var startups []time.Duration
		r.conversion, startups, err = runConversion(ctx, c, mf, s.conversion, smp, logf)
		r.startups = append(r.startups, startups...)
		if err != nil {
			return fmt.Errorf("conversion: %w", err)
		}
		if err := write(); err != nil {
			return err
		}
	}

	if s.sections["memory"] {
		// New leaders, one at a time: no other manager runs meanwhile.
		if m != nil {
			err, m = m.stop(), nil
			if err != nil {
				return err
			}
		}
		if err := c.releaseLease(ctx, false); err != nil {
			return err
		}
		if s.memory.baselineManager != "" && !filepath.IsAbs(s.memory.baselineManager) {
			s.memory.baselineManager = filepath.Join(root, s.memory.baselineManager)
		}
		logf("memory: new leaders with up to %d custom resources stored", s.memory.steps[len(s.memory.steps)-1])
		r.memory, err = runMemory(ctx, c, mf, smp, s.memory, filepath.Join(filepath.Dir(out), "manager-heap.pprof"), logf)
		if err != nil {
			return fmt.Errorf("memory: %w", err)
		}
		if err := write(); err != nil {
			return err
		}
	}
	if s.sections["start"] || s.sections["hostile"] {
		if m == nil {
			if err := c.holdLease(ctx); err != nil {
				return err
			}
			if m, err = c.startManager(mf); err != nil {
				return err
			}
			r.startups = append(r.startups, m.servingAfter)
		}
		if err := c.releaseLease(ctx, true); err != nil {
			return err
		}
	}
	if s.sections["hostile"] {
		baseline := s.hostile.baselineManager
		if baseline != "" && !filepath.IsAbs(baseline) {
			s.hostile.baselineManager = filepath.Join(root, baseline)
		}
		r.hostile, m, err = runHostile(ctx, c, m, mf, s.hostile, logf)
		if err != nil {
			return fmt.Errorf("hostile: %w", err)
		}
		if err := write(); err != nil {
			return err
		}
	}
	if s.sections["start"] {
		logf("certificate swap")
		if r.certSwap, err = runCertificateSwap(c, s.certSwaps); err != nil {
			return fmt.Errorf("certificate swap: %w", err)
		}
		if err := write(); err != nil {
			return err
		}
	}
	fmt.Print(r.markdown())
	logf("wrote %s", out)
	return nil
}

func readSampleMap(path string) (map[string]any, error) {
	data, err := readSampleJSON(path)
	if err != nil {
		return nil, err
	}
	var sample map[string]any
	return sample, yaml.Unmarshal(data, &sample)
}
