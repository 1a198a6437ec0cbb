// Package benchmarks compares the tracer with every other way a Go program
// can record spans. Each peer_*_test.go file defines one peer: how to turn
// it on and off, and one loop per scenario. This file runs every peer
// through every scenario under one benchmark name per scenario, so the
// results read as
//
//	BenchmarkSpan/peer=tracer/mode=on
//	BenchmarkSpan/peer=otel/mode=off
//
// and cmd/report can pivot them into a table. See README.md.
package benchmarks

import (
	"fmt"
	"os"
	"testing"
)

// The scenarios. Every peer runs the ones it can express; a peer that cannot
// express one (chrometracing has no counters) leaves it out and the report
// shows n/a.
const (
	scSpan             = "Span"             // defer span("span")()
	scSpanArgs         = "SpanArgs"         // the same with a string and an int arg
	scNested           = "Nested"           // three spans nested in three frames
	scSpanParallel     = "SpanParallel"     // scSpan under b.RunParallel
	scSpanArgsParallel = "SpanArgsParallel" // scSpanArgs under b.RunParallel
	scNestedParallel   = "NestedParallel"   // scNested under b.RunParallel
	scCounter          = "Counter"          // one counter sample with one series
	scInstant          = "Instant"          // one thread-scoped instant event
)

// The modes a peer runs in. Peers without an off state (the floor, the
// mutex baseline, chrometracing) run "on" only.
const (
	modeOn  = "on"
	modeOff = "off"
)

// A peer is one way of recording spans.
type peer struct {
	name  string
	modes []string
	// start puts the peer in the given mode before a benchmark round and
	// returns what undoes it. It runs with the timer stopped. May be nil.
	start func(b *testing.B, sc, mode string) (stop func(b *testing.B))
	// loops holds one benchmark loop per scenario the peer can express.
	loops map[string]func(b *testing.B)
}

// peers in the order the report shows them. Each peer file adds itself in
// an init function; peerOrder fixes the order here.
var (
	peers     []*peer
	peerOrder = []string{"tracer", "floor", "mutex", "rtrace-region", "rtrace-task", "otel", "chrometracing"}
)

func register(p *peer) {
	for i, name := range peerOrder {
		if name != p.name {
			continue
		}
		for j, q := range peers {
			if indexOf(q.name) > i {
				peers = append(peers[:j], append([]*peer{p}, peers[j:]...)...)
				return
			}
		}
		peers = append(peers, p)
		return
	}
	panic(fmt.Sprintf("peer %q missing from peerOrder", p.name))
}

func indexOf(name string) int {
	for i, n := range peerOrder {
		if n == name {
			return i
		}
	}
	return len(peerOrder)
}

// runScenario runs every peer that can express scenario sc, in every mode
// it has, as sub-benchmarks peer=NAME/mode=MODE.
func runScenario(b *testing.B, sc string) {
	for _, p := range peers {
		loop := p.loops[sc]
		if loop == nil {
			continue
		}
		for _, mode := range p.modes {
			b.Run("peer="+p.name+"/mode="+mode, func(b *testing.B) {
				b.ReportAllocs()
				var stop func(*testing.B)
				if p.start != nil {
					b.StopTimer()
					stop = p.start(b, sc, mode)
					b.StartTimer()
				}
				b.ResetTimer()
				loop(b)
				b.StopTimer()
				if stop != nil {
					stop(b)
				}
			})
		}
	}
}

func BenchmarkSpan(b *testing.B)             { runScenario(b, scSpan) }
func BenchmarkSpanArgs(b *testing.B)         { runScenario(b, scSpanArgs) }
func BenchmarkNested(b *testing.B)           { runScenario(b, scNested) }
func BenchmarkSpanParallel(b *testing.B)     { runScenario(b, scSpanParallel) }
func BenchmarkSpanArgsParallel(b *testing.B) { runScenario(b, scSpanArgsParallel) }
func BenchmarkNestedParallel(b *testing.B)   { runScenario(b, scNestedParallel) }
func BenchmarkCounter(b *testing.B)          { runScenario(b, scCounter) }
func BenchmarkInstant(b *testing.B)          { runScenario(b, scInstant) }

// The values the scenarios attach as args: one string and one int, the
// int varying with the loop counter so no peer can cache a formatted value.
const (
	argKey  = "file"
	argVal  = "input-0042.json"
	argNKey = "n"
)

// tempDir is a directory for the trace files of this run, removed at exit.
var tempDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "tracer-bench-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	tempDir = dir
	setupChrometracing(dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
