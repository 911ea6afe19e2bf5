//go:build !race

package main

// raceEnabled says whether this test binary runs with the race detector.
const raceEnabled = false
