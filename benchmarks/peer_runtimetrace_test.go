package benchmarks

// Peer "runtime/trace", the standard library's execution tracer, in its two
// user-annotation forms:
//
//   - rtrace-region: defer trace.StartRegion(ctx, name).End()
//   - rtrace-task:   ctx, task := trace.NewTask(ctx, name); defer task.End()
//
// On: trace.Start(io.Discard) running, so the cost of the runtime's own
// buffering and encoding is in, but no disk. Off: the execution tracer not
// started. Regions and tasks take no args, so the args scenario adds two
// trace.Log calls inside the span, formatting the int with strconv as a
// user would. The counter scenario is trace.Log of the formatted value and
// the instant is trace.Log of a fixed message: runtime/trace has no counter
// or instant events, and Log is the closest. The task form runs only the
// span scenarios; its counter and instant would be the same Log calls.

import (
	"context"
	"io"
	"runtime/trace"
	"strconv"
	"testing"
)

func init() {
	register(&peer{
		name:  "rtrace-region",
		modes: []string{modeOn, modeOff},
		start: startRuntimeTrace,
		loops: map[string]func(*testing.B){
			scSpan:             func(b *testing.B) { intLoop(b, regionSpan) },
			scSpanArgs:         func(b *testing.B) { intLoop(b, regionSpanArgs) },
			scNested:           func(b *testing.B) { intLoop(b, regionNested) },
			scSpanParallel:     func(b *testing.B) { intParallel(b, regionSpan) },
			scSpanArgsParallel: func(b *testing.B) { intParallel(b, regionSpanArgs) },
			scNestedParallel:   func(b *testing.B) { intParallel(b, regionNested) },
			scCounter:          func(b *testing.B) { intLoop(b, rtraceCounter) },
			scInstant:          func(b *testing.B) { intLoop(b, rtraceInstant) },
		},
	})
	register(&peer{
		name:  "rtrace-task",
		modes: []string{modeOn, modeOff},
		start: startRuntimeTrace,
		loops: map[string]func(*testing.B){
			scSpan:             func(b *testing.B) { intLoop(b, taskSpan) },
			scSpanArgs:         func(b *testing.B) { intLoop(b, taskSpanArgs) },
			scNested:           func(b *testing.B) { intLoop(b, taskNested) },
			scSpanParallel:     func(b *testing.B) { intParallel(b, taskSpan) },
			scSpanArgsParallel: func(b *testing.B) { intParallel(b, taskSpanArgs) },
			scNestedParallel:   func(b *testing.B) { intParallel(b, taskNested) },
		},
	})
}

func startRuntimeTrace(b *testing.B, sc, mode string) func(*testing.B) {
	if trace.IsEnabled() {
		b.Fatal("runtime/trace already running")
	}
	if mode == modeOff {
		return nil
	}
	if err := trace.Start(io.Discard); err != nil {
		b.Fatal(err)
	}
	return func(*testing.B) { trace.Stop() }
}

var bg = context.Background()

//go:noinline
func regionSpan(i int) { defer trace.StartRegion(bg, "span").End() }

//go:noinline
func regionSpanArgs(i int) {
	defer trace.StartRegion(bg, "span").End()
	trace.Log(bg, argKey, argVal)
	trace.Log(bg, argNKey, strconv.Itoa(i))
}

//go:noinline
func regionNested(i int) {
	defer trace.StartRegion(bg, "outer").End()
	regionNested2(i)
}

//go:noinline
func regionNested2(i int) {
	defer trace.StartRegion(bg, "middle").End()
	regionNested3(i)
}

//go:noinline
func regionNested3(i int) { defer trace.StartRegion(bg, "inner").End() }

//go:noinline
func rtraceCounter(i int) { trace.Log(bg, "queue.depth", strconv.Itoa(i&1023)) }

//go:noinline
func rtraceInstant(i int) { trace.Log(bg, "instant", "tick") }

//go:noinline
func taskSpan(i int) {
	_, task := trace.NewTask(bg, "span")
	defer task.End()
}

//go:noinline
func taskSpanArgs(i int) {
	ctx, task := trace.NewTask(bg, "span")
	defer task.End()
	trace.Log(ctx, argKey, argVal)
	trace.Log(ctx, argNKey, strconv.Itoa(i))
}

//go:noinline
func taskNested(i int) {
	ctx, task := trace.NewTask(bg, "outer")
	defer task.End()
	taskNested2(ctx, i)
}

//go:noinline
func taskNested2(ctx context.Context, i int) {
	ctx, task := trace.NewTask(ctx, "middle")
	defer task.End()
	taskNested3(ctx, i)
}

//go:noinline
func taskNested3(ctx context.Context, i int) {
	_, task := trace.NewTask(ctx, "inner")
	defer task.End()
}
