package main

import (
	"fmt"
	"slices"
	"time"
)

// percentile returns the p-th percentile (0 < p <= 100) of samples by the nearest-rank method.
func percentile(samples []time.Duration, p float64) time.Duration {
	if len(samples) == 0 {
		return 0
	}
	sorted := slices.Clone(samples)
	slices.Sort(sorted)
	rank := int(float64(len(sorted))*p/100+0.999999) - 1
	return sorted[max(0, min(rank, len(sorted)-1))]
}

// trials holds one number per trial of a measurement, in the order they were taken.
type trials []float64

// median is the middle trial, or the mean of the two middle ones.
func (t trials) median() float64 {
	if len(t) == 0 {
		return 0
	}
	s := slices.Clone(t)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// spread is the smallest and largest trial.
func (t trials) spread() (lo, hi float64) {
	if len(t) == 0 {
		return 0, 0
	}
	return slices.Min(t), slices.Max(t)
}

// ratio divides trial by trial: the trials of a and b were taken in the same rounds.
func ratio(a, b trials) trials {
	out := make(trials, 0, len(a))
	for i := range min(len(a), len(b)) {
		if b[i] != 0 {
			out = append(out, a[i]/b[i])
		}
	}
	return out
}

// minus subtracts trial from trial, for what a variant adds to a baseline measured in the same round.
func minus(a, b trials) trials {
	out := make(trials, 0, len(a))
	for i := range min(len(a), len(b)) {
		out = append(out, a[i]-b[i])
	}
	return out
}

// ms formats trials of milliseconds as "median [min–max]".
func (t trials) ms() string {
	lo, hi := t.spread()
	return fmt.Sprintf("%.2f ms [%.2f–%.2f]", t.median(), lo, hi)
}

// x formats trials of ratios as "median× [min–max]".
func (t trials) x() string {
	lo, hi := t.spread()
	return fmt.Sprintf("%.2f× [%.2f–%.2f]", t.median(), lo, hi)
}

// format formats trials with a unit and a precision.
func (t trials) format(unit string, digits int) string {
	lo, hi := t.spread()
	return fmt.Sprintf("%.*f%s [%.*f–%.*f]", digits, t.median(), unit, digits, lo, digits, hi)
}

func milliseconds(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
