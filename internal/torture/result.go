//go:build linux

package main

import (
	"errors"
	"reflect"
	"strings"

	"github.com/gotracer/tracer"
)

// childResult is what a child reports once everything is closed (its R
// line): what it recorded and what the tracers said about it.
type childResult struct {
	Pid     int
	Tracers []tracerResult

	// Process state before the tracers started (after the untraced run)
	// and after they closed.
	Before, After procState
	// Live heap after the workload stopped, was flushed and sat idle, for
	// the memory check's idle bound; 0 if not measured.
	IdleHeap uint64
	// BaseHeap is the highest live heap of the untraced run.
	BaseHeap uint64
	// LeakDump is the goroutine dump taken when goroutines did not come
	// back to where they were.
	LeakDump string
	Tmpfs    string // how the disk was filled: "tmpfs" or the fallback
}

// procState is what must come back after Close.
type procState struct {
	Goroutines int
	FDs        []string // what /proc/self/fd links to
	Heap       uint64   // live heap after a GC
}

// tracerResult is one tracer's part of the result.
type tracerResult struct {
	Counts      map[int][numClasses]uint64 // per worker
	Names       map[int]string
	Stats       map[string]uint64 // every field of Stats, by name
	StaleEnds   uint64
	HandleEnds2 uint64
	CloseErr    string
	CloseTook   float64 // seconds
	// Results of the calls the tracer's hooks and the workload made:
	// "String Flush: ErrReentrant" -> how many times.
	Calls map[string]int
	// Errors the handler got, distinct, at most a few dozen.
	HandlerErrors []string
	// DumpOverLive is what WriteFile onto tracer 0's live path returned
	// ("" if not tried).
	DumpOverLive string
	Cycles       int // Start/Stop cycles done
}

// statsMap returns every field of st by name. Reading them by reflection
// lets the harness run before and after a field is added (Deleted, the
// events of files WithMaxFiles removed).
func statsMap(st tracer.Stats) map[string]uint64 {
	m := map[string]uint64{}
	v := reflect.ValueOf(st)
	for i := 0; i < v.NumField(); i++ {
		if f := v.Field(i); f.CanUint() {
			m[v.Type().Field(i).Name] = f.Uint()
		}
	}
	return m
}

// addStats adds b's counts to a's.
func addStats(a, b map[string]uint64) map[string]uint64 {
	if a == nil {
		a = map[string]uint64{}
	}
	for k, v := range b {
		a[k] += v
	}
	return a
}

// errKind names an error returned by the tracer for the Calls tally.
func errKind(err error) string {
	switch {
	case err == nil:
		return "nil"
	case errors.Is(err, tracer.ErrReentrant):
		return "ErrReentrant"
	case errors.Is(err, tracer.ErrTimeout):
		return "ErrTimeout"
	case errors.Is(err, tracer.ErrClosed):
		return "ErrClosed"
	case errors.Is(err, tracer.ErrFileInUse):
		return "ErrFileInUse"
	}
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 120 {
		s = s[:120] + "..."
	}
	return "error: " + s
}
