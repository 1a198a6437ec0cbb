//go:build !race

// Package race reports whether the race detector is on, for tests whose
// allocation counts it changes.
package race

// Enabled is true when the program was built with -race.
const Enabled = false
