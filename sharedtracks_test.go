package tracer

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/gotracer/tracer/internal/tracecheck"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/atomic"
)

// serveOnLanes runs a server's shape: requests, each on a goroutine of its
// own, with nested spans, some instants and a slow one that outlives a
// flush, at most inFlight at once. It returns the peak number of requests
// that were inside their span at once.
func serveOnLanes(tr *Tracer, requests, inFlight int) int {
	var wg sync.WaitGroup
	sem := make(chan struct{}, inFlight)
	var now, peak atomic.Int64
	for i := range requests {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			route := []string{"GET /users", "POST /orders"}[i%2]
			end := tr.Span(route, Int("id", i))
			n := now.Inc()
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			func() {
				defer tr.Span("decode")()
				time.Sleep(time.Duration(rand.IntN(300)) * time.Microsecond)
			}()
			if i%7 == 0 {
				tr.Instant("cache miss")
			}
			if i%50 == 0 {
				// Across a flush, a flush interval later: B and E.
				ageAll(tr)
				tr.Flush()
			}
			now.Dec()
			end()
		}()
	}
	wg.Wait()
	return int(peak.Load())
}

// TestLanes draws a server's request goroutines on lanes: every slice is
// on a lane of its route, nested exactly (B/E in order, no overlap on a
// lane), with its goroutine in its args; a route has no more lanes than
// requests were in flight at once, and each lane is named after it. Both
// viewers load it without moving a slice to an overflow track.
func TestLanes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lanes.json")
	tr, err := New(path, WithLanes(), withClock(newTestClock()))
	require.NoError(t, err)
	const requests, inFlight = 400, 8
	peak := serveOnLanes(tr, requests, inFlight)
	func() {
		tr.SetGoroutineName("worker")
		defer tr.Span("job")()
		tr.Span("step")()
	}()
	require.NoError(t, tr.Close())

	evs := tracecheck.Read(t, path)
	tracks := tracecheck.Tracks(t, evs) // nesting per track, B/E order
	names := map[uint64]string{}
	for _, e := range tracecheck.Named(evs, "thread_name") {
		names[e.Tid] = e.Args["name"].(string)
	}
	lanesOf := map[string]map[uint64]bool{}
	goroutines := map[float64]bool{}
	for tid, slices := range tracks {
		name, ok := names[tid]
		require.True(t, ok, "track %d has a name", tid)
		for _, s := range slices {
			g, ok := s.Args["goroutine"].(float64)
			require.True(t, ok, "slice %q on %d says its goroutine: %v", s.Name, tid, s.Args)
			goroutines[g] = true
			switch s.Name {
			case "GET /users", "POST /orders", "job":
				group := s.Name
				if s.Name == "job" {
					group = "worker"
				}
				assert.Regexp(t, "^"+group+`( \(\d+\))?$`, name, "a %s on a lane of its group", s.Name)
				if lanesOf[group] == nil {
					lanesOf[group] = map[uint64]bool{}
				}
				lanesOf[group][tid] = true
			}
		}
	}
	assert.Len(t, tracecheck.SlicesNamed(tracks, "GET /users"), requests/2)
	assert.Len(t, tracecheck.SlicesNamed(tracks, "decode"), requests)
	assert.GreaterOrEqual(t, len(goroutines), requests, "each request's goroutine is in the args")
	lanes := 0
	for _, route := range []string{"GET /users", "POST /orders"} {
		lanes += len(lanesOf[route])
		assert.Equal(t, peakOverlap(tracecheck.SlicesNamed(tracks, route)), len(lanesOf[route]),
			"%s: as many lanes as requests in flight at once, not one per request", route)
	}
	assert.LessOrEqual(t, lanes, 2*inFlight)
	assert.Len(t, lanesOf["worker"], 1, "a named goroutine draws on its name's lanes")
	var laneNames []string
	for tid := range lanesOf["GET /users"] {
		laneNames = append(laneNames, names[tid])
	}
	sort.Strings(laneNames)
	assert.Equal(t, "GET /users", laneNames[0])
	t.Logf("%d requests, peak %d in flight, %d lanes: %v", requests, peak, lanes, laneNames)

	perfetto, _ := importInHeavyRun(t, path)
	if perfetto == nil {
		return // the quick run: the nesting checked above is what overflow tracks would show
	}
	perTid := map[float64]int{}
	for _, tk := range perfetto[0]["slice_tracks"].([]any) {
		tk := tk.(map[string]any)
		if tk["track_type"] == "thread_execution" {
			perTid[tk["tid"].(float64)]++
		}
	}
	for tid, n := range perTid {
		assert.Equal(t, 1, n, "lane %v has overflow tracks in Perfetto: slices overlap", tid)
	}
	assert.Len(t, perTid, len(tracks))
}

// peakOverlap returns the most slices that overlap at one time (one that
// ends when another starts does not overlap it).
func peakOverlap(slices []tracecheck.Slice) int {
	type edge struct {
		at    float64
		delta int
	}
	var edges []edge
	for _, s := range slices {
		edges = append(edges, edge{s.Start, 1}, edge{s.End, -1})
	}
	sort.Slice(edges, func(i, j int) bool {
		if edges[i].at != edges[j].at {
			return edges[i].at < edges[j].at
		}
		return edges[i].delta < edges[j].delta // ends first
	})
	n, peak := 0, 0
	for _, e := range edges {
		n += e.delta
		peak = max(peak, n)
	}
	return peak
}

// TestLanesReuse is the lane rule on its own: a goroutine takes the first
// free lane of its group, and a span written whole keeps its lane busy to
// its end, so a span that starts inside it goes to another lane.
func TestLanesReuse(t *testing.T) {
	s := newSharedTracks(nil)
	a := s.acquire(1, "req", 100)
	b := s.acquire(2, "req", 110)
	assert.NotEqual(t, a.tid, b.tid)
	s.release(1, 200) // its span ended at 200
	c := s.acquire(3, "req", 150)
	assert.NotEqual(t, a.tid, c.tid, "lane 1 is busy until 200")
	s.release(3, 160)
	d := s.acquire(4, "req", 250)
	assert.Contains(t, []uint64{a.tid, c.tid}, d.tid, "a free lane, no new one")
	e := s.acquire(5, "other", 250)
	assert.Equal(t, 1, e.index, "a group's lanes count from 1")
	s.setName(6, "pool")
	f := s.acquire(6, "req", 300)
	assert.Equal(t, "pool", f.group.name, "a named goroutine's group is its name")
	assert.Equal(t, []string{"req", "req (2)", "req (3)", "other", "pool"}, func() (out []string) {
		for _, n := range s.unnamed {
			out = append(out, n.tn.name)
		}
		return out
	}())
}

// BenchmarkLanes is the flusher's cost of lanes: the same spans encoded
// with and without WithLanes, per span.
func BenchmarkLanes(b *testing.B) {
	for _, lanes := range []bool{false, true} {
		b.Run(fmt.Sprintf("lanes=%v", lanes), func(b *testing.B) {
			var opts []Option
			if lanes {
				opts = append(opts, WithLanes())
			}
			tr, err := NewWithWriter(discard{}, opts...)
			require.NoError(b, err)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				tr.Span("x", Int("i", i))()
			}
			require.NoError(b, tr.Close())
		})
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// TestLanesInEveryFile rotates a trace drawn on lanes: every file names
// the lanes it holds events of, and nests on them.
func TestLanesInEveryFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "lanes.json")
	tr, err := New(path, WithLanes(), WithMaxFileSize(16<<10), withClock(newTestClock()))
	require.NoError(t, err)
	serveOnLanes(tr, 600, 6)
	require.NoError(t, tr.Close())
	files, err := filepath.Glob(filepath.Join(dir, "lanes*.json"))
	require.NoError(t, err)
	require.Greater(t, len(files), 2, "rotated")
	for _, f := range files {
		evs := tracecheck.Read(t, f)
		tracks := tracecheck.Tracks(t, evs)
		named := map[uint64]bool{}
		for _, e := range tracecheck.Named(evs, "thread_name") {
			named[e.Tid] = true
		}
		for tid := range tracks {
			assert.True(t, named[tid], "%s: lane %d is named in the file", filepath.Base(f), tid)
		}
	}
}

// TestLanesFlowAcrossGoroutines: on lanes, a flow's start carries the
// goroutine that began it, and its steps and end do not: chrome://tracing
// merges a flow's args across its phases and warned of the two goroutines
// (arg_merge_error, found by the torture test's seed 2).
func TestLanesFlowAcrossGoroutines(t *testing.T) {
	tr, path := newTestTracer(t, WithLanes())
	f := func() Flow {
		defer tr.Span("producer")()
		return tr.FlowBegin("job")
	}()
	onGoroutine(func() {
		defer tr.Span("consumer")()
		f.Step()
		f.End()
	})
	require.NoError(t, tr.Close())
	evs := tracecheck.Read(t, path)
	var phases []string
	for _, e := range tracecheck.Named(evs, "job") {
		phases = append(phases, e.Ph)
		if e.Ph == "s" {
			assert.Contains(t, e.Args, "goroutine", "the start says which goroutine began the flow")
		} else {
			assert.NotContains(t, e.Args, "goroutine", "%s: only the start says which goroutine", e.Ph)
		}
	}
	assert.Equal(t, []string{"s", "t", "f"}, phases)
	importInHeavyRun(t, path)
}
