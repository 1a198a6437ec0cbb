//go:build race

package tracer

const raceEnabled = true
