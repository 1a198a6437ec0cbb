package benchmarks

// Peer "tracer": this repository's package, through its package-level API
// and default tracer, as application code uses it. On: tracer.Start with
// default settings, writing to a real file. Off: the default tracer not
// started, so every call is one atomic load and a no-op.

import (
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gotracer/tracer"
)

func init() {
	register(&peer{
		name:  "tracer",
		modes: []string{modeOn, modeOff, modeSat},
		start: startTracer,
		loops: map[string]func(*testing.B){
			scSpan:             func(b *testing.B) { tracerLoop(b, 1, tracerSpan) },
			scSpanArgs:         func(b *testing.B) { tracerLoop(b, 1, tracerSpanArgs) },
			scNested:           func(b *testing.B) { tracerLoop(b, 3, tracerNested) },
			scSpanParallel:     func(b *testing.B) { tracerParallel(b, 1, tracerSpan) },
			scSpanArgsParallel: func(b *testing.B) { tracerParallel(b, 1, tracerSpanArgs) },
			scNestedParallel:   func(b *testing.B) { tracerParallel(b, 3, tracerNested) },
			scCounter:          func(b *testing.B) { tracerLoop(b, 1, tracerCounter) },
			scInstant:          func(b *testing.B) { tracerLoop(b, 1, tracerInstant) },
		},
	})
}

// modeSat is the tracer's saturated mode, described above tracerChunk.
const modeSat = "sat"

// tracerMode is the mode of the running tracer benchmark.
var tracerMode string

func startTracer(b *testing.B, sc, mode string) func(*testing.B) {
	if tracer.Default() != nil {
		b.Fatal("default tracer already running")
	}
	tracerMode = mode
	if mode == modeOff {
		return nil
	}
	path := filepath.Join(tempDir, "tracer-"+sanitize(b.Name())+".json")
	if err := tracer.Start(path); err != nil {
		b.Fatal(err)
	}
	warmTracerRings()
	if err := tracer.Flush(); err != nil {
		b.Fatal(err)
	}
	t := tracer.Default()
	before := t.Stats()
	return func(b *testing.B) {
		after := t.Stats()
		if err := tracer.Stop(); err != nil {
			b.Error(err)
		}
		reportDropped(b, after.Dropped-before.Dropped)
		removeQuietly(path)
	}
}

// warmTracerRings records a few events from many goroutines so every P has
// its lane before the clock starts: a lane is made once per P, on the
// first event recorded there.
func warmTracerRings() {
	var wg sync.WaitGroup
	for i := 0; i < 4*runtime.GOMAXPROCS(0); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 20; j++ {
				tracer.Span("warm-up")()
				runtime.Gosched()
			}
		}()
	}
	wg.Wait()
}

//go:noinline
func tracerSpan(i int) { defer tracer.Span("span")() }

//go:noinline
func tracerSpanArgs(i int) {
	defer tracer.Span("span", tracer.String(argKey, argVal), tracer.Int(argNKey, i))()
}

//go:noinline
func tracerNested(i int) {
	defer tracer.Span("outer")()
	tracerNested2(i)
}

//go:noinline
func tracerNested2(i int) {
	defer tracer.Span("middle")()
	tracerNested3(i)
}

//go:noinline
func tracerNested3(i int) { defer tracer.Span("inner")() }

//go:noinline
func tracerCounter(i int) { tracer.Counter("queue", tracer.Int("depth", i&1023)) }

//go:noinline
func tracerInstant(i int) { tracer.Instant("tick") }

// The tracer records an event in tens of nanoseconds and encodes it in
// about as many again, so a loop that does nothing but record outruns the
// flusher: with default settings the buffers fill within a few
// milliseconds and from then on the recording goroutines encode for the
// flusher or wait for it (the core's assist.go). A plain tight loop would
// then measure recording plus encoding and writing, not the recording
// call. So in mode "on" the loops keep the buffers from filling and charge
// the tracer the CPU that takes:
//
//   - Single-threaded: every tracerChunk events the loop stops the clock
//     and flushes. On this 2-core machine the background flusher runs on
//     the core the benchmark leaves idle, so its work does not slow the
//     recording goroutine, and leaving it off the clock is right.
//   - Under b.RunParallel every core is busy, so nothing is free to flush:
//     the goroutines flush with the clock running. Every tracerChunk events
//     a goroutine flushes unless another one is flushing at that moment
//     (that flush drains every lane); once it has 2*tracerChunk events
//     unflushed it waits for a flush. Encoding and writing are then in
//     ns/op, as they are for a saturated program that keeps every event.
//     rec-ns/op, reported alongside, leaves the flushes out (see
//     tracerParallel).
//
// Mode "sat" (saturated) is the plain tight loop with default settings and
// nothing else: the producers outrun the flusher and help it or wait for
// it, so its ns/op is recording, encoding and writing together. dropped/op
// shows the share of events lost, which at default settings should be 0
// while the disk keeps up. cmd/tightloop measures the same end to end,
// file closed.
const tracerChunk = 512

// tracerLoop runs op b.N times, flushing off the clock every tracerChunk
// events in mode "on".
func tracerLoop(b *testing.B, eventsPerOp int, op func(int)) {
	every := 1 << 62
	if tracerMode == modeOn {
		every = tracerChunk / eventsPerOp
	}
	for i := 0; i < b.N; i++ {
		if i%every == every-1 {
			b.StopTimer()
			if err := tracer.Flush(); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		op(i)
	}
}

// tracerParallel runs op under b.RunParallel, flushing on the clock in mode
// "on" as described above. It also reports rec-ns/op: the time the
// goroutines spent recording, flushes left out, summed and divided by
// b.N and by the number of goroutines, which is what ns/op would be if the
// flushing were done elsewhere, as it is in the single-threaded scenarios.
// For the other peers, which have nothing to flush, ns/op is that figure.
func tracerParallel(b *testing.B, eventsPerOp int, op func(int)) {
	every := 1 << 62
	if tracerMode == modeOn {
		every = tracerChunk / eventsPerOp
	}
	var flushing atomic.Bool
	var recording atomic.Int64 // ns, all goroutines
	var goroutines atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		goroutines.Add(1)
		i, pending := 0, 0
		var rec time.Duration
		t0 := time.Now()
		for pb.Next() {
			if pending >= every {
				var err error
				if flushing.CompareAndSwap(false, true) {
					rec += time.Since(t0)
					err = tracer.Flush()
					flushing.Store(false)
					pending = 0
					t0 = time.Now()
				} else if pending >= 2*every {
					rec += time.Since(t0)
					err = tracer.Flush() // waits for the running flush
					pending = 0
					t0 = time.Now()
				}
				if err != nil {
					b.Error(err)
					return
				}
			}
			op(i)
			i++
			pending++
		}
		rec += time.Since(t0)
		recording.Add(int64(rec))
	})
	if tracerMode == modeOn {
		b.ReportMetric(float64(recording.Load())/float64(b.N)/float64(goroutines.Load()), "rec-ns/op")
	}
}
