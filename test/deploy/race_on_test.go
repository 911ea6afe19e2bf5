//go:build race

package deploy

// raceEnabled says whether this test binary runs with the race detector.
const raceEnabled = true
