package tracer

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTimebase checks the conversion of counter readings on anchors made
// up for it: exact at anchors, linear between them, increasing, final
// once made, and the checks that give up on the counter.
func TestTimebase(t *testing.T) {
	defer keepClock()()
	conv := func(tb *timebase, raw uint64) int64 {
		s := slot{num: raw}
		tb.fix(&s)
		return s.at()
	}
	// 2.5 ticks a nanosecond, from tick 1000 at 100 ns.
	steady := func() *timebase {
		tb := &timebase{}
		a := anchor{tick: 1000, ns: 100}
		tb.ring[0], tb.first, tb.n = a, a, 1
		return tb
	}

	t.Run("interpolates", func(t *testing.T) {
		tb := steady()
		require.EqualValues(t, 4100, tb.add(anchor{tick: 11000, ns: 4100}))
		require.EqualValues(t, 8100, tb.add(anchor{tick: 21000, ns: 8100}))
		assert.False(t, tb.failed)
		for _, c := range []struct {
			tick uint64
			want int64
		}{
			{1000, 100}, {1025, 110}, {11000, 4100}, {16000, 6100}, {20999, 8099},
			{500, -100 + 100 + 0}, // before the first anchor: back at its rate (500 ticks = 200 ns)
		} {
			got := conv(tb, c.tick)
			if c.tick == 500 {
				assert.EqualValues(t, 0, got, "clamped at 0: 100 ns - 200 ns")
				continue
			}
			assert.InDelta(t, c.want, got, 1, "tick %d", c.tick)
		}
	})
	t.Run("not before the newest anchor", func(t *testing.T) {
		tb := steady()
		tb.add(anchor{tick: 11000, ns: 4100})
		s := slot{num: 11000}
		tb.fix(&s)
		assert.EqualValues(t, notYet, s.at(), "at the newest anchor: its segment is not known yet")
		tb.add(anchor{tick: 13500, ns: 5100})
		tb.fix(&s)
		assert.EqualValues(t, 4100, s.at())
		// Converted once: a later anchor does not move it.
		tb.add(anchor{tick: 99000, ns: 9100})
		tb.fix(&s)
		assert.EqualValues(t, 4100, s.at())
	})
	t.Run("increasing", func(t *testing.T) {
		tb := steady()
		ns, tick := int64(100), int64(1000)
		for i := 0; i < 600; i++ { // more anchors than the ring holds
			tick += 1000 + int64(i%7)*313
			ns += 400 + int64(i%5)*97
			tb.add(anchor{tick: tick, ns: ns})
		}
		require.False(t, tb.failed)
		prev := int64(math.MinInt64)
		for raw := uint64(1000); raw < uint64(tick); raw += 37 {
			got := conv(tb, raw)
			require.GreaterOrEqual(t, got, prev, "tick %d", raw)
			require.Less(t, got, ns)
			prev = got
		}
	})
	t.Run("the cached segment converts as the search does", func(t *testing.T) {
		tb := steady()
		rng := rand.New(rand.NewPCG(1, 2))
		ns, tick := int64(100), int64(1000)
		for i := 0; i < 600; i++ { // the ring wraps: cached segments are dropped
			tick += 1000 + rng.Int64N(2000)
			ns += 400 + rng.Int64N(500)
			tb.add(anchor{tick: tick, ns: ns})
			for range 20 {
				// Mostly the newest segments, as a pass converts; some
				// older than the ring, some not convertible yet.
				raw := uint64(tick - rng.Int64N(5000))
				if rng.IntN(10) == 0 {
					raw = uint64(rng.Int64N(tick + 1000))
				}
				searched := *tb
				searched.seg = segment{}
				require.Equal(t, conv(&searched, raw), conv(tb, raw), "tick %d after %d anchors", raw, i)
			}
		}
		// A segment cached, then pushed out of the ring by anchors taken
		// while nothing was converted (a writer that held the flusher up):
		// older than every anchor kept, at the long-run rate.
		old := uint64(tick - 1)
		tb.add(anchor{tick: tick + 1000, ns: ns + 400})
		conv(tb, old)
		for i := 0; i < anchors+1; i++ {
			tick += 3000
			ns += 400
			tb.add(anchor{tick: tick, ns: ns})
		}
		searched := *tb
		searched.seg = segment{}
		require.Equal(t, conv(&searched, old), conv(tb, old))
	})
	t.Run("nanotime readings", func(t *testing.T) {
		tb := steady()
		assert.EqualValues(t, 123456, conv(tb, 123456|rawNanotime))
		// With a wide segment cached, readings with a flag set are still
		// no counter readings to convert (see quick).
		tb.add(anchor{tick: 1 << 40, ns: 4e11})
		conv(tb, 2000)
		require.EqualValues(t, 1<<40-1000, tb.seg.width, "the segment of the conversion is cached")
		assert.EqualValues(t, 123456, conv(tb, 123456|rawNanotime))
		assert.EqualValues(t, 789, conv(tb, 789|rawDone))
	})
	for _, c := range []struct {
		name string
		next anchor
	}{
		{"backwards", anchor{tick: 900, ns: 2e6}},
		{"stood still", anchor{tick: 1000, ns: 2e6}},
		{"jumped", anchor{tick: 1000 + 2.5e7*3, ns: 2e7 + 100}}, // 3x the pace
		{"slowed", anchor{tick: 1000 + 2.5e7/2, ns: 2e7 + 100}},
	} {
		t.Run(c.name, func(t *testing.T) {
			storeWord(&counterOn, 1)
			tb := steady()
			tb.add(anchor{tick: 1000 + 2.5e7, ns: 1e7 + 100}) // 10 ms at the right pace
			require.False(t, tb.failed)
			if c.name == "backwards" || c.name == "stood still" {
				tb = steady()
			}
			tb.add(c.next)
			assert.True(t, tb.failed)
			assert.Zero(t, loadAcquire(&counterOn), "the record path reads nanotime from now on")
			// A counter reading past the last anchor still converts.
			s := slot{num: uint64(c.next.tick + 10)}
			tb.fix(&s)
			assert.NotEqualValues(t, notYet, s.at())
		})
	}
	t.Run("a wide anchor is not a failure", func(t *testing.T) {
		// The flusher was descheduled while it read the anchor: its
		// counter reading may be off by up to half its width.
		storeWord(&counterOn, 1)
		tb := steady()
		tb.add(anchor{tick: 1000 + 2.5e7, ns: 1e7 + 100})
		tb.add(anchor{tick: 1000 + 2.5e7*2 + 2.5e6, ns: 2e7 + 100, width: 5e6})
		assert.False(t, tb.failed)
		assert.EqualValues(t, 1, loadAcquire(&counterOn))
	})
	t.Run("steady pace holds", func(t *testing.T) {
		storeWord(&counterOn, 1)
		tb := steady()
		for i := int64(1); i <= 20; i++ {
			// 2.5 ticks a ns, 1 ppm off now and then, 5 ms apart.
			tb.add(anchor{tick: 1000 + i*12_500_000 + i%3*12, ns: 100 + i*5_000_000})
		}
		assert.False(t, tb.failed)
		assert.EqualValues(t, 1, loadAcquire(&counterOn))
	})
}

// TestTimestampsAgreeWithNanotime records spans whose args carry
// nanotime read just before each starts and just after it ends, from
// goroutines that sleep, yield, lock threads and cross GOMAXPROCS changes
// (so they migrate between threads and CPUs), and checks that every
// timestamp in the file lies between the two, to a microsecond, and that
// each goroutine's timestamps never go back. It runs with the clock as
// chosen for this machine, and with nanotime forced from the middle of
// the run on (the path taken when the counter turns out unreliable).
func TestTimestampsAgreeWithNanotime(t *testing.T) {
	for _, forced := range []bool{false, true} {
		name := "chosen clock"
		if forced {
			name = "nanotime from the middle on"
		}
		t.Run(name, func(t *testing.T) {
			defer keepClock()()
			path := filepath.Join(t.TempDir(), "clock.json")
			tr, err := New(path, WithFlushInterval(5*time.Millisecond))
			require.NoError(t, err)
			t.Logf("counter on: %v", loadAcquire(&counterOn) != 0)
			procs := runtime.GOMAXPROCS(0)
			defer runtime.GOMAXPROCS(procs)

			var wg sync.WaitGroup
			for g := 0; g < 6; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < 300; i++ {
						if i%50 == 7 {
							runtime.LockOSThread()
						}
						before := nanotime()
						end := tr.Span("work", Int64("before", before))
						switch i % 4 {
						case 0:
							time.Sleep(50 * time.Microsecond)
						case 1:
							runtime.Gosched()
						}
						end()
						// Read after the end, carried by an instant stamped
						// after it: the end is before it, the instant not.
						tr.Instant("after", Int64("at", nanotime()))
						if i%50 == 9 {
							runtime.UnlockOSThread()
						}
					}
				}()
			}
			for i := 0; i < 20; i++ {
				runtime.GOMAXPROCS(1 + i%3)
				time.Sleep(3 * time.Millisecond)
				if forced && i == 10 {
					storeWord(&counterOn, 0)
				}
			}
			wg.Wait()
			require.NoError(t, tr.Close())

			evs := readClosed(t, path)
			var base int64
			for _, e := range evs {
				if e.Name == "process_name" {
					base = int64(e.Args["ts0_mono_ns"].(float64))
				}
			}
			require.NotZero(t, base)
			// Each goroutine's events in file order: a span (X, or B
			// and E if a flush found it open), then its instant.
			last := map[uint64]float64{}
			ends := map[uint64]float64{} // the last span's end, in ns
			n := 0
			for i := range evs {
				e := &evs[i]
				mono := float64(base) + e.Ts*1e3
				switch e.Name {
				case "work":
					if e.Ph == "X" || e.Ph == "B" {
						assert.GreaterOrEqual(t, mono, e.Args["before"].(float64)-1e3, "start within 1 µs of nanotime")
					}
					ends[e.Tid] = mono
					if e.Ph == "X" {
						ends[e.Tid] = mono + e.Dur*1e3
					}
				case "after":
					at := e.Args["at"].(float64)
					assert.GreaterOrEqual(t, mono, at-1e3, "instant within 1 µs of nanotime")
					require.Contains(t, ends, e.Tid)
					assert.LessOrEqual(t, ends[e.Tid], at+1e3, "end within 1 µs of nanotime")
					n++
				default:
					continue
				}
				assert.GreaterOrEqual(t, e.Ts, last[e.Tid], "a goroutine's events in time order")
				last[e.Tid] = e.Ts
			}
			assert.Equal(t, 6*300, n)
		})
	}
}

// keepClock makes the process choose its clock, and returns what puts the
// choice back as it was.
func keepClock() func() {
	chooseClock()
	on := loadAcquire(&counterOn)
	return func() { storeWord(&counterOn, on) }
}

// TestChooseClock checks that TRACER_CLOCK=nanotime keeps the counter off.
func TestChooseClock(t *testing.T) {
	t.Setenv("TRACER_CLOCK", "nanotime")
	assert.False(t, counterTrusted())
	assert.True(t, hasWord("fpu constant_tsc nonstop_tsc", "nonstop_tsc"))
	assert.False(t, hasWord("fpu constant_tsc_x", "constant_tsc"))
	assert.Equal(t, "fpu tsc", fieldOf([]byte("model : x\nflags\t\t: fpu tsc\n"), "flags"))
}

// TestWallAt checks that wallAt gives the wall time of the nanotime it is
// given, not of the moment it is called: a goroutine stopped between a
// trace's two clock readings, here for 50 ms, must not shift the file's
// wall time of ts 0 by as much (merge aligns processes by it).
func TestWallAt(t *testing.T) {
	for _, pause := range []time.Duration{0, 50 * time.Millisecond} {
		ns := nanotime()
		time.Sleep(pause)
		got := wallAt(ns)
		// The wall time of ns from the narrowest of a few pairs of
		// readings: a goroutine descheduled between the two readings of
		// a pair would widen it past the delta.
		var now, want time.Time
		width := int64(math.MaxInt64)
		for range 12 {
			n1 := nanotime()
			w := time.Now()
			n2 := nanotime()
			if n2-n1 < width {
				now, want, width = w, w.Add(-time.Duration(n1+(n2-n1)/2-ns)), n2-n1
			}
		}
		assert.InDelta(t, 0, got.Sub(want), float64(time.Millisecond), "after a pause of %v", pause)
		assert.False(t, got.After(now), "after a pause of %v", pause)
	}
}
