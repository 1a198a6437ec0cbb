package tracer

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gotracer/tracer/internal/tracecheck"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/atomic"
)

// flakyWriter fails every third write: with no byte written, or, if
// short is set, after writing half of it.
type flakyWriter struct {
	buf   bytes.Buffer
	calls int
	short bool
}

func (w *flakyWriter) Write(p []byte) (int, error) {
	w.calls++
	if w.calls%3 != 0 {
		return w.buf.Write(p)
	}
	if w.short {
		w.buf.Write(p[:len(p)/2])
		return len(p) / 2, fmt.Errorf("short write")
	}
	return 0, fmt.Errorf("write failed")
}

// faultWorkload records spans that cross flushes, so that failed writes
// hold B events whose E events come later, and flushes after each step:
// four writes a round, so that every step meets a failing write.
func faultWorkload(t *testing.T, tr *Tracer, rounds int) {
	tr.SetGoroutineName("worker")
	for i := 0; i < rounds; i++ {
		outer := tr.LongSpan("outer", Int("i", i))
		tr.Flush() // errors go to the handler
		for j := 0; j < 20; j++ {
			tr.Span("inner", Int("j", j))()
		}
		tr.Flush()
		outer()
		tr.Flush()
		tr.Instant("round", Int("i", i))
		tr.Flush()
	}
}

// parseStream parses a trace that may lack its end.
func parseStream(t testing.TB, data []byte) []event {
	t.Helper()
	data = asArray(data)
	if bytes.HasSuffix(data, []byte("}\n]\n")) {
		data = append(bytes.TrimSuffix(data, []byte("\n]\n")), ",\n"...)
	}
	return readCrashed(t, data)
}

// TestFailingWriter checks that a writer failing every third write, at
// once or part-way, gets a valid trace of the other writes, with every E
// event after its B, while the errors are reported and counted.
func TestFailingWriter(t *testing.T) {
	for _, tt := range []struct {
		name        string
		short, gzip bool
		lost        bool // events are lost; a gzip stream keeps what a short write left
	}{
		{"fails", false, false, true},
		{"short writes", true, false, true},
		{"gzip fails", false, true, true},
		{"gzip short writes", true, true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := &flakyWriter{short: tt.short}
			var log errorLog
			opts := []Option{WithErrorHandler(log.handle), withClock(newTestClock())}
			if tt.gzip {
				opts = append(opts, WithGzip(1))
			}
			tr, err := NewWithWriter(w, opts...)
			require.NoError(t, err)
			faultWorkload(t, tr, 30)
			tr.Close()

			st := tr.Stats()
			assert.Greater(t, st.SinkErrors, uint64(10))
			if tt.lost {
				assert.Positive(t, st.Lost)
			} else {
				assert.Zero(t, st.Lost)
			}
			assert.EqualValues(t, st.SinkErrors, log.len(), "every failure is reported")
			data := w.buf.Bytes()
			if tt.gzip {
				data = bytes.Join(gunzipMembers(t, data), nil)
			}
			evs := parseStream(t, data)
			checkTracks(t, evs)
			assert.Greater(t, len(byPhase(evs, "X")), 30*20/2, "the writes that went through are there")
			// Every outer span is in the file once, and none whose B is
			// there lacks its E: a failed write's B and E events are
			// written again (issue 10 items 5 and 6).
			seen := map[float64]string{}
			for _, e := range byName(evs, "outer") {
				i := e.Args["i"]
				if e.Ph == "E" {
					continue
				}
				require.Empty(t, seen[i.(float64)], "outer %v written twice", i)
				seen[i.(float64)] = e.Ph
			}
			assert.Equal(t, len(byPhase(byName(evs, "outer"), "B")), len(byPhase(byName(evs, "outer"), "E")), "every B ends")
			assert.Equal(t, "worker", find(t, evs, "M", "thread_name").Args["name"])
		})
	}
}

// TestFailedWriteWritesBeginsAgain checks the mechanism TestFailingWriter
// relies on: the B event of a failed write is written again, so its E is
// not orphaned.
func TestFailedWriteWritesBeginsAgain(t *testing.T) {
	w := &flakyWriter{}
	tr, err := NewWithWriter(w, WithErrorHandler(func(error) {}), withClock(newTestClock()))
	require.NoError(t, err)
	require.NoError(t, tr.Flush()) // nothing to write: w.calls stays 1
	end := tr.LongSpan("lost B")
	require.NoError(t, tr.Flush()) // call 2: the B goes out
	end2 := tr.LongSpan("B in a failed write")
	require.Error(t, tr.Flush()) // call 3 fails
	end2()
	end()
	require.NoError(t, tr.Close())
	evs := parseStream(t, w.buf.Bytes())
	checkTracks(t, evs)
	find(t, evs, "E", "lost B")
	find(t, evs, "X", "B in a failed write")
}

func TestDevFull(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	for _, path := range []string{"/dev/full", filepath.Join(t.TempDir(), "full.json.gz")} {
		if strings.HasSuffix(path, ".gz") {
			// A .gz path that is /dev/full under another name.
			require.NoError(t, os.Symlink("/dev/full", path))
		}
		_, err := New(path)
		assert.ErrorIs(t, err, syscall.ENOSPC, "New reports that not even the head can be written")
	}
}

// TestRemovedDirectory removes the directory of a rotated trace while it
// records: rotating fails, is reported once per attempt, and recording goes
// on into the open file.
func TestRemovedDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "traces")
	require.NoError(t, os.Mkdir(dir, 0o755))
	var log errorLog
	tr, err := New(filepath.Join(dir, "trace.json"), WithMaxFileSize(minFileSize), WithErrorHandler(log.handle), withClock(newTestClock()))
	require.NoError(t, err)
	require.NoError(t, os.RemoveAll(dir))
	for i := 0; i < 50; i++ {
		for j := 0; j < 10; j++ {
			tr.Span("work")()
		}
		require.NoError(t, tr.Flush(), "the events still go to the open file")
	}
	require.NoError(t, tr.Close())
	st := tr.Stats()
	assert.Greater(t, log.len(), 0)
	assert.Less(t, log.len(), 15, "a failed rotation is tried again after another max size, not at every write")
	assert.EqualValues(t, log.len(), st.SinkErrors)
	// The spans, and the goroutine's name, written again for each file
	// a rotation was to start.
	assert.GreaterOrEqual(t, st.Events, uint64(50*10+1))
	assert.LessOrEqual(t, st.Events, uint64(50*10+1+log.len()))
	assert.Zero(t, st.Lost)
	assert.ErrorIs(t, log.errs[0], os.ErrNotExist)
}

// TestDefaultErrorHandlerPrintsOnce checks that the default handler prints
// one line per distinct error however often it fails.
func TestDefaultErrorHandlerPrintsOnce(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	stderr := os.Stderr
	os.Stderr = w
	defer func() { os.Stderr = stderr }()

	tr, err := NewWithWriter(&flakyWriter{}, withClock(newTestClock()))
	require.NoError(t, err)
	for i := 0; i < 30; i++ {
		tr.Instant("x")
		tr.Flush()
	}
	tr.Close()
	os.Stderr = stderr
	w.Close()
	var lines []string
	for s := bufio.NewScanner(r); s.Scan(); {
		lines = append(lines, s.Text())
	}
	assert.Greater(t, tr.Stats().SinkErrors, uint64(5))
	assert.Equal(t, []string{"tracer: write failed (further identical errors are counted in Stats, not printed)"}, lines)
}

// cutOnceWriter takes only the first 10 bytes of its second write and
// fails it, as a pipe or socket may; every other write goes through.
type cutOnceWriter struct {
	buf   bytes.Buffer
	calls int
}

func (w *cutOnceWriter) Write(p []byte) (int, error) {
	w.calls++
	if w.calls == 2 && len(p) > 10 {
		n := 10 // inside a gzip member that holds the B event
		if i := bytes.Index(p, []byte(`{"name":"cut"`)); i >= 0 {
			n = i + 10 // inside the B event, after the goroutine's name
		}
		w.buf.Write(p[:n])
		return n, fmt.Errorf("short write")
	}
	return w.buf.Write(p)
}

// TestPartialWriteIsNotWrittenTwice is issue 10 item 6: a stream whose
// write is cut inside a B event gets the rest of that event with the next
// write, so the span must not be written again (it was, as an X, beside a
// B that never ended) and nothing counts as lost.
func TestPartialWriteIsNotWrittenTwice(t *testing.T) {
	for _, gz := range []bool{false, true} {
		t.Run(fmt.Sprintf("gzip=%v", gz), func(t *testing.T) {
			w := &cutOnceWriter{}
			opts := []Option{WithErrorHandler(func(error) {}), withClock(newTestClock())}
			if gz {
				opts = append(opts, WithGzip(1))
			}
			tr, err := NewWithWriter(w, opts...)
			require.NoError(t, err)
			end := tr.LongSpan("cut")
			require.Error(t, tr.Flush()) // write 2, cut inside the B
			end()
			require.NoError(t, tr.Close())
			st := tr.Stats()
			assert.EqualValues(t, 1, st.SinkErrors)
			assert.Zero(t, st.Lost, "the cut event reached the writer")
			data := w.buf.Bytes()
			if gz {
				data = bytes.Join(gunzipMembers(t, data), nil)
			}
			evs := parseStream(t, data)
			checkTracks(t, evs)
			var phases []string
			for _, e := range byName(evs, "cut") {
				phases = append(phases, e.Ph)
			}
			assert.Equal(t, []string{"B", "E"}, phases)
			assert.Empty(t, byName(evs, "tracer.dropped"), "nothing dropped: no counter")
		})
	}
}

// gatedWriter holds each write until the test lets it go, and fails the
// ones it is told to, having written nothing.
type gatedWriter struct {
	buf     bytes.Buffer
	arrived chan struct{}
	release chan error // nil: write; an error: fail with it
}

func (w *gatedWriter) Write(p []byte) (int, error) {
	w.arrived <- struct{}{}
	if err := <-w.release; err != nil {
		return 0, err
	}
	return w.buf.Write(p)
}

// TestQueuedEndOfLostBegin makes the encoder queue a span's E while the
// write that holds its B is still under way, and then fails that write:
// the E is in a batch queued before anyone knew the B was lost. It must
// not reach the file as an E without its B (which breaks chrome://tracing:
// seen once in CI through a user io.Writer on a disk that filled), but as
// an instant, with the end's args.
func TestQueuedEndOfLostBegin(t *testing.T) {
	w := &gatedWriter{arrived: make(chan struct{}), release: make(chan error)}
	go func() { <-w.arrived; w.release <- nil }() // the header
	clk := newTestClock()
	tr, err := NewWithWriter(w, WithErrorHandler(func(error) {}), withClock(clk))
	require.NoError(t, err)
	end := tr.LongSpan("long")
	clk.pass()
	<-w.arrived // the batch with the B: the writer waits in it
	end(Int("status", 200))
	clk.pass() // queues the E while the writer waits
	require.Eventually(t, func() bool { return len(tr.flusher.out.queue) > 0 },
		10*time.Second, time.Millisecond, "a pass queues the batch with the E")
	w.release <- errors.New("disk full") // the B's batch is lost
	go func() {
		for range w.arrived {
			w.release <- nil
		}
	}()
	require.ErrorContains(t, tr.Close(), "disk full")
	close(w.arrived)

	evs := parseStream(t, w.buf.Bytes())
	checkTracks(t, evs) // no E without its B
	assert.Empty(t, tracecheck.Phase(tracecheck.Named(evs, "long"), "E"))
	inst := tracecheck.Phase(tracecheck.Named(evs, "long"), "i")
	require.Len(t, inst, 1, "the span's end is in the trace, as an instant")
	assert.EqualValues(t, 200, inst[0].Args["status"])
}

// TestLostEndKeepsItsPlace fails the write that holds a span's E, whose B
// is in the file, while the encoder has already queued the B of the
// goroutine's next span of the same name. The lost E must reach the file
// before that B: written after it, it would end the newer span, before
// that span began (seen in TestReentry under load: "E before its B").
func TestLostEndKeepsItsPlace(t *testing.T) {
	w := &gatedWriter{arrived: make(chan struct{}), release: make(chan error)}
	pass := func() { <-w.arrived; w.release <- nil }
	go pass() // the header
	clk := newTestClock()
	tr, err := NewWithWriter(w, WithErrorHandler(func(error) {}), withClock(clk))
	require.NoError(t, err)
	end1 := tr.LongSpan("job", Int("n", 1))
	clk.pass()
	pass() // the batch with the first B
	end1()
	clk.pass()
	<-w.arrived // the batch with the first E: held
	end2 := tr.LongSpan("job", Int("n", 2))
	clk.pass()
	require.Eventually(t, func() bool { return len(tr.flusher.out.queue) > 0 },
		10*time.Second, time.Millisecond, "a pass queues the batch with the second B")
	w.release <- errors.New("disk full") // the first E is lost
	go func() {
		for range w.arrived {
			w.release <- nil
		}
	}()
	require.Eventually(t, func() bool { return tr.Stats().SinkErrors > 0 }, time.Minute, time.Millisecond,
		"the write of the first E failed")
	end2()
	require.ErrorContains(t, tr.Close(), "disk full")
	close(w.arrived)

	evs := parseStream(t, w.buf.Bytes())
	tracks := checkTracks(t, evs) // E after its own B, and nesting
	jobs := tracecheck.SlicesNamed(tracks, "job")
	require.Len(t, jobs, 2, "both spans, each with its end")
	assert.EqualValues(t, 1, jobs[0].Args["n"])
	assert.EqualValues(t, 2, jobs[1].Args["n"])
	assert.LessOrEqual(t, tracecheck.Nanos(jobs[0].End), tracecheck.Nanos(jobs[1].Start), "the first ends before the second begins")
}

// TestBrokenPipeIdlePassesWriteNothing checks that a tracer whose sink
// stays broken (a pipe whose reader died) writes nothing more once the
// program records nothing: its periodic passes do not write again the B
// events of open spans that the failures lost, to fail again, count them
// lost again and tell the error handler again, on every pass for as long
// as the program runs.
func TestBrokenPipeIdlePassesWriteNothing(t *testing.T) {
	pr, pw, err := os.Pipe()
	require.NoError(t, err)
	defer pw.Close()
	var told atomic.Int64
	clock := newTestClock()
	tr, err := NewWithWriter(pw, WithErrorHandler(func(error) { told.Add(1) }), withClock(clock))
	require.NoError(t, err)
	require.NoError(t, pr.Close()) // the reader dies: every write fails with EPIPE
	var ends []func(...Arg)
	for i := 0; i < 4; i++ {
		ends = append(ends, tr.Span("open", Int("i", i)))
	}
	for i := 0; i < 100; i++ {
		tr.Span("done")()
	}
	clock.ageAll()
	require.Error(t, tr.Flush()) // written, failed and waited for
	before, toldBefore := tr.Stats(), told.Load()
	require.NotZero(t, before.Lost)
	for i := 0; i < 20; i++ {
		clock.pass() // after a pass begins, the one before it is done
	}
	clock.pass()
	after := tr.Stats()
	assert.Equal(t, before.Flushes, after.Flushes, "writes by idle passes")
	assert.Equal(t, before.SinkErrors, after.SinkErrors, "failed writes by idle passes")
	assert.Equal(t, before.Lost, after.Lost, "events counted lost again by idle passes")
	assert.Equal(t, toldBefore, told.Load(), "errors reported by idle passes")

	// Recording again writes again, with the B events the failure lost.
	tr.Instant("again")
	clock.pass()
	for _, end := range ends {
		end()
	}
	assert.Error(t, tr.Close())
	assert.Greater(t, tr.Stats().Flushes, after.Flushes)
}
