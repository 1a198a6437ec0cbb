package benchmarks

// Peer "mutex": the baseline the tracer improves on, the C++ Timer design
// of shared/reference/chrome-tracing-cpp-timer.txt ported to Go in
// internal/mutextrace: two monotonic clock reads, then one global mutex and
// an append to one global slice per event, encoded only at exit. It has no
// off state (the C++ design has none).
//
// Its memory grows with every event. Before each benchmark round the slice
// is given room for all of the round's events, with its pages already
// mapped, and it is released after the round: the loop then measures the
// baseline at its best, appending into warm memory. A slice that grows as
// it goes, as the C++ vector does, costs 900-1800 ns/op on this VM
// instead, nearly all of it page faults on the fresh memory of each
// growth, which would make the comparison meaningless.

import (
	"testing"

	"github.com/gotracer/tracer/benchmarks/internal/mutextrace"
)

func init() {
	register(&peer{
		name:  "mutex",
		modes: []string{modeOn},
		start: func(b *testing.B, sc, mode string) func(*testing.B) {
			mutextrace.Reset()
			events, args := b.N, 0
			switch sc {
			case scNested, scNestedParallel:
				events = 3 * b.N
			case scSpanArgs, scSpanArgsParallel:
				args = 2 * b.N
			case scCounter:
				args = b.N
			}
			mutextrace.Reserve(events, args)
			return func(*testing.B) { mutextrace.Reset() }
		},
		loops: map[string]func(*testing.B){
			scSpan:             func(b *testing.B) { intLoop(b, mutexSpan) },
			scSpanArgs:         func(b *testing.B) { intLoop(b, mutexSpanArgs) },
			scNested:           func(b *testing.B) { intLoop(b, mutexNested) },
			scSpanParallel:     func(b *testing.B) { intParallel(b, mutexSpan) },
			scSpanArgsParallel: func(b *testing.B) { intParallel(b, mutexSpanArgs) },
			scNestedParallel:   func(b *testing.B) { intParallel(b, mutexNested) },
			scCounter:          func(b *testing.B) { intLoop(b, mutexCounter) },
			scInstant:          func(b *testing.B) { intLoop(b, mutexInstant) },
		},
	})
}

//go:noinline
func mutexSpan(i int) {
	t := mutextrace.Start("span")
	defer t.Stop()
}

//go:noinline
func mutexSpanArgs(i int) {
	t := mutextrace.Start("span", mutextrace.String(argKey, argVal), mutextrace.Int(argNKey, i))
	defer t.Stop()
}

//go:noinline
func mutexNested(i int) {
	t := mutextrace.Start("outer")
	defer t.Stop()
	mutexNested2(i)
}

//go:noinline
func mutexNested2(i int) {
	t := mutextrace.Start("middle")
	defer t.Stop()
	mutexNested3(i)
}

//go:noinline
func mutexNested3(i int) {
	t := mutextrace.Start("inner")
	defer t.Stop()
}

//go:noinline
func mutexCounter(i int) { mutextrace.Counter("queue", mutextrace.Int("depth", i&1023)) }

//go:noinline
func mutexInstant(i int) { mutextrace.Instant("tick") }
