package goruntime

import (
	"bytes"
	"cmp"
	"context"
	"path/filepath"
	"runtime"
	rtrace "runtime/trace"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gotracer/tracer"
	"github.com/gotracer/tracer/internal/tracecheck"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// traced runs work with a tracer and the runtime's view on, closes both
// and returns the file's path.
func traced(t *testing.T, opts []Option, work func(tr *tracer.Tracer)) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "trace.json")
	tr, err := tracer.New(path)
	require.NoError(t, err)
	stop, err := Start(tr, opts...)
	require.NoError(t, err)
	work(tr)
	require.NoError(t, stop())
	require.NoError(t, tr.Close())
	return path
}

// meta returns the last value of metadata name (thread_name or
// thread_sort_index) per tid: the one both viewers keep.
func meta(evs []tracecheck.Event, name string) map[uint64]any {
	out := map[uint64]any{}
	for _, e := range tracecheck.Named(evs, name) {
		if e.Ph != "M" {
			continue
		}
		for _, v := range e.Args {
			out[e.Tid] = v
		}
	}
	return out
}

// TestBlockedUnderSpan checks the alignment of the two clocks: a goroutine
// that waits 10ms on a channel inside a span shows a blocked state of
// about 10ms under that span, on its runtime track.
func TestBlockedUnderSpan(t *testing.T) {
	const wait = 10 * time.Millisecond
	var gid uint64
	var waited time.Duration // from the goroutine's start to close: a loaded machine stretches it
	path := traced(t, nil, func(tr *tracer.Tracer) {
		ch, started := make(chan struct{}), make(chan bool)
		done := make(chan uint64)
		launched := time.Now()
		go func() {
			end := tr.Span("wait")
			started <- true
			<-ch
			end()
			done <- currentGid(tr)
		}()
		<-started
		time.Sleep(wait)
		waited = time.Since(launched)
		close(ch)
		gid = <-done
	})
	evs := tracecheck.Read(t, path)
	tracks := tracecheck.Tracks(t, evs)
	spans := tracks[gid]
	require.Len(t, spans, 2, "the wait span and the span currentGid leaves")
	span := tracecheck.SlicesNamed(map[uint64][]tracecheck.Slice{gid: spans}, "wait")[0]

	// The wait is the longest channel receive on the goroutine's runtime
	// track. Under load and the race detector, the goroutine can block
	// for a few more microseconds while it ends the span: those are not
	// the wait, and are not checked.
	var b tracecheck.Slice
	for _, s := range tracks[runtimeTid(gid)] {
		if s.Name == "blocked" && s.Args["reason"] == "chan receive" && s.End-s.Start > b.End-b.Start {
			b = s
		}
	}
	require.Equal(t, "blocked", b.Name, "a wait on the channel: %v", tracks[runtimeTid(gid)])
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	assert.GreaterOrEqual(t, b.End-b.Start, us(wait/2), "the blocked state lasts about as long as the wait")
	assert.LessOrEqual(t, b.End-b.Start, us(waited+time.Millisecond), "and no longer than the test waited")
	// The execution trace's clock has a 64ns tick: allow a microsecond.
	assert.GreaterOrEqual(t, b.Start, span.Start-1, "the wait began inside the span")
	assert.LessOrEqual(t, b.End, span.End+1, "and ended inside it")
}

// currentGid records a marker span and returns the goroutine id the
// tracer wrote for it, read back from the trace: the test has no other
// way to know it.
func currentGid(tr *tracer.Tracer) uint64 {
	tr.Span("gid marker")()
	return goid()
}

// goid parses the calling goroutine's id from its stack.
func goid() uint64 {
	var buf [64]byte
	s := strings.TrimPrefix(string(buf[:runtime.Stack(buf[:], false)]), "goroutine ")
	var id uint64
	for _, c := range s {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uint64(c-'0')
	}
	return id
}

// TestTrackNames checks that a goroutine's two tracks share its name and
// sort index, whether the program set them or not.
func TestTrackNames(t *testing.T) {
	for _, tc := range []struct {
		name     string
		setName  string
		setSort  int
		hasSort  bool
		wantName string
	}{
		{name: "unnamed", wantName: ""},
		{name: "named", setName: "worker 3", wantName: "worker 3"},
		{name: "named and sorted", setName: "first", setSort: -5, hasSort: true, wantName: "first"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var gid uint64
			path := traced(t, nil, func(tr *tracer.Tracer) {
				done := make(chan uint64)
				go func() {
					if tc.setName != "" {
						tr.SetGoroutineName(tc.setName)
					}
					if tc.hasSort {
						tr.SetGoroutineSortIndex(tc.setSort)
					}
					defer tr.Span("work")()
					time.Sleep(time.Millisecond)
					done <- goid()
				}()
				gid = <-done
			})
			evs := tracecheck.Read(t, path)
			names, sorts := meta(evs, "thread_name"), meta(evs, "thread_sort_index")
			if tc.wantName == "" {
				// The tracer names a goroutine the program did not name
				// after its id; goruntime makes up no name of its own that
				// could win over the program's.
				assert.Equal(t, "goroutine "+uintString(gid), names[gid], "span track")
				assert.Equal(t, "goroutine "+uintString(gid)+" (runtime)", names[runtimeTid(gid)], "runtime track")
			} else {
				assert.Equal(t, tc.wantName, names[gid], "span track")
				assert.Equal(t, tc.wantName+" (runtime)", names[runtimeTid(gid)], "runtime track")
			}
			wantSort := float64(gid)
			if tc.hasSort {
				wantSort = float64(tc.setSort)
			}
			assert.Equal(t, wantSort, sorts[gid], "span track's sort index")
			assert.Equal(t, wantSort, sorts[runtimeTid(gid)], "runtime track's sort index, the same")
		})
	}
}

func uintString(u uint64) string {
	if u < 10 {
		return string(rune('0' + u))
	}
	return uintString(u/10) + string(rune('0'+u%10))
}

// TestFilters checks which goroutines and states are kept.
func TestFilters(t *testing.T) {
	for _, tc := range []struct {
		name        string
		opts        []Option
		quietTrack  bool // the goroutine that recorded no span has a runtime track
		spanStates  bool // the one that did has states
		shortStates bool // states under 1ms are there
	}{
		{name: "default", spanStates: true},
		{name: "all goroutines", opts: []Option{WithAllGoroutines()}, quietTrack: true, spanStates: true},
		{name: "every state", opts: []Option{WithMinState(0)}, spanStates: true, shortStates: true},
		{name: "long states only", opts: []Option{WithMinState(time.Hour)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var quiet, busy uint64
			path := traced(t, tc.opts, func(tr *tracer.Tracer) {
				ids := make(chan uint64, 2)
				go func() { // no span
					time.Sleep(2 * time.Millisecond)
					ids <- goid()
				}()
				go func() {
					defer tr.Span("busy")()
					for range 20 {
						runtime.Gosched() // short runnable and running states
					}
					time.Sleep(2 * time.Millisecond)
					ids <- goid()
				}()
				a, b := <-ids, <-ids
				quiet, busy = min(a, b), max(a, b) // started first: lower id
			})
			evs := tracecheck.Read(t, path)
			tracks := tracecheck.Tracks(t, evs)
			assert.Equal(t, tc.quietTrack, len(tracks[runtimeTid(quiet)]) > 0, "runtime track of the goroutine without spans")
			states := tracks[runtimeTid(busy)]
			assert.Equal(t, tc.spanStates, len(states) > 0, "states of the goroutine with a span")
			short := false
			for _, s := range states {
				if s.End-s.Start < 1 { // µs
					short = true
				}
			}
			assert.Equal(t, tc.shortStates, short, "states under a microsecond")
		})
	}
}

// TestRuntimeView checks the process-level slices and counters and the
// user's runtime/trace annotations.
func TestRuntimeView(t *testing.T) {
	var gid uint64
	path := traced(t, nil, func(tr *tracer.Tracer) {
		defer tr.Span("annotated")()
		gid = goid()
		ctx, task := rtrace.NewTask(context.Background(), "request")
		rtrace.WithRegion(ctx, "outer", func() {
			rtrace.WithRegion(ctx, "inner", func() { time.Sleep(time.Millisecond) })
			runtime.GC()
		})
		task.End()
	})
	evs := tracecheck.Read(t, path)
	tracks := tracecheck.Tracks(t, evs) // every track nests: states inside regions
	rt := tracks[runtimeTid(gid)]
	names := map[string]int{}
	for _, s := range rt {
		names[s.Name]++
	}
	assert.Equal(t, 1, names["outer"], "region")
	assert.Equal(t, 1, names["inner"], "nested region")
	// The regions nest as they ran (the goroutine's states nest inside
	// them: on a loaded machine one may start with inner, at its start).
	regions := map[uint64][]tracecheck.Slice{0: rt}
	require.Len(t, tracecheck.SlicesNamed(regions, "outer"), 1)
	require.Len(t, tracecheck.SlicesNamed(regions, "inner"), 1)
	outer, inner := tracecheck.SlicesNamed(regions, "outer")[0], tracecheck.SlicesNamed(regions, "inner")[0]
	assert.True(t, outer.Start <= inner.Start && inner.End <= outer.End, "inner [%v, %v] in outer [%v, %v]", inner.Start, inner.End, outer.Start, outer.End)

	assert.NotEmpty(t, tracecheck.SlicesNamed(map[uint64][]tracecheck.Slice{gcTid: tracks[gcTid]}, "GC"), "GC cycle")
	assert.NotEmpty(t, tracks[stwTid], "stop-the-world pauses")
	ops := tracecheck.Async(t, evs)
	found := false
	for _, op := range ops {
		found = found || op.Begin.Name == "request"
	}
	assert.True(t, found, "the task as an async slice")
	assert.NotEmpty(t, tracecheck.Named(evs, "go.heap"), "heap counter")
	assert.NotEmpty(t, tracecheck.Named(evs, "go.goroutines"), "goroutine counter")
}

func TestStartErrors(t *testing.T) {
	_, err := Start(nil)
	assert.Error(t, err, "nil tracer")

	path := filepath.Join(t.TempDir(), "t.json")
	tr, err := tracer.New(path)
	require.NoError(t, err)
	_, err = Start(tr, WithMinState(-1))
	assert.Error(t, err, "bad option")

	stop, err := Start(tr)
	require.NoError(t, err)
	_, err = Start(tr)
	assert.Error(t, err, "a second execution trace in one process")
	require.NoError(t, stop())
	require.NoError(t, stop(), "stop twice")
	require.NoError(t, tr.Close())

	_, err = Start(tr)
	assert.Error(t, err, "a closed tracer")
}

// gosched runs 50 goroutines that yield 200 times each: about 20,000
// scheduling events, over 1 MiB converted with every state kept.
func gosched() {
	done := make(chan bool)
	for range 50 {
		go func() {
			for range 200 {
				runtime.Gosched()
			}
			done <- true
		}()
	}
	for range 50 {
		<-done
	}
}

// TestNoDropsWhileTheSinkKeepsUp checks that a full bound on what waits
// for a flush holds up the conversion rather than dropping: with a tracer
// that never flushes on its own and 64 KiB of room, every state of every
// goroutine reaches the file. Dropping when full lost most of them.
func TestNoDropsWhileTheSinkKeepsUp(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.json")
	tr, err := tracer.New(path, tracer.WithFlushInterval(10*time.Second))
	require.NoError(t, err)
	stop, err := Start(tr, WithMaxPending(64<<10), WithAllGoroutines(), WithMinState(0))
	require.NoError(t, err)
	gosched()
	require.NoError(t, stop())
	require.NoError(t, tr.Close())
	evs := tracecheck.Read(t, path)
	assert.Empty(t, tracecheck.Named(evs, "goruntime.dropped"))
	states := 0
	for _, e := range evs {
		if e.Ph == "X" && e.Tid >= runtimeTid(0) {
			states++
		}
	}
	assert.Greater(t, states, 10_000, "the goroutines' states are in the file")
}

// stalledWriter blocks every Write while mu is held.
type stalledWriter struct {
	mu  sync.Mutex
	out bytes.Buffer
}

func (w *stalledWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.out.Write(p)
}

// TestDropsOnAStalledSink checks the other side: when the tracer's sink
// stalls, the converter waits stallWait, then drops, counts and says so,
// instead of holding up the execution tracer without end.
func TestDropsOnAStalledSink(t *testing.T) {
	w := &stalledWriter{}
	tr, err := tracer.NewWithWriter(w, tracer.WithStopTimeout(200*time.Millisecond))
	require.NoError(t, err)
	stop, err := Start(tr, WithMaxPending(64<<10), WithAllGoroutines(), WithMinState(0))
	require.NoError(t, err)
	w.mu.Lock()
	gosched()
	err = stop()
	w.mu.Unlock()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "events dropped")
	tr.Close() // the stall timed out writes: an error is expected
}

// TestTrackOrder checks that each goroutine's runtime track is next to its
// span track in chrome://tracing's order, which is (from catapult's
// Thread.compare) by sort index, then named tracks by name, then tid;
// Perfetto sorts by the same sort index (its thread_sort_index_hint). A
// named pair has the span track first; an unnamed span track comes after
// its named runtime track.
func TestTrackOrder(t *testing.T) {
	path := traced(t, nil, busyWork)
	evs := tracecheck.Read(t, path)
	names, sorts := meta(evs, "thread_name"), meta(evs, "thread_sort_index")
	type track struct {
		tid  uint64
		sort float64
		name string
	}
	var tracks []track
	for tid := range tracecheck.Tracks(t, evs) {
		s, _ := sorts[tid].(float64)
		n, _ := names[tid].(string)
		tracks = append(tracks, track{tid, s, n})
	}
	slices.SortFunc(tracks, func(a, b track) int {
		named := func(t track) int { // named first
			if t.name == "" {
				return 1
			}
			return 0
		}
		return cmp.Or(cmp.Compare(a.sort, b.sort), cmp.Compare(named(a), named(b)), cmp.Compare(a.name, b.name), cmp.Compare(a.tid, b.tid))
	})
	pos := map[uint64]int{}
	for i, tr := range tracks {
		pos[tr.tid] = i
	}
	namedPairs := 0
	for _, tr := range tracks {
		if tr.tid&runtimeTidBit == 0 || tr.tid >= gcTid {
			continue
		}
		span, ok := pos[tr.tid&^runtimeTidBit]
		if !ok {
			continue // a goroutine with states and no span (it was named)
		}
		if names[tr.tid&^runtimeTidBit] != nil {
			assert.Equal(t, span+1, pos[tr.tid], "%q right after its span track", tr.name)
			namedPairs++
		} else {
			assert.Equal(t, span-1, pos[tr.tid], "%q right before its unnamed span track", tr.name)
		}
	}
	assert.Equal(t, 4, namedPairs, "the four workers")
}

// TestCommitLargerThanTheBound checks that output larger than
// WithMaxPending on its own, as the states ended at stop can be, goes
// into an empty pending buffer at once rather than being dropped after
// waiting for room that can never be made.
func TestCommitLargerThanTheBound(t *testing.T) {
	o := defaultOptions()
	o.maxPending = 64 << 10
	s := newSession(o)
	line := []byte(`{"name":"running","ph":"X","ts":1.000,"dur":2.000,"pid":1,"tid":2147483649},` + "\n")
	s.conv = &converter{buf: bytes.Repeat(line, 2000), events: 2000}
	size := len(s.conv.buf)
	require.Greater(t, size, o.maxPending)
	s.commit()
	// No tracer drains this session: had commit waited for room, it
	// would have given up, taken the sink for stalled and dropped.
	assert.False(t, s.stalled, "no wait for room")
	assert.Zero(t, s.dropped)
	assert.Len(t, s.pending, size)
}
