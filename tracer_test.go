package tracer

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gotracer/tracer/internal/jsonenc"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newTestTracer makes a tracer writing to a file in the test's temporary
// directory, with a testClock unless opts give a clock: it passes when
// the test flushes, and writes every span as an X event unless the test
// ages them (testClock.ageAll).
func newTestTracer(t testing.TB, opts ...Option) (*Tracer, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "trace.json")
	tr, err := New(path, append([]Option{withClock(newTestClock())}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { tr.Close() })
	return tr, path
}

func find(t testing.TB, evs []event, ph, name string) event {
	t.Helper()
	for _, e := range evs {
		if e.Ph == ph && e.Name == name {
			return e
		}
	}
	require.Failf(t, "event not found", "no %s event named %q", ph, name)
	return event{}
}

func TestRoundTripEveryKind(t *testing.T) {
	tr, path := newTestTracer(t, WithProcessName("round-trip"), WithProcessSortIndex(3))
	tr.SetGoroutineName("main goroutine")
	tr.SetGoroutineSortIndex(-1)
	end := tr.Span("outer",
		String("s", "v"), Int("i", -3), Int64("i64", math.MinInt64), Uint64("u", math.MaxUint64),
		Float64("f", 1.5), Bool("b", true))
	endB := tr.LongSpan("region", Int("n", 1))
	tr.Instant("thread instant", String("why", "test"))
	tr.InstantProcess("process instant")
	tr.InstantGlobal("global instant")
	endB()
	end()
	require.NoError(t, tr.Close())

	evs := readClosed(t, path)
	gid := goroutineID()
	pid := os.Getpid()

	meta := find(t, evs, "M", "process_name")
	assert.Equal(t, "round-trip", meta.Args["name"])
	wall, err := time.Parse(time.RFC3339Nano, meta.Args["ts0_wall"].(string))
	require.NoError(t, err)
	assert.WithinDuration(t, time.Now(), wall, time.Minute)
	assert.Equal(t, 3.0, find(t, evs, "M", "process_sort_index").Args["sort_index"])
	tn := find(t, evs, "M", "thread_name")
	assert.Equal(t, "main goroutine", tn.Args["name"])
	assert.Equal(t, gid, tn.Tid)
	assert.Equal(t, -1.0, find(t, evs, "M", "thread_sort_index").Args["sort_index"])

	// A LongSpan inside a Span makes the Span a B/E pair too, so that B and E
	// events nest in file order.
	x, xe := find(t, evs, "B", "outer"), find(t, evs, "E", "outer")
	assert.Equal(t, pid, x.Pid)
	assert.Equal(t, gid, x.Tid)
	assert.Equal(t, map[string]any{
		"s": "v", "i": -3.0, "i64": float64(math.MinInt64), "u": float64(math.MaxUint64), "f": 1.5, "b": true,
	}, x.Args)

	b, e := find(t, evs, "B", "region"), find(t, evs, "E", "region")
	assert.Equal(t, map[string]any{"n": 1.0}, b.Args)
	assert.LessOrEqual(t, b.Ts, e.Ts)
	assert.GreaterOrEqual(t, b.Ts, x.Ts)
	assert.LessOrEqual(t, e.Ts, xe.Ts)

	for name, scope := range map[string]string{"thread instant": "t", "process instant": "p", "global instant": "g"} {
		assert.Equal(t, scope, find(t, evs, "i", name).S, name)
	}
	checkTracks(t, evs)

	st := tr.Stats()
	assert.EqualValues(t, 9, st.Events, "2 B, 2 E, 3 instants, 2 thread metadata")
	assert.EqualValues(t, len(evs), int(st.Events)+1+len(byName(evs, "process_name")), "plus the process's sort index and name (at the start, and perhaps again at the end)")
	assert.Zero(t, st.Dropped+st.Late+st.Lost+st.Unmatched)
}

// TestTimestampsAreMicrosecondsFromStart brackets a span's start and end
// between time readings: ts counts microseconds from the tracer's start,
// dur microseconds, however long a loaded machine takes to run the test.
func TestTimestampsAreMicrosecondsFromStart(t *testing.T) {
	beforeNew := time.Now()
	tr, path := newTestTracer(t)
	time.Sleep(2 * time.Millisecond)
	beforeSpan := time.Now()
	end := tr.Span("sleep")
	tsAtMost := time.Since(beforeNew)
	time.Sleep(3 * time.Millisecond)
	end()
	durAtMost := time.Since(beforeSpan)
	require.NoError(t, tr.Close())
	x := find(t, readClosed(t, path), "X", "sleep")
	assert.Greater(t, x.Ts, 2000.0)
	assert.LessOrEqual(t, x.Ts, float64(tsAtMost.Microseconds()+1))
	assert.Greater(t, x.Dur, 3000.0)
	assert.LessOrEqual(t, x.Dur, float64(durAtMost.Microseconds()+1))
}

func TestLongSpanIsWrittenBeforeItEnds(t *testing.T) {
	clk := newTestClock()
	tr, path := newTestTracer(t, withClock(clk))
	end := tr.Span("long", Int("k", 1))
	short := tr.Span("short")
	short()
	clk.ageAll() // a flush interval later
	require.NoError(t, tr.Flush())

	data, err := os.ReadFile(path)
	require.NoError(t, err)
	evs := readCrashed(t, data)
	b := find(t, evs, "B", "long")
	assert.Equal(t, map[string]any{"k": 1.0}, b.Args)
	find(t, evs, "X", "short")

	end()
	require.NoError(t, tr.Close())
	evs = readClosed(t, path)
	find(t, evs, "E", "long")
	assert.Empty(t, byPhase(evs, "X")[1:], "the long span must not also be an X")
	checkTracks(t, evs)
}

func TestNestingAcrossManyGoroutines(t *testing.T) {
	t.Parallel()
	tr, path := newTestTracer(t)
	const goroutines, depth, reps = 16, 6, 50
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var nest func(d int)
			nest = func(d int) {
				if d <= 0 {
					return
				}
				if d%2 == 0 {
					defer tr.Span("span")()
				} else {
					defer tr.LongSpan("begin")()
				}
				nest(d - 1)
				runtime.Gosched()
				nest(d - 2)
			}
			for i := 0; i < reps; i++ {
				nest(depth)
			}
		}()
	}
	wg.Wait()
	require.NoError(t, tr.Close())
	evs := readClosed(t, path)
	tracks := checkTracks(t, evs)
	assert.Len(t, tracks, goroutines)
	st := tr.Stats()
	require.Zero(t, st.Dropped, "the buffer is sized for this test")
	assert.Zero(t, st.Unmatched)
	total := 0
	for _, ivs := range tracks {
		total += len(ivs)
	}
	// nest(d) records calls(d) = 1 + calls(d-1) + calls(d-2) spans.
	calls := []int{0, 1, 2}
	for d := 3; d <= depth; d++ {
		calls = append(calls, 1+calls[d-1]+calls[d-2])
	}
	assert.Equal(t, goroutines*reps*calls[depth], total)
}

// TestBeginEndOrderWhileMigrating moves goroutines between Ps in the middle
// of their spans: their B and E events sit in different rings, and must
// still reach the file in order.
func TestBeginEndOrderWhileMigrating(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	clk := newTestClock()
	tr, path := newTestTracer(t, withClock(clk))
	defer clk.passing()() // passes between the goroutines' events
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 300; i++ {
				end := tr.LongSpan("outer")
				runtime.Gosched()
				inner := tr.LongSpan("inner")
				time.Sleep(time.Duration(i%3) * 10 * time.Microsecond)
				inner()
				runtime.Gosched()
				end()
			}
		}()
	}
	wg.Wait()
	require.NoError(t, tr.Close())
	evs := readClosed(t, path)
	checkTracks(t, evs)
	assert.Len(t, byPhase(evs, "B"), 8*300*2)
	assert.Len(t, byPhase(evs, "E"), 8*300*2)
	assert.Zero(t, tr.Stats().Dropped)
}

// TestLateEventsCounted records each shape of event after Close: each is
// refused and counted once in Stats.Late, whether it goes through the
// args' path or straight to the chain (a span without args), and whatever
// its category, even one the tracer does not record.
func TestLateEventsCounted(t *testing.T) {
	off := Category("late-off")
	for _, c := range []struct {
		name   string
		record func(tr *Tracer)
	}{
		{"bare span", func(tr *Tracer) { tr.Span("x")() }},
		{"span with args", func(tr *Tracer) { tr.Span("x", Int("n", 1))(Int("m", 2)) }},
		{"span of a category not recorded", func(tr *Tracer) { tr.Span("x", off)() }},
		{"long span", func(tr *Tracer) { tr.LongSpan("x")() }},
		{"instant", func(tr *Tracer) { tr.Instant("x") }},
		{"counter", func(tr *Tracer) { tr.Counter("x", Int("v", 1)) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr, _ := newTestTracer(t, WithCategories("other"))
			require.NoError(t, tr.Close())
			c.record(tr)
			assert.EqualValues(t, 1, tr.Stats().Late)
		})
	}
}

func TestCloseWhileRecording(t *testing.T) {
	t.Parallel()
	tr, path := newTestTracer(t)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var rounds atomic.Int64
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				end := tr.Span("work")
				tr.Instant("tick")
				end()
				rounds.Add(1)
			}
		}()
	}
	// Close while they record, and let them record some more.
	waitFor := func(n int64) {
		for at := rounds.Load(); rounds.Load() < at+n; {
			runtime.Gosched()
		}
	}
	waitFor(10_000)
	require.NoError(t, tr.Close())
	waitFor(10_000)
	close(stop)
	wg.Wait()
	require.NoError(t, tr.Close(), "Close is idempotent")
	assert.ErrorIs(t, tr.Flush(), ErrClosed)

	evs := readClosed(t, path)
	checkTracks(t, evs)
	st := tr.Stats()
	assert.Greater(t, st.Late, uint64(0), "events after Close are counted")
	// The process name at the start (and at the end, should the last
	// batch hold no event to end the file with) and the drop counters.
	internal := len(byName(evs, "process_name")) + len(byPhase(evs, "C"))
	assert.EqualValues(t, len(evs), int(st.Events)+internal, "every event written is counted")
}

// TestFullBuffersWaitNotDrop floods a tracer whose buffers hold a few
// chunks, with the flusher's interval out of the way: recording must wait
// for the encoder and the disk, and every event reach the file.
func TestFullBuffersWaitNotDrop(t *testing.T) {
	t.Parallel()
	tr, path := newTestTracer(t, WithBufferLimit(chunkBytes))
	const n = 200_000
	for i := 0; i < n; i++ {
		tr.Instant("flood")
	}
	require.NoError(t, tr.Close())
	st := tr.Stats()
	require.Zero(t, st.Dropped)
	evs := readClosed(t, path)
	assert.EqualValues(t, n, len(byPhase(evs, "i")))
	assert.Empty(t, byName(evs, "tracer.dropped"), "nothing dropped: no drop counter")
}

func TestSpansWithManyArgs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // one P, one chain
	tr, path := newTestTracer(t)
	var args []Arg
	for i := 0; i < maxArgs+5; i++ {
		args = append(args, Int(strings.Repeat("k", i+1), i))
	}
	// Fill most of the chunk so that the events with many args do not
	// fit in what is left of it.
	for i := 0; i < chunkSlots-20; i++ {
		tr.Instant("pad")
	}
	require.NoError(t, tr.Flush())
	for n := 0; n <= maxArgs+5; n += 3 {
		tr.Span("many", args[:n]...)()
		require.NoError(t, tr.Flush())
	}
	require.Zero(t, tr.Stats().Dropped)
	require.NoError(t, tr.Close())
	var seen int
	for _, e := range readClosed(t, path) {
		if e.Name != "many" {
			continue
		}
		want := min(seen*3, maxArgs)
		assert.Len(t, e.Args, want)
		for i := 0; i < want; i++ {
			assert.EqualValues(t, i, e.Args[strings.Repeat("k", i+1)])
		}
		seen++
	}
	assert.Equal(t, (maxArgs+5)/3+1, seen)
}

func TestHostileStrings(t *testing.T) {
	names := []string{
		"", `quote " backslash \ slash /`, "ctrl \x00\x01\x1f\x7f\n\r\t", "bad utf8 \xff\xfe\xc3",
		"emoji 🚀 and é", "\u2028\u2029", strings.Repeat("long", MaxStringLen),
		strings.Repeat("\x80", 5000), // kept as U+FFFD, not cut to nothing
		strings.Repeat("é", MaxStringLen), strings.Repeat("x", MaxStringLen-1) + "🚀",
	}
	tr, path := newTestTracer(t)
	for _, n := range names {
		tr.Span(n, String(n, n), Float64("nan", math.NaN()), Float64("inf", math.Inf(1)), Float64("-inf", math.Inf(-1)))()
	}
	require.NoError(t, tr.Close())
	xs := byPhase(readClosed(t, path), "X")
	require.Len(t, xs, len(names))
	for i, n := range names {
		want := expectString(n)
		assert.Equal(t, want, xs[i].Name)
		assert.Equal(t, want, xs[i].Args[want])
		assert.Equal(t, "NaN", xs[i].Args["nan"])
		assert.Equal(t, "+Inf", xs[i].Args["inf"])
		assert.Equal(t, "-Inf", xs[i].Args["-inf"])
	}
	assert.Contains(t, xs[6].Name, "…[truncated 12288 bytes]")
	assert.True(t, strings.HasPrefix(xs[7].Name, strings.Repeat("\ufffd", MaxStringLen)), "invalid bytes are cut at the limit")
	assert.Contains(t, xs[9].Name, "x…[truncated 4 bytes]", "a rune is cut whole")
}

// expectString is what appendString should make of s once decoded:
// invalid bytes become U+FFFD one for one, long strings are cut after the
// last rune (or invalid byte) that fits in MaxStringLen bytes.
func expectString(s string) string {
	cut := 0
	if len(s) > MaxStringLen {
		n := 0
		for n < len(s) {
			_, size := utf8.DecodeRuneInString(s[n:])
			if n+size > MaxStringLen {
				break
			}
			n += size
		}
		cut, s = len(s)-n, s[:n]
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		b.WriteRune(r)
		i += size
	}
	if cut > 0 {
		b.WriteString("…[truncated " + itoa(cut) + " bytes]")
	}
	return b.String()
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "a", `"\`, "\x00", "\xff", "é", "\u2028", strings.Repeat("x", MaxStringLen+1), strings.Repeat("\x80", MaxStringLen+1), strings.Repeat("€", MaxStringLen)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := jsonenc.String(nil, s)
		require.True(t, utf8.Valid(out), "output must be valid UTF-8")
		var got string
		require.NoError(t, json.Unmarshal(out, &got), "output must be a JSON string: %q", out)
		require.Equal(t, expectString(s), got)
	})
}

func TestZeroAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	tr, _ := newTestTracer(t, WithCategories("db"))
	errBoom, at, addr := errors.New("boom"), time.Now(), &countingStringer{text: "10.0.0.1"}
	catDB := Category("db")
	on := map[string]func(){
		"Span":        func() { tr.Span("x")() },
		"SpanTwoArgs": func() { tr.Span("x", String("k", "v"), Int("n", 1))() },
		"SpanEveryArgKind": func() {
			tr.Span("x", catDB, String("s", "v"), Int("i", 1), Int64("i64", 2), Uint64("u", 3), Float64("f", 0.5),
				Bool("b", true), Err(errBoom), Duration("d", time.Millisecond), Time("t", at), Stringer("addr", addr))()
		},
		// Args at the end through a SpanHandle: through the function Span
		// returns, Go allocates their slice (see Span).
		"StartSpanEndArgs": func() {
			tr.StartSpan("x", Stringer("addr", addr)).End(String("end", "v"), Stringer("end addr", addr), Err(errBoom))
		},
		"LongSpan": func() { tr.LongSpan("x", Int("n", 1))() },
		"Instant":  func() { tr.Instant("x", Bool("b", true)) },
	}
	for name, f := range on {
		assert.Zero(t, allocsPerRun(1000, f), name)
	}
	require.Nil(t, Default())
	off := map[string]func(){
		"Span":        func() { defer Span("x")() },
		"SpanTwoArgs": func() { defer Span("x", String("k", "v"), Int("n", 1))() },
		"Instant":     func() { Instant("x") },
	}
	for name, f := range off {
		assert.Zero(t, allocsPerRun(1000, f), name+" off")
	}
}

func TestDefaultTracer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "default.json")
	Span("before start")()
	// No tick passes while "during" is open, however loaded the machine:
	// it is one X event.
	require.NoError(t, Start(path, withClock(newTestClock())))
	require.ErrorIs(t, Start(path), ErrStarted)
	SetGoroutineName("main")
	func() { defer Span("during", Int("n", 1))() }()
	Instant("tick")
	require.NoError(t, Flush())
	require.NoError(t, Stop())
	require.NoError(t, Stop(), "Stop without a running tracer is a no-op")
	Span("after stop")()
	evs := readClosed(t, path)
	find(t, evs, "X", "during")
	find(t, evs, "i", "tick")
	assert.Len(t, byPhase(evs, "X"), 1)
}

// TestConcurrentStart: of goroutines calling Start on one path at once,
// one wins, and the others leave its file alone (issue 10 item 3: each
// loser truncated it and wrote its own header and "]").
func TestConcurrentStart(t *testing.T) {
	for round := range 20 {
		path := filepath.Join(t.TempDir(), "default.json")
		var wins atomic.Int32
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				switch err := Start(path); {
				case err == nil:
					wins.Add(1)
				default:
					assert.ErrorIs(t, err, ErrStarted)
				}
			}()
		}
		wg.Wait()
		require.Equal(t, int32(1), wins.Load(), "round %d", round)
		Span("after the race")()
		require.NoError(t, Stop())
		evs := readClosed(t, path) // strict JSON: one header, one "]"
		find(t, evs, "X", "after the race")
		names := byName(evs, "process_name") // the header, and perhaps the same again to end the file
		require.NotEmpty(t, names)
		assert.LessOrEqual(t, len(names), 2, "one header")
		assert.Equal(t, names[0], names[len(names)-1])
	}
}

func TestNilTracerIsANoOp(t *testing.T) {
	var tr *Tracer
	tr.Span("x")()
	tr.LongSpan("x")()
	tr.Instant("x")
	tr.SetGoroutineName("x")
	assert.NoError(t, tr.Flush())
	assert.NoError(t, tr.Close())
	assert.Equal(t, Stats{}, tr.Stats())
}

func TestNewErrors(t *testing.T) {
	_, err := New(filepath.Join(t.TempDir(), "no", "such", "dir", "t.json"))
	assert.ErrorIs(t, err, os.ErrNotExist)
	dir := t.TempDir()
	for _, opt := range []Option{WithBufferLimit(0), WithBufferLimit(1 << 41), WithFlushInterval(0), WithErrorHandler(nil)} {
		_, err := New(filepath.Join(dir, "t.json"), opt)
		assert.Error(t, err)
	}
}

func TestGoroutineIDMatchesRuntime(t *testing.T) {
	verifyGoid()
	require.True(t, goidFast, "goid.Get must agree with runtime.Stack on this Go version")
	var wg sync.WaitGroup
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			assert.Equal(t, stackGoroutineID(), goroutineID())
		}()
	}
	wg.Wait()
}

// TestDefaultLifecycle is issue 11 item 5: closing the default tracer
// clears it, so Start works again, and SetDefault refuses a closed tracer.
func TestDefaultLifecycle(t *testing.T) {
	dir := t.TempDir()
	tr, err := New(filepath.Join(dir, "a.json"))
	require.NoError(t, err)
	require.NoError(t, SetDefault(tr))
	require.NoError(t, tr.Close()) // not Stop
	assert.Nil(t, Default(), "a closed default tracer is cleared")
	assert.ErrorIs(t, SetDefault(tr), ErrClosed)
	require.NoError(t, Start(filepath.Join(dir, "b.json")), "Start works after the default was closed")
	Span("in b")()
	require.NoError(t, Stop())
	find(t, readClosed(t, filepath.Join(dir, "b.json")), "X", "in b")
}

// TestNilOption: New(path, nil) is New(path), not a panic (issue 11 item 4).
func TestNilOption(t *testing.T) {
	tr, err := New(filepath.Join(t.TempDir(), "t.json"), nil, WithFlushInterval(time.Second), nil)
	require.NoError(t, err)
	require.NoError(t, tr.Close())
}
