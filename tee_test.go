package tracer

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"testing"

	"github.com/gotracer/tracer/internal/tracecheck"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTeeHoldsItsWindow: a tee's trace stands alone and holds what was
// recorded while it ran: the goroutines named before it, the spans open
// across its start (whose B the file had already, or not) and across its
// end, clipped to its window, the async operations open across it, every
// span recorded during it; and the tracer's own files hold everything,
// as without the tee, for each kind of file.
func TestTeeHoldsItsWindow(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts []Option
	}{
		{"plain", nil},
		{"gzip", []Option{WithGzip(1)}},
		{"rotation", []Option{WithMaxFileSize(minFileSize)}},
		{"lanes", []Option{WithLanes()}},
		{"flight recorder", nil}, // its file: a dump taken after the tee
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, "trace.json")
			opts := append(tc.opts, withClock(newTestClock()))
			var tr *Tracer
			var fr *FlightRecorder
			var err error
			if tc.name == "flight recorder" {
				fr, err = NewFlightRecorder(FlightRecorderConfig{MaxEvents: 1 << 16}, opts...)
				tr = fr.Tracer()
			} else {
				tr, err = New(path, opts...)
			}
			require.NoError(t, err)

			// Before: named goroutines, a span whose B is in the file,
			// a young span, an async operation, spans that ended.
			started := make(chan struct{})
			release := make(chan struct{})
			var wg sync.WaitGroup
			wg.Go(func() {
				tr.SetGoroutineName("holder")
				endOld := tr.Span("old") // its B is written before the tee
				started <- struct{}{}
				<-release // the tee has started
				tr.Span("inside old")()
				<-release // during the tee
				endOld()
			})
			<-started
			quiet := make(chan struct{})
			wg.Go(func() { // unnamed, its span's B written, silent during the tee
				endQuiet := tr.Span("quiet")
				started <- struct{}{}
				<-quiet
				endQuiet()
			})
			<-started
			defer close(quiet)
			tr.Span("before")()
			op := tr.AsyncBegin("job", Category("jobs"))
			ageAll(tr)
			require.NoError(t, tr.Flush())
			young := tr.Span("young") // open across the tee, never old

			var tee bytes.Buffer
			te, err := tr.Tee(&tee)
			require.NoError(t, err)
			release <- struct{}{}
			workers := make(chan struct{}, 4)
			for g := range 4 {
				wg.Go(func() {
					defer func() { workers <- struct{}{} }()
					tr.SetGoroutineName(fmt.Sprintf("worker %d", g))
					for i := range 300 {
						end := tr.Span("during", Int("g", g), Int("i", i))
						tr.Span("inner")()
						end()
					}
				})
			}
			release <- struct{}{}
			for range 4 {
				<-workers
			}
			op.End()
			require.NoError(t, tr.Flush())
			require.NoError(t, te.Stop())
			require.NoError(t, te.Stop(), "a second Stop returns the first one's error")
			tr.Span("after")()
			young()
			if fr != nil {
				require.NoError(t, fr.WriteFile(path))
			}
			require.NoError(t, tr.Close())

			evs := tracecheck.Parse(t, tee.Bytes())
			tracks := tracecheck.Tracks(t, evs)
			tracecheck.Async(t, evs)
			names := map[string]int{}
			for _, e := range evs {
				if e.Ph == "X" || e.Ph == "B" || e.Ph == "i" {
					names[e.Name]++
				}
			}
			assert.Equal(t, 1200, names["during"], "every span recorded during the tee")
			assert.Equal(t, 1200, names["inner"])
			assert.Zero(t, names["after"], "nothing after its Stop")
			assert.Zero(t, names["before"], "nothing it was sent before its start")
			assert.Len(t, tracecheck.SlicesNamed(tracks, "old"), 1, "the span open across its start")
			assert.Len(t, tracecheck.Phase(tracecheck.Named(evs, "young"), "B"), 1, "the span open across its end, a B from its end")
			assert.Len(t, tracecheck.SlicesNamed(tracks, "young"), 1, "ended there")
			assert.Equal(t, 1, names["inside old"])
			require.Len(t, tracecheck.Phase(tracecheck.Named(evs, "job"), "b"), 1, "the operation open across its start begins again in its head")
			if tc.name != "lanes" {
				threads := map[string]bool{}
				for _, e := range tracecheck.Named(evs, "thread_name") {
					threads[e.Args["name"].(string)] = true
				}
				assert.True(t, threads["holder"], "a goroutine named before the tee is named in it: %v", threads)
				assert.True(t, threads["worker 3"], "%v", threads)
				// No track of the tee's trace is unnamed: the goroutines
				// the tracer named before it are named again in it.
				named := map[uint64]bool{}
				for _, e := range tracecheck.Named(evs, "thread_name") {
					named[e.Tid] = true
				}
				for _, e := range evs {
					if e.Ph != "M" && e.Tid != 0 {
						assert.True(t, named[e.Tid], "%s %q on track %d, which the tee's trace does not name", e.Ph, e.Name, e.Tid)
					}
				}
				assert.Len(t, tracecheck.Phase(tracecheck.Named(evs, "quiet"), "B"), 1)
			}

			// The tracer's files, as without the tee.
			files, err := filepath.Glob(filepath.Join(dir, "trace*"))
			require.NoError(t, err)
			sort.Strings(files)
			all := map[string]int{}
			inFile := map[string]tracecheck.Slice{}
			for _, f := range files {
				var fe []event
				if tc.name == "gzip" {
					fe = readClosedGzip(t, f)
				} else {
					fe = readClosed(t, f)
				}
				for _, ss := range tracecheck.Tracks(t, fe) {
					for _, sl := range ss {
						inFile[sl.Name] = sl
					}
				}
				for _, e := range fe {
					if e.Ph == "X" || e.Ph == "E" { // a rotated file repeats B events
						all[e.Name]++
					}
				}
			}
			for _, name := range []string{"before", "after", "old", "young", "inside old"} {
				assert.Equal(t, 1, all[name], name)
			}
			assert.Equal(t, 1200, all["during"])

			// The tee's trace is its window: the spans that began before
			// it begin at its start, those open at its end end there.
			from, to := teeWindow(tr, te)
			checkWindow(t, evs, from, to)
			ns := tracecheck.Nanos
			teeOld, teeYoung := tracecheck.SlicesNamed(tracks, "old")[0], tracecheck.SlicesNamed(tracks, "young")[0]
			assert.Less(t, ns(inFile["old"].Start), ns(teeOld.Start), "old began before the window: in the tee it begins at the window's start")
			assert.Less(t, ns(teeOld.Start), ns(from))
			assert.Equal(t, ns(inFile["old"].End), ns(teeOld.End), "and ends when it ended")
			assert.Less(t, ns(inFile["young"].Start), ns(teeYoung.Start), "young too")
			assert.Equal(t, ns(to), ns(teeYoung.End), "young, open at the window's end, ends there")
			assert.Less(t, ns(teeYoung.End), ns(inFile["young"].End))
			teePath := filepath.Join(dir, "tee.json")
			require.NoError(t, os.WriteFile(teePath, tee.Bytes(), 0o644))
			importInHeavyRun(t, teePath)
		})
	}
}

// blockingWriter blocks every Write until release is closed.
type blockingWriter struct {
	release chan struct{}
	mu      sync.Mutex
	buf     bytes.Buffer
}

func (w *blockingWriter) Write(p []byte) (int, error) {
	<-w.release
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

// TestTeeFallsBehind: a tee whose writer does not keep up is cut once it
// holds the buffer limit: Stop says so, the tee's trace ends as a file
// cut by a crash does, and the tracer's file has every event.
func TestTeeFallsBehind(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "trace.json")
	tr, err := New(path, WithBufferLimit(1<<20), withClock(newTestClock()))
	require.NoError(t, err)
	w := &blockingWriter{release: make(chan struct{})}
	te, err := tr.Tee(w)
	require.NoError(t, err)
	const n = 40000 // about 4 MB of JSON
	for i := range n {
		tr.Span("work", Int("i", i))()
		if i%5000 == 0 {
			require.NoError(t, tr.Flush(), "the tracer never waits for its tee")
		}
	}
	require.NoError(t, tr.Flush())
	close(w.release)
	err = te.Stop()
	require.ErrorContains(t, err, "fell behind")
	require.NoError(t, tr.Close())

	assert.Len(t, tracecheck.Named(readClosed(t, path), "work"), n, "the file has every span")
	evs := tracecheck.ReadBytes(t, w.buf.Bytes()) // a cut trace, repaired as a crashed file is
	got := len(tracecheck.Named(evs, "work"))
	assert.Greater(t, got, 0)
	assert.Less(t, got, n)
}

// TestTeeWriterFails: a write error ends the tee, Stop returns it, and
// the tracer goes on with its file untouched; a panic in Write is an
// error too.
func TestTeeWriterFails(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		w    io.Writer
		want string
	}{
		{"error", &failingWriter{}, "write failed"}, // after the head
		{"panic", panicWriter{}, "panicked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "trace.json")
			var log errorLog
			tr, err := New(path, WithErrorHandler(log.handle), withClock(newTestClock()))
			require.NoError(t, err)
			te, err := tr.Tee(tc.w)
			require.NoError(t, err)
			for i := range 3 {
				tr.Span("work", Int("i", i))()
				require.NoError(t, tr.Flush())
				if err := te.Flush(); err != nil { // once the writer failed
					require.ErrorContains(t, err, tc.want)
				}
			}
			require.ErrorContains(t, te.Stop(), tc.want)
			tr.Span("work")()
			require.NoError(t, tr.Close())
			assert.Len(t, tracecheck.Named(readClosed(t, path), "work"), 4)
			assert.Zero(t, log.len(), "the tee's errors are its own")
		})
	}
}

type panicWriter struct{}

func (panicWriter) Write([]byte) (int, error) { panic("boom") }

// TestTeeEndsAtClose: Close ends the tees still attached, whose traces
// are then whole; Stop after it waits for the writer and returns nil; a
// Tee of a closed tracer is refused.
func TestTeeEndsAtClose(t *testing.T) {
	t.Parallel()
	var log errorLog
	tr, err := NewWithWriter(io.Discard, WithErrorHandler(log.handle), withClock(newTestClock()))
	require.NoError(t, err)
	var a, b bytes.Buffer
	ta, err := tr.Tee(&a)
	require.NoError(t, err)
	tr.Span("first")()
	require.NoError(t, tr.Flush())
	tb, err := tr.Tee(&b)
	require.NoError(t, err)
	end := tr.Span("open at close")
	tr.Span("second")()
	require.NoError(t, tr.Close())
	end()
	require.NoError(t, ta.Stop())
	require.NoError(t, tb.Stop())
	require.NoError(t, ta.Flush())
	assert.Len(t, log.matching("still open at Close"), 1)

	ea := tracecheck.Parse(t, a.Bytes())
	tracecheck.Tracks(t, ea)
	assert.Len(t, tracecheck.Named(ea, "first"), 1)
	assert.Len(t, tracecheck.Named(ea, "second"), 1)
	assert.Len(t, tracecheck.Phase(tracecheck.Named(ea, "open at close"), "B"), 1)
	eb := tracecheck.Parse(t, b.Bytes())
	assert.Empty(t, tracecheck.Named(eb, "first"), "sent before the second tee started")
	assert.Len(t, tracecheck.Named(eb, "second"), 1)

	_, err = tr.Tee(&a)
	require.ErrorIs(t, err, ErrClosed)
	var nilTracer *Tracer
	_, err = nilTracer.Tee(&a)
	require.Error(t, err)
}

// TestTeeClipsASpanPublishedLate: a goroutine may read the clock for a
// span before the cut of the pass that attaches a tee and publish it
// after that pass loaded its chain (a pass takes what was published when
// it looked). The span is the newest of its goroutine, and it nests in
// the tee's trace inside those the pass saw open, a nanosecond after the
// innermost, each written as X (it ends in the window) or as B once old;
// an instant or an async operation published so begins at the window's
// start.
func TestTeeClipsASpanPublishedLate(t *testing.T) {
	t.Parallel()
	for _, old := range []bool{false, true} {
		t.Run(fmt.Sprintf("old=%v", old), func(t *testing.T) {
			t.Parallel()
			clock := newTestClock()
			path := filepath.Join(t.TempDir(), "trace.json")
			tr, err := New(path, withClock(clock))
			require.NoError(t, err)
			var buf bytes.Buffer
			endOuter := tr.Span("outer")
			endMiddle := tr.Span("middle")
			te, err := tr.Tee(&buf)
			require.NoError(t, err)
			from := te.s.from.Load()
			endLate := tr.Span("late")
			stampAt(t, tr, kindSpan, "late", from-1)
			tr.Instant("instant")
			stampAt(t, tr, kindInstant, "instant", from-1)
			op := tr.AsyncBegin("op", Category("ops"))
			stampAt(t, tr, kindAsyncBegin, "op", from-1)
			op.End()
			stampAt(t, tr, kindAsyncEnd, "op", from-1)
			if old {
				clock.ageAll()
				require.NoError(t, tr.Flush())
			}
			tr.Span("inside")()
			endLate()
			endMiddle()
			endOuter()
			require.NoError(t, te.Stop())
			require.NoError(t, tr.Close())

			evs := checkStandsAlone(t, buf.Bytes(), true)
			tracks := tracecheck.Tracks(t, evs)
			ns := tracecheck.Nanos
			f, to := teeWindow(tr, te)
			checkWindow(t, evs, f, to)
			var starts []int64
			for _, name := range []string{"outer", "middle", "late"} {
				s := tracecheck.SlicesNamed(tracks, name)
				require.Len(t, s, 1, name)
				starts = append(starts, ns(s[0].Start))
			}
			at := from - tr.flusher.base // from in the trace's nanoseconds
			assert.Equal(t, []int64{at - 3, at - 2, at - 1}, starts, "outermost first, a nanosecond apart, the late one innermost")
			late := tracecheck.SlicesNamed(tracks, "late")[0]
			inside := tracecheck.SlicesNamed(tracks, "inside")
			require.Len(t, inside, 1)
			assert.True(t, late.Start <= inside[0].Start && inside[0].End <= late.End, "inside in late")

			for _, name := range []string{"instant", "op"} {
				for _, e := range tracecheck.Named(evs, name) {
					assert.Equal(t, at, ns(e.Ts), "%s %q: at the window's start", e.Ph, name)
				}
			}
			assert.Len(t, tracecheck.Named(evs, "op"), 2)

			file := tracecheck.Tracks(t, tracecheck.Read(t, path))
			whole := tracecheck.SlicesNamed(file, "late")
			require.Len(t, whole, 1)
			assert.Equal(t, at-1, ns(whole[0].Start), "the file keeps its time")
		})
	}
}

// TestTeeClipsAnEndPublishedLate: a span open when a tee attached, whose
// goroutine read the clock for its end before the cut and published it
// after the attach pass, ends at the window's start in the tee's trace,
// and so do the spans above it that end with it (ended out of order):
// inner first, at one time, so both viewers close them in order. Clipped
// back to their starts, the outer would end before the inner.
func TestTeeClipsAnEndPublishedLate(t *testing.T) {
	t.Parallel()
	clock := newTestClock()
	path := filepath.Join(t.TempDir(), "trace.json")
	tr, err := New(path, withClock(clock))
	require.NoError(t, err)
	var buf bytes.Buffer
	tr.Span("before")()
	endOuter := tr.Span("outer")
	_ = tr.Span("middle") // ends with outer, never on its own: its B must be written for that
	clock.ageAll()
	require.NoError(t, tr.Flush())
	te, err := tr.Tee(&buf)
	require.NoError(t, err)
	from := te.s.from.Load()
	endOuter()
	stampAt(t, tr, kindEnd, "", from-10) // before both clipped starts
	tr.Span("after")()
	require.NoError(t, te.Stop())
	require.NoError(t, tr.Close())

	evs := checkStandsAlone(t, buf.Bytes(), true)
	f, to := teeWindow(tr, te)
	checkWindow(t, evs, f, to)
	at := from - tr.flusher.base // from in the trace's nanoseconds
	ns := tracecheck.Nanos
	var ends []string
	for _, e := range evs {
		if e.Ph == "E" {
			assert.Equal(t, at, ns(e.Ts), "E %q: at the window's start", e.Name)
			ends = append(ends, e.Name)
		}
	}
	assert.Equal(t, []string{"middle", "outer"}, ends)
	tracks := tracecheck.Tracks(t, evs)
	for _, name := range []string{"outer", "middle", "after"} {
		assert.Len(t, tracecheck.SlicesNamed(tracks, name), 1, name)
	}
	assert.Empty(t, tracecheck.SlicesNamed(tracks, "before"), "ended before the window")
}

// stampAt makes the newest event of kind k named name (any end, for
// kindEnd, whose slot holds no name), recorded and not yet taken by a
// pass, read its clock at nanotime ns instead.
func stampAt(t *testing.T, tr *Tracer, k kind, name string, ns int64) {
	t.Helper()
	tr.flusher.mu.Lock() // for each chain's read position
	defer tr.flusher.mu.Unlock()
	var last *slot
	for _, l := range *tr.recorder.chains.Load() {
		if l == nil || l.cur.Load() == full { // full: a chain that has recorded nothing
			continue
		}
		c, i := l.cur.Load(), uint64(0)
		if c == l.read {
			i = l.pos // what a pass took before is not waiting
		}
		for ; i < c.head; i += c.slots[i].slots() {
			if s := &c.slots[i]; s.kind() == k && (k == kindEnd || s.str() == name) {
				last = s
			}
		}
	}
	require.NotNil(t, last, "no event %q of kind %d waiting for a pass", name, k)
	last.num = uint64(ns) | rawNanotime
}

// stopInWrite calls its tee's Stop and Flush, then its tracer's Flush,
// from its first Write.
type stopInWrite struct {
	te   chan *Tee
	tr   *Tracer
	errs chan error
	once sync.Once
}

func (w *stopInWrite) Write(p []byte) (int, error) {
	w.once.Do(func() {
		te := <-w.te
		w.errs <- te.Stop()
		w.errs <- te.Flush()
		w.tr.Span("in the tee's writer")()
		w.errs <- w.tr.Flush()
	})
	return len(p), nil
}

// TestTeeReentrant: the tee's writer calling its Stop or Flush would
// wait for itself: they return ErrReentrant; the tracer's own Flush
// works there.
func TestTeeReentrant(t *testing.T) {
	t.Parallel()
	tr, err := NewWithWriter(io.Discard, withClock(newTestClock()))
	require.NoError(t, err)
	w := &stopInWrite{te: make(chan *Tee, 1), tr: tr, errs: make(chan error, 3)}
	te, err := tr.Tee(w)
	require.NoError(t, err)
	w.te <- te
	require.ErrorIs(t, <-w.errs, ErrReentrant)
	require.ErrorIs(t, <-w.errs, ErrReentrant)
	require.NoError(t, <-w.errs, "the tracer's Flush works there: the tracer never waits for a tee")
	require.NoError(t, te.Stop())
	require.NoError(t, tr.Close())
}

// TestTeeLeavesOutFlowsBegunBefore: a flow whose start the tee's trace
// does not hold (it began before the tee) has neither its steps nor its
// end there, which catapult would warn of; a flow begun during the tee
// is there whole, or up to the tee's end.
func TestTeeLeavesOutFlowsBegunBefore(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "trace.json")
	tr, err := New(path, withClock(newTestClock()))
	require.NoError(t, err)
	flowIn := func(name string, f func()) { // on a goroutine of its own, in a span
		done := make(chan struct{})
		go func() { defer close(done); defer tr.Span(name)(); f() }()
		<-done
	}
	var before, during, across Flow
	flowIn("producer", func() { before = tr.FlowBegin("before"); before.Step() })
	// A SpanHandle's flow from its parent, which ended before the tee,
	// to the span its async slice began in, which ended before it too.
	parent := tr.StartSpan("parent")
	var child SpanHandle
	flowIn("spawner", func() { child = parent.StartChild("child") })
	parent.End()
	require.NoError(t, tr.Flush())

	var buf bytes.Buffer
	te, err := tr.Tee(&buf)
	require.NoError(t, err)
	flowIn("relay", func() { before.Step() })
	flowIn("consumer", func() { before.End() })
	flowIn("producer", func() { during = tr.FlowBegin("during"); across = tr.FlowBegin("across") })
	flowIn("consumer", func() { during.End() })
	flowIn("finisher", func() { child.End() })
	require.NoError(t, te.Stop())
	flowIn("consumer", func() { across.End() })
	require.NoError(t, tr.Close())

	evs := tracecheck.Parse(t, buf.Bytes())
	assert.Empty(t, tracecheck.Named(evs, "before"), "no step or end of a flow begun before the tee")
	phases := func(name string) (ph []string) {
		for _, e := range tracecheck.Named(evs, name) {
			ph = append(ph, e.Ph)
		}
		return ph
	}
	assert.Equal(t, []string{"s", "f"}, phases("during"))
	assert.Equal(t, []string{"s"}, phases("across"))
	assert.Equal(t, []string{"b", "e"}, phases("child"), "the SpanHandle, without the flow whose slices the tee has not")
	file := readClosed(t, path)
	assert.Len(t, tracecheck.Named(file, "before"), 4, "the file has the flow whole: s, two t, f")
	var childFlow []string
	for _, e := range tracecheck.Named(file, "child") {
		if e.Ph == "s" || e.Ph == "f" {
			childFlow = append(childFlow, e.Ph)
		}
	}
	assert.Equal(t, []string{"s", "f"}, childFlow, "the file has the SpanHandle's flow")
	teePath := filepath.Join(t.TempDir(), "tee.json")
	require.NoError(t, os.WriteFile(teePath, buf.Bytes(), 0o644))
	importInHeavyRun(t, teePath)
}

// A gateStringer's String waits until release is closed, as a Stringer
// arg that takes long (a lock, a slow format) does; entered counts the
// calls under way.
type gateStringer struct {
	entered *sync.WaitGroup
	release chan struct{}
}

func (s gateStringer) String() string {
	s.entered.Done()
	<-s.release
	return "released"
}

// TestTeeClipsSpansSharingAToken: a span's end function frees its token
// before it records the end, and formatting a Stringer arg of the end
// may take long; once reuseAfter more spans have started on the chain,
// another goroutine's span takes the token while the flusher still has
// the first span open. Spans open when a tee attaches must each begin
// where their own goroutine's clipping puts them: keyed by token alone,
// a deep span took the clip of another goroutine's innermost span, two
// nanoseconds before the window, and began after the spans inside it
// (torture seed 44).
func TestTeeClipsSpansSharingAToken(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "trace.json")
	tr, err := New(path, withClock(newTestClock()))
	require.NoError(t, err)
	defer tr.Close()

	// Spans on many goroutines, on every P, whose ends wait in String
	// with their tokens free.
	const ending = 64
	var entered, ended sync.WaitGroup
	gate := gateStringer{entered: &entered, release: make(chan struct{})}
	entered.Add(ending)
	ended.Add(ending)
	for range ending {
		go func() {
			defer ended.Done()
			end := tr.Span("ending")
			end(Stringer("s", gate))
		}()
	}
	entered.Wait()

	// Spans nested deep enough that the chains hand out the free tokens
	// again, while the flusher has the "ending" spans open still.
	shared := func() int {
		tr.flusher.mu.Lock()
		defer tr.flusher.mu.Unlock()
		owner := map[uint64]uint64{}
		n := 0
		for gid, s := range tr.flusher.open.stacks {
			for _, o := range *s {
				if g, ok := owner[o.token]; ok && g != gid {
					n++
				}
				owner[o.token] = gid
			}
		}
		return n
	}
	var ends []func(...Arg)
	for len(ends) < 64*tokenBlockSize {
		for range tokenBlockSize {
			ends = append(ends, tr.Span("deep"))
		}
		require.NoError(t, tr.Flush())
		if shared() > 0 {
			break
		}
	}
	require.Positive(t, shared(), "no token held by open spans of two goroutines after %d deep spans", len(ends))
	t.Logf("%d deep spans; %d tokens held by spans of two goroutines", len(ends), shared())

	var buf bytes.Buffer
	te, err := tr.Tee(&buf)
	require.NoError(t, err)
	for i := len(ends) - 1; i >= 0; i-- {
		ends[i]()
	}
	close(gate.release)
	ended.Wait()
	require.NoError(t, te.Stop())
	require.NoError(t, tr.Close())

	evs := checkStandsAlone(t, buf.Bytes(), true)
	from, to := teeWindow(tr, te)
	checkWindow(t, evs, from, to)
	deep := tracecheck.SlicesNamed(tracecheck.Tracks(t, evs), "deep")
	require.Len(t, deep, len(ends))
	slices.SortFunc(deep, func(a, b tracecheck.Slice) int { return cmp.Compare(a.Start, b.Start) })
	for i := 1; i < len(deep); i++ {
		require.LessOrEqual(t, deep[i].End, deep[i-1].End, "deep span %d ends after the one around it", i)
	}
}
