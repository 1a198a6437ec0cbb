package tracer

import (
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gotracer/tracer/internal/tracecheck"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// onOtherGoroutine runs f on a new goroutine and waits for it.
func onOtherGoroutine(f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	<-done
}

// TestEndMisuse is issue 11 item 1: an end function called again, on
// another goroutine, or after its token went to another span, ends no
// span: the live span it could be taken for ends when its own end comes,
// the misuse is counted in Stats.Unmatched, and reported once.
func TestEndMisuse(t *testing.T) {
	tests := []struct {
		name      string
		misuses   uint64
		run       func(tr *Tracer)
		wantSpans []string // X events, in the file, each on a track that checks out
	}{
		{
			name:    "called twice",
			misuses: 1,
			run: func(tr *Tracer) {
				end := tr.Span("a")
				end()
				end()
				tr.Span("b")()
			},
			wantSpans: []string{"a", "b"},
		},
		{
			name:    "an early end and the deferred one",
			misuses: 1,
			run: func(tr *Tracer) {
				defer tr.Span("outer")()
				func() {
					end := tr.Span("request")
					defer end()
					tr.Span("decode")()
					end() // the error path ends it early
					tr.Span("after")()
				}()
			},
			wantSpans: []string{"outer", "request", "decode", "after"},
		},
		{
			name:    "on another goroutine",
			misuses: 1,
			run: func(tr *Tracer) {
				end := tr.Span("a")
				onOtherGoroutine(func() { end() })
				time.Sleep(time.Millisecond)
				end() // the real end
			},
			wantSpans: []string{"a"},
		},
		{
			name:    "a stale end after its token went to another goroutine's span",
			misuses: 1,
			run: func(tr *Tracer) {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // one chain: tokens in turn
				endA := tr.Span("A")
				endA()
				// Every other token of the chain, so the next span gets A's.
				for range tokenBlockSize - 1 {
					tr.Span("fill")()
				}
				started, release, done := make(chan uint64), make(chan struct{}), make(chan struct{})
				go func() {
					defer close(done)
					end := tr.Span("B")
					started <- goroutineID()
					<-release
					time.Sleep(time.Millisecond)
					end()
				}()
				gidB := <-started
				// The premise: B holds the token A's stale end names.
				tok := (*tr.chains.Load())[0].token(0)
				assert.Equal(t, held(gidB), tok.state, "B took A's token")
				endA() // stale
				close(release)
				<-done
			},
			wantSpans: []string{"A", "B"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var log errorLog
			tr, path := newTestTracer(t, WithErrorHandler(log.handle))
			tc.run(tr)
			require.NoError(t, tr.Close())

			evs := readClosed(t, path)
			checkTracks(t, evs)
			assert.Empty(t, byPhase(evs, "B"), "every span ended, none was cut")
			for _, name := range tc.wantSpans {
				if name == "fill" {
					continue
				}
				x := find(t, evs, "X", name)
				assert.Greater(t, x.Dur, 0.0, name)
			}
			if b := byName(evs, "B"); len(b) == 1 {
				// The stale end came before B's own: B lasts past the sleep.
				assert.GreaterOrEqual(t, b[0].Dur, 1000.0, "B ends at its own end")
			}
			st := tr.Stats()
			assert.Equal(t, tc.misuses, st.Unmatched)
			assert.Zero(t, st.Forgotten+st.Dropped)
			assert.Len(t, log.matching("end function"), 1, "reported once: %v", log.errs)
		})
	}
}

// TestRepeatedMisuseReportedOnce: misuse in a loop is counted every time
// and reported once.
func TestRepeatedMisuseReportedOnce(t *testing.T) {
	var log errorLog
	tr, path := newTestTracer(t, WithErrorHandler(log.handle))
	for range 1000 {
		end := tr.Span("twice")
		end()
		end()
	}
	require.NoError(t, tr.Close())
	assert.Len(t, byName(readClosed(t, path), "twice"), 1000)
	assert.Equal(t, uint64(1000), tr.Stats().Unmatched)
	assert.Len(t, log.errs, 1, "%v", log.errs)
}

// TestNeverEndedSpanReported: a span never ended is written as a B event
// with no end, and Close says so once.
func TestNeverEndedSpanReported(t *testing.T) {
	var log errorLog
	tr, path := newTestTracer(t, WithErrorHandler(log.handle))
	_ = tr.Span("forgot the ()")
	tr.Span("ended")()
	require.NoError(t, tr.Close())
	evs := readClosed(t, path)
	find(t, evs, "B", "forgot the ()")
	find(t, evs, "X", "ended")
	got := log.matching("still open at Close")
	require.Len(t, got, 1, "%v", log.errs)
	assert.Contains(t, got[0], `1 span was still open at Close, among them "forgot the ()"`)
}

// TestManySpansHeldOnOneP: more spans open at once on one P than a block
// has tokens get more tokens, and every one ends its own span.
func TestManySpansHeldOnOneP(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	tr, path := newTestTracer(t)
	const n = 3*tokenBlockSize + 100
	ends := make([]func(...Arg), n)
	for i := range ends {
		ends[i] = tr.Span("held")
	}
	for i := len(ends) - 1; i >= 0; i-- {
		ends[i](Int("i", i))
	}
	require.NoError(t, tr.Close())
	assert.GreaterOrEqual(t, len(*(*tr.chains.Load())[0].blocks.Load()), 4)
	evs := readClosed(t, path)
	checkTracks(t, evs)
	assert.Len(t, byName(evs, "held"), n)
	st := tr.Stats()
	assert.Zero(t, st.Unmatched+st.Forgotten+st.Dropped)
}

// TestForgottenSpanTokenComesBack: the flusher gives back the token of a
// span it forgot, so spans never ended cannot grow the token blocks
// without bound; the forgotten span's own end is then unmatched.
func TestForgottenSpanTokenComesBack(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	tr, _ := newTestTracer(t)
	var end func(...Arg)
	var gid uint64
	onOtherGoroutine(func() {
		end, gid = tr.Span("forgotten"), goroutineID()
	})
	tok := (*tr.chains.Load())[0].token(0)
	require.Equal(t, held(gid), tok.state)
	tr.release(tok.id, gid)
	assert.Zero(t, tok.state&1, "free again")
	tr.release(tok.id, gid) // twice: nothing
	onOtherGoroutine(func() { end() })
	require.NoError(t, tr.Close())
	assert.Equal(t, uint64(1), tr.Stats().Unmatched)
}

// TestStaleEndBound is the bound on stale ends at its edge: with most of a
// P's tokens held by spans in flight (a server's requests), an early end
// then the deferred one, called up to reuseAfter-1 spans later while a
// newer span of the same goroutine is open, ends nothing, and the newer
// span ends when its own end comes.
func TestStaleEndBound(t *testing.T) {
	for _, between := range []int{0, 255, 511, 1023, reuseAfter - 1} {
		t.Run(strconv.Itoa(between), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // one chain
			tr, path := newTestTracer(t)
			// In flight: a block's worth of requests, each on its
			// goroutine, of which one in sixteen has ended, so free
			// tokens are scattered.
			var wg sync.WaitGroup
			release := make([]chan struct{}, tokenBlockSize)
			ended := make([]chan struct{}, tokenBlockSize)
			for i := range release {
				release[i], ended[i] = make(chan struct{}), make(chan struct{})
				started := make(chan struct{})
				wg.Add(1)
				go func() {
					defer wg.Done()
					end := tr.LongSpan("in flight")
					close(started)
					<-release[i]
					end()
					close(ended[i])
				}()
				<-started
			}
			for i := 0; i < len(release); i += 16 {
				close(release[i])
				<-ended[i]
				release[i] = nil
			}
			end := tr.Span("request")
			end() // the error path
			for range between {
				tr.Span("other")()
			}
			newer := tr.LongSpan("newer")
			end() // the deferred end: stale
			assert.Equal(t, uint64(1), tr.Stats().Unmatched, "the stale end ended nothing")
			newer()
			for _, r := range release {
				if r != nil {
					close(r)
				}
			}
			wg.Wait()
			require.NoError(t, tr.Close())
			assert.Equal(t, uint64(1), tr.Stats().Unmatched, "every other end matched its own span")
			tracks := checkTracks(t, readClosed(t, path)) // every B has its E, nested
			newerSlices := tracecheck.SlicesNamed(tracks, "newer")
			require.Len(t, newerSlices, 1)
			assert.Greater(t, newerSlices[0].End, newerSlices[0].Start)
			assert.Len(t, tracecheck.SlicesNamed(tracks, "in flight"), tokenBlockSize)
		})
	}
}

// TestHeldSpansBoundTokens is issue 31's first defect: spans held for a
// goroutine's life (a worker pool's `defer tracer.Span("worker")()`) back
// to back on one P made every lap of the chain's tokens add a block, about
// about 48 bytes a span started, without bound. The tokens a P holds are
// bounded by the spans open on it at once, never by the spans started
// (maxTokens): checked for runs of held spans of every length around the
// old 16-token threshold, and for spans held at random.
func TestHeldSpansBoundTokens(t *testing.T) {
	if testing.Short() {
		t.Skip("a million spans per case")
	}
	for _, heldSpans := range []int{15, 16, 20, 64, 1000, tokenBlockSize + 10} {
		t.Run(strconv.Itoa(heldSpans), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // one chain
			tr, _ := newTestTracer(t)
			ends := make([]func(...Arg), heldSpans)
			for i := range ends {
				ends[i] = tr.Span("worker")
			}
			for range 100_000 { // 25 laps of a block
				tr.Span("job")()
			}
			got := len(*(*tr.chains.Load())[0].blocks.Load())
			assert.LessOrEqual(t, got, maxTokens(heldSpans)/tokenBlockSize,
				"token blocks with %d spans held", heldSpans)
			for i := len(ends) - 1; i >= 0; i-- {
				ends[i]()
			}
			require.NoError(t, tr.Close())
			assert.Zero(t, tr.Stats().Unmatched)
		})
	}
	t.Run("worker pool", func(t *testing.T) {
		// 32 workers, each holding a span for its life, on two Ps.
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
		tr, _ := newTestTracer(t)
		jobs := make(chan int)
		var wg sync.WaitGroup
		for range 32 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer tr.Span("worker")()
				for range jobs {
					tr.Span("job")()
				}
			}()
		}
		for i := range 200_000 {
			jobs <- i
		}
		close(jobs)
		wg.Wait()
		for p, l := range *tr.chains.Load() {
			if l != nil {
				assert.LessOrEqual(t, len(*l.blocks.Load()), maxTokens(32)/tokenBlockSize, "P %d", p)
			}
		}
		require.NoError(t, tr.Close())
		assert.Zero(t, tr.Stats().Unmatched)
	})
	t.Run("random", func(t *testing.T) {
		seed := time.Now().UnixNano()
		t.Logf("seed %d (TestHeldSpansBoundTokens/random)", seed)
		rng := rand.New(rand.NewPCG(uint64(seed), 0))
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
		tr, _ := newTestTracer(t)
		tr.Span("first")() // makes the chain
		l := (*tr.chains.Load())[0]
		// Each held span on a goroutine of its own, as a server's
		// requests: ended in any order, they end in order on their track.
		hold := func() (end func()) {
			started, release, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
			go func() {
				defer close(done)
				defer tr.Span("held")()
				close(started)
				<-release
			}()
			<-started
			return func() { close(release); <-done }
		}
		var open []func()
		peak := 0
		for range 150 {
			// A burst that holds some spans, ends some of those held at
			// random, and runs short ones between.
			for range rng.IntN(64) {
				open = append(open, hold())
			}
			peak = max(peak, len(open))
			for n := rng.IntN(len(open) + 1); n > 0; n-- {
				i := rng.IntN(len(open))
				open[i]()
				open[i] = open[len(open)-1]
				open = open[:len(open)-1]
			}
			for range rng.IntN(2 * reuseAfter) {
				tr.Span("short")()
			}
			require.LessOrEqual(t, len(*l.blocks.Load()), maxTokens(peak)/tokenBlockSize,
				"seed %d: %d spans held at most", seed, peak)
		}
		for _, end := range open {
			end()
		}
		require.NoError(t, tr.Close())
		assert.Zero(t, tr.Stats().Unmatched, "seed %d", seed)
	})
}

// TestEndClosureLayout: the end functions a block makes without
// allocating (newTokenBlock) are laid out as Go lays out a method value, and
// end the span of their own token.
func TestEndClosureLayout(t *testing.T) {
	require.NotZero(t, endCode, "this Go lays out a method value's closure otherwise: every span allocates its end function")
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	tr, path := newTestTracer(t)
	ends := make([]func(...Arg), 100)
	for i := range ends {
		ends[i] = tr.Span("held", Int("i", i))
	}
	for i := len(ends) - 1; i >= 0; i-- {
		ends[i](Int("end", i))
	}
	require.NoError(t, tr.Close())
	assert.Zero(t, tr.Stats().Unmatched)
	for _, e := range byName(readClosed(t, path), "held") {
		assert.Equal(t, e.Args["i"], e.Args["end"], "each end function ends its own span")
	}
	if !raceEnabled {
		l := (*tr.chains.Load())[0]
		assert.Equal(t, 1.0, testing.AllocsPerRun(10, func() { newTokenBlock(l, 0) }), "a block is one allocation")
	}
}
