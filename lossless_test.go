package tracer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gotracer/tracer/internal/tracecheck"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// collected collects what a tracer tells its error handler.
type collected struct {
	mu   sync.Mutex
	errs []error
}

func (c *collected) handle(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.errs = append(c.errs, err)
}

func (c *collected) messages() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var m []string
	for _, err := range c.errs {
		m = append(m, err.Error())
	}
	return m
}

// TestLosslessWaitsForAStalledSink stalls the sink while a goroutine
// floods a lossless tracer with small buffers: the goroutine must wait
// (not drop) until the sink recovers, and then every event reach the file.
func TestLosslessWaitsForAStalledSink(t *testing.T) {
	t.Parallel() // its own tracers, child processes or importers: it mostly waits
	s, path := newGateSink(t)
	tr := newTracerOn(t, s, WithLossless(), WithBufferLimit(chunkBytes), WithFlushInterval(5*time.Millisecond))
	s.stall()
	const n = 300_000 // far more than the buffers and the writer's queue hold
	var recorded sync.WaitGroup
	recorded.Add(1)
	var done time.Time
	go func() {
		defer recorded.Done()
		for i := range n {
			tr.Instant("ev", Int("id", i))
		}
		done = time.Now()
	}()
	// Longer than the half second after which default mode drops.
	time.Sleep(2 * stallAfter)
	released := time.Now()
	s.release()
	recorded.Wait()
	assert.True(t, done.After(released), "recording waited for the sink")
	require.NoError(t, tr.Close())
	st := tr.Stats()
	assert.Zero(t, st.Dropped+st.Lost+st.Late)
	ids := idsOf(readClosed(t, path), "ev")
	require.Len(t, ids, n)
	for i := range n {
		require.Equal(t, 1, ids[i], "event %d", i)
	}
}

// TestLosslessCloseStaysBounded: a lossless tracer whose sink never
// recovers must still let Close return within the stop timeout, and the
// goroutine waiting to record must be let go.
func TestLosslessCloseStaysBounded(t *testing.T) {
	t.Parallel()
	s, _ := newGateSink(t)
	const timeout = 300 * time.Millisecond
	tr := newTracerOn(t, s, WithLossless(), WithBufferLimit(chunkBytes), WithStopTimeout(timeout))
	s.stall()
	defer s.release() // let the background Close finish
	var recorded sync.WaitGroup
	recorded.Add(1)
	go func() {
		defer recorded.Done()
		for i := range 300_000 {
			tr.Instant("ev", Int("id", i))
		}
	}()
	require.Eventually(t, func() bool { return tr.progress.waiters.Load() > 0 }, time.Minute, time.Millisecond,
		"the recording goroutine waits for room")
	start := time.Now()
	assert.ErrorIs(t, tr.Close(), ErrTimeout)
	assert.Less(t, time.Since(start), timeout+giveUpSlack)
	recorded.Wait() // returns: Close let the waiting goroutine go
	assert.Zero(t, tr.Stats().Dropped, "a lossless tracer never drops; what Close refused is Late")
	assert.Positive(t, tr.Stats().Late)
}

// TestDropsReportedAtClose: a tracer that dropped events says so once, at
// Close, through its error handler: how many, the share, and what to do.
func TestDropsReportedAtClose(t *testing.T) {
	t.Parallel()
	s, _ := newGateSink(t)
	var log collected
	tr := newTracerOn(t, s, WithBufferLimit(chunkBytes), WithErrorHandler(log.handle))
	s.stall()
	for i := range 300_000 {
		tr.Instant("ev", Int("id", i))
	}
	s.release()
	require.NoError(t, tr.Close())
	dropped := tr.Stats().Dropped
	require.Positive(t, dropped, "the buffers filled while the sink was stalled")
	msgs := log.messages()
	require.Len(t, msgs, 1)
	assert.Contains(t, msgs[0], "were dropped")
	assert.Contains(t, msgs[0], "WithLossless")

	// A tracer that dropped nothing says nothing.
	var quiet collected
	tr2, _ := newTestTracer(t, WithErrorHandler(quiet.handle))
	tr2.Span("x")()
	require.NoError(t, tr2.Close())
	assert.Empty(t, quiet.messages())
}

// TestBuffersGrowAndShrink: a burst that the sink cannot take at once
// grows the pool of chunks, up to its limit and no further, and once the
// burst is written the pool gives the memory back.
func TestBuffersGrowAndShrink(t *testing.T) {
	s, _ := newGateSink(t)
	const limit = 64 * chunkBytes
	clk := newTestClock()
	tr := newTracerOn(t, s, WithBufferLimit(limit), withClock(clk))
	defer tr.Close()
	chunks := func() int { return poolChunks(tr) }
	s.stall()
	// 60 chunks (two slots an event): the sink takes none of them, the
	// writer's queue about 2 MiB of JSON (some 23 chunks' worth), and the
	// rest stays in the pool.
	for i := range 30 * chunkSlots {
		tr.Instant("burst", Int("i", i))
	}
	grown := chunks()
	assert.Greater(t, grown, 30, "the pool grows under a burst")
	assert.LessOrEqual(t, grown, 64+tr.chainCount()+2, "and no further than its limit")
	s.release()
	require.NoError(t, tr.Flush())
	// Two trims: the first notes the chunks the burst left unused, the
	// second gives back those still unused.
	clk.passAfter(2 * time.Second)
	clk.passAfter(4 * time.Second)
	clk.pass() // that pass is over
	kept := tr.chainCount() + assistChunks + 2
	assert.LessOrEqual(t, chunks(), kept, "the pool gives the chunks of the burst back")
	// Nor does a chunk kept keep those after it alive: trim would then
	// free nothing of the burst (a chain's chunks point to the next).
	tr.pool.mu.Lock()
	for _, c := range tr.pool.free {
		assert.Nil(t, c.next.Load(), "a free chunk points to the rest of its chain")
	}
	tr.pool.mu.Unlock()
	for _, l := range *tr.chains.Load() {
		if l != nil {
			assert.Nil(t, l.first.Load(), "a chain holds its first chunk after the flusher read it")
		}
	}
	assert.Zero(t, tr.Stats().Dropped)
}

// TestBuffersStopAtTheSoftMark: a tight loop records faster than one core
// encodes, but while the sink keeps up its buffers stop at the soft mark
// (softChunks), well below the limit. Nothing is dropped.
func TestBuffersStopAtTheSoftMark(t *testing.T) {
	t.Parallel()
	spans := 1_000_000 // 61 MiB of records, twice the default limit
	if testing.Short() || raceEnabled {
		spans = 200_000
	}
	for _, goroutines := range []int{1, 8} {
		t.Run(fmt.Sprintf("goroutines=%d", goroutines), func(t *testing.T) {
			// On the test's clock no write counts as behind, however long
			// a starved writer waits for a P after one (the race detector
			// on a loaded machine: over slowWrite).
			tr, err := NewWithWriter(io.Discard, withClock(newTestClock()))
			require.NoError(t, err)
			peak := 0
			var wg sync.WaitGroup
			for g := range goroutines {
				wg.Go(func() {
					for i := range spans / goroutines {
						func() { defer tr.Span("x")() }()
						if g == 0 && i%chunkSlots == 0 {
							peak = max(peak, poolChunks(tr))
						}
					}
				})
			}
			wg.Wait()
			// The soft mark: 4 MiB, or four chunks a chain; every chain may
			// hold a chunk and the flusher two.
			chains := tr.chainCount()
			assert.LessOrEqual(t, peak, max(4<<20/chunkBytes, 4*chains, chains+2), "buffers past the soft mark for a sink that keeps up")
			require.NoError(t, tr.Close())
			st := tr.Stats()
			assert.Zero(t, st.Dropped)
			// Every span written, as one X event, beside a few of the
			// tracer's own (the process's name, the drop counter).
			assert.GreaterOrEqual(t, st.Events, uint64(spans), "%+v", st)
			assert.LessOrEqual(t, st.Events, uint64(spans+10), "%+v", st)
		})
	}
}

// TestBuffersGrowPastTheSoftMarkForASlowSink: once a write has taken over
// slowWrite (on the test's clock: as soon as it is held), the buffers grow
// past the soft mark, towards the limit, and every span reaches the file
// when the sink recovers.
func TestBuffersGrowPastTheSoftMarkForASlowSink(t *testing.T) {
	t.Parallel()
	s, path := newGateSink(t)
	clk := newTestClock()
	tr := newTracerOn(t, s, WithLossless(), withClock(clk))
	spans := 400_000 // 24 MiB of records
	if testing.Short() || raceEnabled {
		spans = 160_000 // 10 MiB
	}
	s.stall()
	go stallOnceHeld(s, clk) // the held write has taken over slowWrite
	released := false
	defer func() {
		if !released { // failed with the write held: let the goroutines end
			s.release()
		}
	}()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range spans / 4 {
				func() { defer tr.Span("x")() }()
			}
		})
	}
	mark := max(softChunks(DefaultBufferLimit/chunkBytes, tr.chainCount()), tr.chainCount()+2)
	require.Eventually(t, func() bool { return poolChunks(tr) > mark }, 20*time.Second, time.Millisecond,
		"a write held for long: the buffers grow past %d chunks", mark)
	s.release()
	released = true
	wg.Wait()
	assert.LessOrEqual(t, poolChunks(tr), DefaultBufferLimit/chunkBytes+tr.chainCount()+2)
	require.NoError(t, tr.Close())
	assert.Zero(t, tr.Stats().Dropped)
	assert.Equal(t, spans, countSpans(t, path, "x"))
}

// poolChunks returns how many chunks tr's pool has allocated.
func poolChunks(tr *Tracer) int {
	tr.pool.mu.Lock()
	defer tr.pool.mu.Unlock()
	return tr.pool.count
}

// countSpans counts the spans named name, a plain JSON string, in a
// closed trace: X events, and B events (a span open at a flush). The
// file must be strict JSON; the events are counted by the head the
// encoder starts each with (`{"name":NAME,"ph":"X"`), which no string
// inside an event can hold unescaped. It takes a fifth of readClosed's
// time on the hundreds of thousands of spans the tests here write.
func countSpans(t *testing.T, path, name string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.True(t, json.Valid(data), "a closed trace must be strict JSON")
	require.Regexp(t, `^[A-Za-z0-9_.]+$`, name, "a name written as it is")
	n := 0
	for _, ph := range []string{"X", "B"} {
		n += bytes.Count(data, []byte(`{"name":"`+name+`","ph":"`+ph+`"`))
	}
	return n
}

// TestTightLoopsLoseNothing runs the loops a benchmark is made of, bare
// spans as fast as the goroutines go, at the defaults and lossless: every
// span must reach the file, and nothing be dropped, however far the
// goroutines outrun the flusher.
func TestTightLoopsLoseNothing(t *testing.T) {
	t.Parallel()
	total := 200_000
	if testing.Short() || raceEnabled {
		total = 24_000
	}
	for _, tt := range []struct {
		name       string
		goroutines int
		opts       []Option
	}{
		{"1 goroutine", 1, nil},
		{"8 goroutines", 8, nil},
		{"8 goroutines, lossless", 8, []Option{WithLossless()}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tr, path := newTestTracer(t, tt.opts...)
			var wg sync.WaitGroup
			for range tt.goroutines {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range total / tt.goroutines {
						func() { defer tr.Span("x")() }()
					}
				}()
			}
			wg.Wait()
			require.NoError(t, tr.Close())
			assert.Zero(t, tr.Stats().Dropped)
			assert.Equal(t, total, countSpans(t, path, "x"))
		})
	}
}

// TestCPUBoundPoolLosesNothing keeps every P busy with twice as many
// goroutines, each recording a span around about 1.5µs of work: the
// flusher gets a time slice only now and then, and no span may be lost.
func TestCPUBoundPoolLosesNothing(t *testing.T) {
	spans := 300_000 // half a second of work on 2 Ps, with the flusher starved
	if testing.Short() || raceEnabled {
		spans = 100_000
	}
	tr, path := newTestTracer(t)
	workers := 2 * runtime.GOMAXPROCS(0)
	var recorded atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range spans / workers {
				end := tr.Span("work")
				spin(1500 * time.Nanosecond)
				end()
				recorded.Add(1)
			}
		}()
	}
	wg.Wait()
	require.NoError(t, tr.Close())
	assert.Zero(t, tr.Stats().Dropped)
	assert.EqualValues(t, recorded.Load(), countSpans(t, path, "work"))
	t.Logf("%d workers, %d spans", workers, recorded.Load())
}

// TestNoSpanLeftOpen is issue 10 item 5's program: two goroutines looping
// Span and Instant for 300 ms at default settings (here at most 50,000
// times each, to keep the test short). Every span reaches the
// file with its end (there were 28 without one, which Perfetto drew nested
// 16 deep though the program never nests).
func TestNoSpanLeftOpen(t *testing.T) {
	t.Parallel()
	tr, path := newTestTracer(t)
	var wg sync.WaitGroup
	var spans [2]int
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for spans[g] < 50_000 {
				end := tr.Span("work")
				tr.Instant("tick")
				end()
				spans[g]++
			}
		}()
	}
	wg.Wait()
	require.NoError(t, tr.Close())
	assert.Zero(t, tr.Stats().Dropped)
	evs := readClosed(t, path)
	for tid, ivs := range checkTracks(t, evs) { // every B has its E
		for i := 1; i < len(ivs); i++ {
			require.LessOrEqual(t, tracecheck.Nanos(ivs[i-1].End), tracecheck.Nanos(ivs[i].Start), "goroutine %d: spans never nest here", tid)
		}
	}
	n := 0
	for _, e := range evs {
		if e.Name == "work" && (e.Ph == "X" || e.Ph == "B") {
			n++
		}
	}
	assert.Equal(t, spans[0]+spans[1], n)
}
