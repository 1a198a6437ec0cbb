package benchmarks

// Peer "floor": the least any span can cost. A span needs two readings of
// the monotonic clock, so the floor span is two time.Since calls and
// nothing else, in the same shape as every other peer's span (a call to a
// function that defers the end of the span), so the loop, call and defer
// overhead is the same for all. Counters and instants need one reading, so
// their floor is one time.Since call. The readings are summed into a
// per-goroutine variable so the compiler cannot drop them and parallel
// goroutines do not share a cache line. There is no off mode: the floor's
// "on" row is what every peer's "on" row is measured against.

import (
	"testing"
	"time"
)

func init() {
	register(&peer{
		name:  "floor",
		modes: []string{modeOn},
		loops: map[string]func(*testing.B){
			scSpan:             func(b *testing.B) { floorLoop(b, floorSpan) },
			scSpanArgs:         func(b *testing.B) { floorLoop(b, floorSpan) },
			scNested:           func(b *testing.B) { floorLoop(b, floorNested) },
			scSpanParallel:     func(b *testing.B) { floorParallel(b, floorSpan) },
			scSpanArgsParallel: func(b *testing.B) { floorParallel(b, floorSpan) },
			scNestedParallel:   func(b *testing.B) { floorParallel(b, floorNested) },
			scCounter:          func(b *testing.B) { floorLoop(b, floorPoint) },
			scInstant:          func(b *testing.B) { floorLoop(b, floorPoint) },
		},
	})
}

var (
	floorBase = time.Now()
	floorSink time.Duration
)

//go:noinline
func floorSpan(acc *time.Duration) {
	start := time.Since(floorBase)
	defer func() { *acc += time.Since(floorBase) - start }()
}

//go:noinline
func floorNested(acc *time.Duration) {
	start := time.Since(floorBase)
	defer func() { *acc += time.Since(floorBase) - start }()
	floorNested2(acc)
}

//go:noinline
func floorNested2(acc *time.Duration) {
	start := time.Since(floorBase)
	defer func() { *acc += time.Since(floorBase) - start }()
	floorSpan(acc)
}

//go:noinline
func floorPoint(acc *time.Duration) { *acc += time.Since(floorBase) }

func floorLoop(b *testing.B, op func(*time.Duration)) {
	var acc time.Duration
	for i := 0; i < b.N; i++ {
		op(&acc)
	}
	floorSink += acc
}

func floorParallel(b *testing.B, op func(*time.Duration)) {
	b.RunParallel(func(pb *testing.PB) {
		var acc time.Duration
		for pb.Next() {
			op(&acc)
		}
		if acc == 42 { // never true; keeps acc alive without sharing it
			println(acc)
		}
	})
}
