package tracer

import (
	"bytes"
	"fmt"
	"math"
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
// random flushes and spans made old, on a plain file, with lanes, or
// rotated. Every tee's trace must stand alone: strict JSON, every
// track's B and E nested, every async operation paired, every flow step
// and end after its start, every flow event in a slice of its track,
// every goroutine's track named. TRACER_TEE_SEED repeats a seed.
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
	mode := rng.IntN(3)
	switch mode {
	case 1:
		opts = append(opts, WithLanes())
	case 2:
		opts = append(opts, WithMaxFileSize(minFileSize))
	}
	tr, err := New(filepath.Join(dir, "trace.json"), opts...)
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
	var done [][]byte
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
				done = append(done, tees[i].buf.Bytes())
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
		done = append(done, l.buf.Bytes())
	}
	require.NotEmpty(t, done)

	for i, trace := range done {
		t.Run(fmt.Sprintf("tee %d", i), func(t *testing.T) {
			checkStandsAlone(t, trace, true)
			if i == 0 {
				path := filepath.Join(dir, "tee.json")
				require.NoError(t, os.WriteFile(path, trace, 0o644))
				importInHeavyRun(t, path)
			}
		})
	}
}

// checkStandsAlone checks a tee's trace as TestTeeRandom says; named: every
// track with events must be named (goroutines are tracks: no lanes).
func checkStandsAlone(t *testing.T, trace []byte, named bool) {
	evs := tracecheck.Parse(t, trace)
	tracks := tracecheck.Tracks(t, evs)
	tracecheck.Async(t, evs)
	// A B still open at the end is a slice to the end, as the viewers draw it.
	open := map[uint64][]tracecheck.Event{}
	names := map[uint64]bool{}
	for _, e := range evs {
		switch e.Ph {
		case "B":
			open[e.Tid] = append(open[e.Tid], e)
		case "E":
			open[e.Tid] = open[e.Tid][:len(open[e.Tid])-1]
		case "M":
			if e.Name == "thread_name" {
				names[e.Tid] = true
			}
		}
	}
	for tid, bs := range open {
		for _, b := range bs {
			tracks[tid] = append(tracks[tid], tracecheck.Slice{Name: b.Name, Tid: tid, Start: b.Ts, End: math.Inf(1)})
		}
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
}
