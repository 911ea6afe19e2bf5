package main

import (
	"errors"
	"fmt"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
)

// cleanupStack holds how to stop what run started, so that a failure at any step stops exactly
// what is already running, last started first.
type cleanupStack struct {
	steps []cleanupStep
}

type cleanupStep struct {
	name string
	stop func() error
}

// push records how to stop or remove what name describes.
func (s *cleanupStack) push(name string, stop func() error) {
	s.steps = append(s.steps, cleanupStep{name: name, stop: stop})
}

// run stops everything in reverse order, going on past failures, and returns every error.
func (s *cleanupStack) run() error {
	log := ctrl.Log.WithName("run-local")
	var errs []error
	for i := len(s.steps) - 1; i >= 0; i-- {
		step := s.steps[i]
		begin := time.Now()
		if err := step.stop(); err != nil {
			log.Error(err, "stopping failed", "what", step.name)
			errs = append(errs, fmt.Errorf("stopping %s: %w", step.name, err))
			continue
		}
		log.Info("stopped", "what", step.name, "after", time.Since(begin).Round(time.Millisecond))
	}
	s.steps = nil
	return errors.Join(errs...)
}
