//go:build linux

package tracer_test

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gotracer/tracer"
	"github.com/gotracer/tracer/internal/childtest"
	"github.com/gotracer/tracer/internal/tracecheck"
	"github.com/gotracer/tracer/traceslog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	uatomic "go.uber.org/atomic"
)

const reentryEnv = "TRACER_REENTRY_CHILD"

// reentrySpansAfterFault is how many spans the goroutines of
// TestReentryChild must record once the disk is full.
const reentrySpansAfterFault = 100000

// The shapes of user code that runs on the tracer's writer goroutine and
// records, as users write it without knowing where it runs.
var reentryShapes = []string{
	"slog",    // the error handler logs through slog, with traceslog installed
	"instant", // the error handler records an instant
	"flush",   // the error handler flushes "to be safe"
	"writer",  // an io.Writer that wraps the file and times each write with a span
}

// spanWriter is an io.Writer that records a span around each write.
type spanWriter struct {
	w  io.Writer
	tr *uatomic.Pointer[tracer.Tracer]
}

func (s spanWriter) Write(p []byte) (int, error) {
	defer s.tr.Load().Span("write", tracer.Int("bytes", len(p)))()
	return s.w.Write(p)
}

// TestReentryChild is the process TestReentry runs: its tracer writes to
// a disk that fills while two goroutines record spans in a loop, and user
// code on the writer goroutine records (or flushes) at every failed write.
// It prints how many spans the goroutines recorded once the disk was full,
// and how many more failed writes the handler saw, then frees the disk and
// closes the tracer.
func TestReentryChild(t *testing.T) {
	arg := os.Getenv(reentryEnv)
	if arg == "" {
		t.Skip("helper process for TestReentry")
	}
	parts := strings.SplitN(arg, ",", 3)
	shape, dir := parts[0], parts[2]
	path := filepath.Join(dir, "trace.json")

	// Leave a little of the disk free: the file fills it within a few
	// flushes.
	filler := filepath.Join(dir, "filler")
	fillerSize, err := strconv.ParseInt(os.Getenv(reentryEnv+"_FILL"), 10, 64)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filler, make([]byte, fillerSize), 0o600))

	var tr uatomic.Pointer[tracer.Tracer]
	var faults uatomic.Int64
	var flushErr uatomic.Error
	logger := slog.New(traceslog.NewHandler(slog.NewTextHandler(io.Discard, nil), nil))
	handler := func(err error) {
		faults.Inc()
		switch shape {
		case "slog":
			logger.Error("writing the trace failed", "err", err)
		case "instant":
			tr.Load().Instant("disk full", tracer.Err(err))
		case "flush":
			if err := tr.Load().Flush(); err != nil && flushErr.Load() == nil {
				flushErr.Store(err)
			}
		}
	}
	opts := []tracer.Option{
		tracer.WithErrorHandler(handler),
		tracer.WithFlushInterval(5 * time.Millisecond),
		tracer.WithBufferLimit(1 << 20),
		tracer.WithStopTimeout(0), // a freeze shows as one, not as ErrTimeout
	}
	if parts[1] == "lossless" {
		opts = append(opts, tracer.WithLossless())
	}
	var t0 *tracer.Tracer
	if shape == "writer" {
		f, err := os.Create(path)
		require.NoError(t, err)
		t0, err = tracer.NewWithWriter(spanWriter{w: f, tr: &tr}, opts...)
		require.NoError(t, err)
		defer f.Close()
	} else {
		t0, err = tracer.New(path, opts...)
		require.NoError(t, err)
	}
	tr.Store(t0)
	require.NoError(t, tracer.SetDefault(t0)) // traceslog records into the default tracer

	var spans uatomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t0.SetGoroutineName(fmt.Sprintf("worker %d", g))
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				t0.Span("work", tracer.Int("i", i), tracer.String("pad", "some padding to fill the disk sooner"))()
				spans.Inc()
			}
		}()
	}
	// Wait for the disk to fill, then for the handler to run at several
	// more failed writes while the goroutines record: progress, not a rate,
	// so that a loaded machine is only slower. A freeze never gets there.
	deadline := time.Now().Add(30 * time.Second)
	waitFor := func(done func() bool) {
		for !done() && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
	}
	waitFor(func() bool { return faults.Load() > 0 })
	require.Positive(t, faults.Load(), "the disk never filled")
	before, firstFaults := spans.Load(), faults.Load()
	waitFor(func() bool { return faults.Load() >= firstFaults+10 && spans.Load() >= before+reentrySpansAfterFault })
	fmt.Printf("AFTER_FAULT %d %d\n", spans.Load()-before, faults.Load()-firstFaults)
	close(stop)
	wg.Wait()
	require.NoError(t, os.Remove(filler)) // space is back: Close writes the rest
	if err := flushErr.Load(); err != nil {
		fmt.Printf("FLUSH_ERR %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
	}
	err = tracer.Stop()
	fmt.Printf("CLOSE_ERR_LINES %d\n", strings.Count(fmt.Sprint(err), "\n")+1)
	s := t0.Stats()
	fmt.Printf("STATS %d %d %d\n", s.Events, s.Lost, s.Dropped)
}

// TestReentry runs each shape of user code that records on the writer
// goroutine, with and without WithLossless, against a tmpfs that fills:
// the other goroutines go on recording once the disk is full, Flush from
// the error handler says why it did not wait, and the file is valid once
// space is back and the tracer closed.
func TestReentry(t *testing.T) {
	t.Parallel()
	const size = 8 << 20
	for _, shape := range reentryShapes {
		for _, mode := range []string{"default", "lossless"} {
			t.Run(shape+"/"+mode, func(t *testing.T) {
				t.Parallel() // children that mostly wait
				dir := childtest.Tmpfs(t, size)
				out, err := childtest.Run(t, "TestReentryChild", 60*time.Second,
					reentryEnv+"="+shape+","+mode+","+dir,
					reentryEnv+"_FILL="+strconv.Itoa(size-256<<10))
				if errors.Is(err, childtest.ErrTimeout) {
					require.FailNow(t, "recording froze", "%v", err)
				}
				require.NoError(t, err)
				var after, faults int64
				_, err = fmt.Sscanf(out[strings.Index(out, "AFTER_FAULT"):], "AFTER_FAULT %d %d", &after, &faults)
				require.NoError(t, err, out)
				assert.GreaterOrEqual(t, after, int64(reentrySpansAfterFault), "spans recorded once the disk was full")
				assert.GreaterOrEqual(t, faults, int64(10), "failed writes the handler saw while they recorded")
				if shape == "flush" {
					require.Contains(t, out, "FLUSH_ERR", "Flush from the error handler must return an error")
					assert.Contains(t, out, "own goroutine")
				}
				var lines int
				_, err = fmt.Sscanf(out[strings.Index(out, "CLOSE_ERR_LINES"):], "CLOSE_ERR_LINES %d", &lines)
				require.NoError(t, err, out)
				assert.LessOrEqual(t, lines, 3, "Close's error names each kind of error once: %s", out)

				path := filepath.Join(dir, "trace.json")
				evs := tracecheck.Read(t, path) // strict JSON
				tracecheck.Tracks(t, evs)       // nesting and B/E order per goroutine
				assert.NotEmpty(t, tracecheck.Named(evs, "work"))
				t.Logf("%s: %d spans and %d failed writes after the fault, %d events in the file", shape, after, faults, len(evs))
			})
		}
	}
}
