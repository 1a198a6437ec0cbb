package tracer

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/gotracer/tracer/internal/tracecheck"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTeeRandom attaches and stops tees at random moments while
// goroutines record a random mix of what programs record (nested spans,
// LongSpans, instants, async operations, flows from goroutine to
// goroutine, SpanHandles ended here or elsewhere, goroutine names), with
// random flushes and spans made old, on a plain file, with lanes,
// rotated, or in a flight recorder. Every tee's trace must stand alone
// and be its window: strict JSON, every track's B and E nested, every
// async operation paired, nothing open at its end, every flow step and
// end after its start, every flow event in a slice of its track, every
// goroutine's track named, every event inside the window, the spans that
// began before it clipped to its start (see checkWindow).
// TRACER_TEE_SEED repeats a seed.
func TestTeeRandom(t *testing.T) {
	t.Parallel()
	seed := rand.Uint64()
	if s := os.Getenv("TRACER_TEE_SEED"); s != "" {
		var err error
		seed, err = strconv.ParseUint(s, 10, 64)
		require.NoError(t, err)
	}
	for i := range 6 {
		seed := seed + uint64(i)
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			t.Logf("seed %d (TRACER_TEE_SEED=%d repeats it)", seed, seed)
			teeRandom(t, seed)
		})
	}
}

func teeRandom(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 1))
	dir := t.TempDir()
	opts := []Option{withClock(newTestClock())}
	mode := rng.IntN(4)
	switch mode {
	case 1:
		opts = append(opts, WithLanes())
	case 2:
		opts = append(opts, WithMaxFileSize(minFileSize))
	}
	var tr *Tracer
	var err error
	if mode == 3 {
		var fr *FlightRecorder
		fr, err = NewFlightRecorder(FlightRecorderConfig{MaxEvents: 1 << 16}, opts...)
		if fr != nil {
			tr = fr.Tracer()
		}
	} else {
		tr, err = New(filepath.Join(dir, "trace.json"), opts...)
	}
	require.NoError(t, err)

	// Flows and SpanHandles handed between goroutines.
	var mu sync.Mutex
	var flows []Flow
	var handles []SpanHandle
	take := func(r *rand.Rand) (f Flow, h SpanHandle, okF, okH bool) {
		mu.Lock()
		defer mu.Unlock()
		if len(flows) > 0 && r.IntN(2) == 0 {
			i := r.IntN(len(flows))
			f = flows[i]
			flows = slices.Delete(flows, i, i+1)
			okF = true
		}
		if len(handles) > 0 && r.IntN(2) == 0 {
			i := r.IntN(len(handles))
			h = handles[i]
			handles = slices.Delete(handles, i, i+1)
			okH = true
		}
		return
	}

	var wg sync.WaitGroup
	for g := range 2 + rng.IntN(4) {
		r := rand.New(rand.NewPCG(seed, uint64(10+g)))
		wg.Go(func() {
			if r.IntN(2) == 0 {
				tr.SetGoroutineName(fmt.Sprintf("worker %d", g))
			}
			var ends []func(...Arg)
			var ops []Async
			for step := range 400 {
				switch r.IntN(12) {
				case 0, 1, 2:
					if len(ends) < 6 {
						ends = append(ends, tr.Span("span", Int("step", step)))
					}
				case 3, 4:
					if n := len(ends); n > 0 {
						ends[n-1]()
						ends = ends[:n-1]
					}
				case 5:
					if len(ends) < 6 {
						ends = append(ends, tr.LongSpan("long"))
					}
				case 6:
					tr.Instant("instant")
				case 7:
					if len(ops) < 3 {
						ops = append(ops, tr.AsyncBegin("op", Category("ops")))
					} else {
						ops[0].End()
						ops = ops[1:]
					}
				case 8:
					if len(ends) == 0 {
						break // a flow event belongs in a slice
					}
					f := tr.FlowBegin("flow")
					mu.Lock()
					flows = append(flows, f)
					mu.Unlock()
				case 9:
					f, h, okF, okH := take(r)
					if okF && len(ends) == 0 {
						mu.Lock()
						flows = append(flows, f) // for a goroutine in a span
						mu.Unlock()
						okF = false
					}
					if okF {
						if r.IntN(3) == 0 {
							f.Step()
							mu.Lock()
							flows = append(flows, f)
							mu.Unlock()
						} else {
							f.End()
						}
					}
					if okH {
						h.End()
					}
				case 10:
					parent := tr.StartSpan("handle")
					if r.IntN(2) == 0 {
						parent.End()
						break
					}
					mu.Lock()
					handles = append(handles, parent)
					mu.Unlock()
				case 11:
					mu.Lock()
					if len(handles) > 0 {
						c := handles[r.IntN(len(handles))].StartChild("child")
						handles = append(handles, c)
					}
					mu.Unlock()
				}
			}
			for i := len(ends) - 1; i >= 0; i-- {
				ends[i]()
			}
			for _, op := range ops {
				op.End()
			}
		})
	}

	// The controller: tees attached and stopped, flushes, spans made old.
	type live struct {
		te  *Tee
		buf *bytes.Buffer
	}
	var tees []live
	var done []live
	for range 40 {
		switch rng.IntN(5) {
		case 0, 1:
			if len(tees) < 3 {
				buf := new(bytes.Buffer)
				te, err := tr.Tee(buf)
				require.NoError(t, err)
				tees = append(tees, live{te, buf})
			}
		case 2:
			if len(tees) > 0 {
				i := rng.IntN(len(tees))
				require.NoError(t, tees[i].te.Stop())
				done = append(done, tees[i])
				tees = append(tees[:i], tees[i+1:]...)
			}
		case 3:
			require.NoError(t, tr.Flush())
		case 4:
			ageAll(tr)
			require.NoError(t, tr.Flush())
		}
	}
	wg.Wait()
	func() {
		defer tr.Span("cleanup")()
		for _, f := range flows {
			f.End()
		}
	}()
	for _, h := range handles {
		h.End()
	}
	if rng.IntN(2) == 0 { // the rest ended by Close
		for _, l := range tees {
			require.NoError(t, l.te.Stop())
		}
	}
	require.NoError(t, tr.Close())
	for _, l := range tees {
		require.NoError(t, l.te.Stop())
		done = append(done, l)
	}
	require.NotEmpty(t, done)

	for i, l := range done {
		t.Run(fmt.Sprintf("tee %d", i), func(t *testing.T) {
			trace := l.buf.Bytes()
			evs := checkStandsAlone(t, trace, true)
			from, to := teeWindow(tr, l.te)
			checkWindow(t, evs, from, to)
			if i == 0 {
				path := filepath.Join(dir, "tee.json")
				require.NoError(t, os.WriteFile(path, trace, 0o644))
				importInHeavyRun(t, path)
			}
		})
	}
}

// teeWindow returns te's window, from its start to its end, in the
// microseconds of tr's trace.
func teeWindow(tr *Tracer, te *Tee) (from, to float64) {
	us := func(ns int64) float64 { return float64(ns-tr.flusher.base) / 1e3 }
	return us(te.s.from.Load()), us(te.s.to.Load())
}

// checkWindow checks that a tee's trace is its window, from to to (in
// the trace's microseconds), as tracer cut cuts one: every event inside
// it, but for the spans that began before it, which begin at most a
// nanosecond a level (and one more) before it, outermost first, a
// nanosecond apart on each track, so that both viewers nest them as they
// were (see attachedTee.clips).
func checkWindow(t *testing.T, evs []tracecheck.Event, from, to float64) {
	require.Less(t, from, to)
	ns := tracecheck.Nanos
	clipped := map[uint64][]int64{} // the starts of slices before the window, by track
	levels := map[uint64]int{}      // and of the async slices of its goroutine, which took a level each when the window began
	for _, e := range evs {
		if e.Ph == "M" || e.Ph == "C" && e.Ts == 0 { // the drop counter starts at ts 0
			continue
		}
		end := e.Ts + e.Dur
		assert.LessOrEqual(t, ns(end), ns(to), "%s %q on track %d at %v+%v, after the window's end %v", e.Ph, e.Name, e.Tid, e.Ts, e.Dur, to)
		if ns(e.Ts) < ns(from) {
			switch e.Ph {
			case "B", "X":
				clipped[e.Tid] = append(clipped[e.Tid], ns(e.Ts))
				levels[e.Tid]++
			case "b":
				levels[e.Tid]++
			case "s":
			default:
				assert.Fail(t, "before the window", "%s %q on track %d at %v, before the window's start %v", e.Ph, e.Name, e.Tid, e.Ts, from)
			}
		}
	}
	for tid, starts := range clipped {
		slices.Sort(starts)
		for i, s := range starts {
			assert.GreaterOrEqual(t, s, ns(from)-int64(levels[tid])-1, "track %d: a span clipped to more than a nanosecond a level before the window (%v)", tid, from)
			if i > 0 {
				assert.Less(t, starts[i-1], s, "track %d: two spans clipped to one time, which the viewers may nest upside down", tid)
			}
		}
	}
}

// checkStandsAlone checks a tee's trace as TestTeeRandom says, and
// returns its events; named: every track with events must be named.
func checkStandsAlone(t *testing.T, trace []byte, named bool) []tracecheck.Event {
	evs := tracecheck.Parse(t, trace)
	tracks := tracecheck.Tracks(t, evs)
	tracecheck.Async(t, evs)
	open := map[uint64]int{}
	names := map[uint64]bool{}
	for _, e := range evs {
		switch e.Ph {
		case "B":
			open[e.Tid]++
		case "E":
			open[e.Tid]--
		case "M":
			if e.Name == "thread_name" {
				names[e.Tid] = true
			}
		}
	}
	for tid, n := range open {
		assert.Zero(t, n, "track %d: spans still open at the tee's end, which ends them", tid)
	}
	started := map[string]bool{}
	for _, e := range evs {
		switch e.Ph {
		case "s":
			started[e.ID.String()] = true
			fallthrough
		case "t", "f":
			assert.True(t, started[e.ID.String()], "%s %q (id %s) without its start before it", e.Ph, e.Name, e.ID)
			_, ok := tracecheck.Enclosing(tracks, e.Tid, e.Ts)
			assert.True(t, ok, "%s %q (id %s) at %v in no slice of track %d", e.Ph, e.Name, e.ID, e.Ts, e.Tid)
		}
		if named && e.Ph != "M" && e.Tid != 0 && e.Ph != "C" {
			assert.True(t, names[e.Tid], "%s %q on track %d, which is not named", e.Ph, e.Name, e.Tid)
		}
	}
	return evs
}
