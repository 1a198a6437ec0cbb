package tracer

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestManyOpenSpans: a server with 20,000 slow requests, each a goroutine
// holding one span for 300 ms, past several flushes. Every span reaches
// the file, none is forgotten (issue 10 item 2: 7,712 of them vanished,
// uncounted, past a bound of 16,384 open spans).
func TestManyOpenSpans(t *testing.T) {
	const n = 20000
	tr, path := newTestTracer(t, WithFlushInterval(50*time.Millisecond))
	var wg sync.WaitGroup
	release := make(chan struct{})
	wg.Add(n)
	for i := range n {
		go func() {
			defer wg.Done()
			end := tr.Span("request", Int("i", i))
			<-release
			end()
		}()
	}
	time.Sleep(300 * time.Millisecond)
	close(release)
	wg.Wait()
	require.NoError(t, tr.Close())
	st := tr.Stats()
	assert.Zero(t, st.Dropped+st.Forgotten+st.Unmatched+st.Lost)
	seen := map[float64]bool{}
	evs := readClosed(t, path)
	checkTracks(t, evs)
	for _, e := range evs {
		if e.Name == "request" && (e.Ph == "X" || e.Ph == "B") {
			seen[e.Args["i"].(float64)] = true
		}
	}
	assert.Equal(t, n, len(seen), "spans in the file")
}

// TestOutOfOrderEnds: a span still open when one begun before it ends is
// not left out silently (issue 10 item 4): it is counted in Forgotten and
// the file's drop counter and reported once, or, if its B is already in
// the file, ended with the outer span so that B and E events nest.
func TestOutOfOrderEnds(t *testing.T) {
	t.Run("not yet written", func(t *testing.T) {
		var errs []string
		var mu sync.Mutex
		tr, path := newTestTracer(t, WithErrorHandler(func(err error) {
			mu.Lock()
			errs = append(errs, err.Error())
			mu.Unlock()
		}))
		for range 3 {
			outer := tr.Span("outer")
			inner := tr.Span("inner")
			outer()
			inner()
		}
		require.NoError(t, tr.Close())
		st := tr.Stats()
		assert.EqualValues(t, 3, st.Forgotten)
		assert.EqualValues(t, 3, st.Unmatched, "the inner ends come after their starts were given up")
		evs := readClosed(t, path)
		checkTracks(t, evs)
		assert.Len(t, byName(evs, "outer"), 3)
		assert.Empty(t, byName(evs, "inner"))
		drops := byName(evs, "tracer.dropped")
		require.NotEmpty(t, drops)
		assert.EqualValues(t, 3, drops[len(drops)-1].Args["events"], "the file says what it lacks")
		require.Len(t, errs, 1, "reported once: %q", errs)
		assert.Contains(t, errs[0], `span "inner" was still open when "outer"`)
	})
	t.Run("B written", func(t *testing.T) {
		tr, path := newTestTracer(t)
		outer := tr.LongSpan("outer")
		inner := tr.LongSpan("inner") // LongSpan writes its B at once
		outer()
		inner()
		require.NoError(t, tr.Close())
		st := tr.Stats()
		assert.Zero(t, st.Forgotten)
		assert.EqualValues(t, 1, st.Unmatched)
		evs := readClosed(t, path)
		checkTracks(t, evs) // B and E nest
		var phases []string
		for _, e := range evs {
			if e.Name == "outer" || e.Name == "inner" {
				phases = append(phases, e.Ph+" "+e.Name)
			}
		}
		assert.Equal(t, []string{"B outer", "B inner", "E inner", "E outer"}, phases)
	})
}

// TestMillionOpenSpans: the flusher's table holds a million open spans,
// one per goroutine as a server's slow requests would, without forgetting
// any, at the documented cost of about 150 bytes each (at most 200 here).
func TestMillionOpenSpans(t *testing.T) {
	if raceEnabled || testing.Short() {
		t.Skip("a million map entries: slow under the race detector")
	}
	var o openSpans
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	const n = maxOpenSpans
	for gid := uint64(1); gid <= n; gid++ {
		s := o.stack(gid, true)
		*s = append(*s, openSpan{start: slot{num: gid}})
		o.count++
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	assert.GreaterOrEqual(t, n, 1_000_000)
	assert.Zero(t, o.trim(&Tracer{}, maxOpenSpans), "a million open spans are all kept")
	perSpan := float64(after.HeapAlloc-before.HeapAlloc) / n
	t.Logf("%.0f bytes per open span", perSpan)
	assert.Less(t, perSpan, 200.0)
	runtime.KeepAlive(&o)
}
