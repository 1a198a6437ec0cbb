package tracer_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gotracer/tracer"
	"github.com/gotracer/tracer/internal/childtest"
	"github.com/gotracer/tracer/internal/tracecheck"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	uatomic "go.uber.org/atomic"
)

// User code the tracer calls: a Stringer's String method, the error
// handler, a Sink's Write and Close. The rule (docs/guarantees.md): none
// of it runs while the tracer holds a lock, or on a goroutine that is
// the only one able to free what it may wait for; and a panic in it never
// takes the program down. Each shape below froze, deadlocked or killed
// the program before (issue 31, defects 3, 4, 5 and 8).

const userCodeEnv = "TRACER_USERCODE_CHILD"

// stringerFunc is a Stringer whose String runs f.
type stringerFunc struct{ f func() string }

func (s *stringerFunc) String() string { return s.f() }

// failingWriter fails every write.
type failingWriter struct{}

func (failingWriter) Write(p []byte) (int, error) { return 0, errors.New("the disk is gone") }

// panickingSink panics in Write after its first (the trace's head), and
// in Close.
type panickingSink struct{ writes int }

func (s *panickingSink) Write(p []byte) (int, error) {
	if s.writes++; s.writes > 1 {
		panic("a bug in the sink")
	}
	return len(p), nil
}

func (s *panickingSink) Close() error { panic("a bug in Close") }

// userCodeShapes are the programs TestUserCodeChild runs, by name. Each
// records from goroutines in a loop, its user code doing what the name
// says, and returns how many events named "inside" the user code
// recorded, or -1 when it records none.
var userCodeShapes = map[string]func(t *testing.T, path string) (recorded int){
	// Defect 3: String records an instant. It ran on a recording
	// goroutine that assists the flusher with its lock held, and the
	// instant waited for a chunk only that goroutine could free.
	"String records": func(t *testing.T, path string) int {
		tr, err := tracer.New(path, tracer.WithBufferLimit(1<<20), tracer.WithLossless())
		require.NoError(t, err)
		var inside uatomic.Int64
		arg := &stringerFunc{func() string {
			inside.Inc()
			tr.Instant("inside")
			return "formatted"
		}}
		spread(8, 20_000, func(int) { tr.Span("work", tracer.Stringer("s", arg))() })
		require.NoError(t, tr.Close())
		return int(inside.Load())
	},
	// Defect 5: String flushes while a Flush encodes on its caller, with
	// no stop timeout: the inner Flush waited for the outer forever.
	"String flushes": func(t *testing.T, path string) int {
		tr, err := tracer.New(path, tracer.WithStopTimeout(0))
		require.NoError(t, err)
		arg := &stringerFunc{func() string {
			if err := tr.Flush(); err != nil && !errors.Is(err, tracer.ErrClosed) {
				t.Errorf("Flush in String: %v", err)
			}
			return "flushed"
		}}
		spread(4, 500, func(i int) {
			tr.Span("work", tracer.Stringer("s", arg))()
			if i%50 == 0 {
				require.NoError(t, tr.Flush())
			}
		})
		require.NoError(t, tr.Close())
		return -1
	},
	// String closes the tracer, once, while others record.
	"String closes": func(t *testing.T, path string) int {
		tr, err := tracer.New(path)
		require.NoError(t, err)
		var once sync.Once
		arg := &stringerFunc{func() string {
			once.Do(func() { require.NoError(t, tr.Close()) })
			return "closing"
		}}
		spread(4, 2_000, func(i int) {
			if i == 1_000 {
				tr.Span("work", tracer.Stringer("s", arg))()
			}
			tr.Span("work")()
		})
		require.NoError(t, tr.Close())
		assert.Positive(t, tr.Stats().Late, "recorded after Close began")
		return -1
	},
	// String panics, or sleeps: the panic's text is the arg's value, the
	// sleep is the caller's.
	"String panics or sleeps": func(t *testing.T, path string) int {
		tr, err := tracer.New(path)
		require.NoError(t, err)
		panics := &stringerFunc{func() string { panic("no text") }}
		sleeps := &stringerFunc{func() string { time.Sleep(time.Millisecond); return "slept" }}
		spread(4, 200, func(int) {
			tr.Span("work", tracer.Stringer("p", panics), tracer.Stringer("s", sleeps))()
		})
		require.NoError(t, tr.Close())
		return -1
	},
	// Defect 4: the error handler closes the tracer, told at Close of a
	// span still open: Close called it inside its once, and the handler's
	// Close waited for itself.
	"handler closes": func(t *testing.T, path string) int {
		var tr *tracer.Tracer
		var inner uatomic.Error
		var calls uatomic.Int64
		tr, err := tracer.New(path, tracer.WithErrorHandler(func(error) {
			calls.Inc()
			inner.Store(tr.Close())
		}))
		require.NoError(t, err)
		_ = tr.Span("never ended")
		spread(4, 1_000, func(int) { tr.Span("work")() })
		require.NoError(t, tr.Close())
		require.NoError(t, inner.Load(), "the handler's Close returns the first call's error")
		require.Positive(t, calls.Load())
		return -1
	},
	// Defect 8: the error handler panics. It killed the process, while a
	// String that panicked was recovered: both are recovered now.
	"handler panics": func(t *testing.T, path string) int {
		stderr := filepath.Join(filepath.Dir(path), "stderr")
		f, err := os.Create(stderr)
		require.NoError(t, err)
		saved := os.Stderr
		os.Stderr = f
		defer func() { os.Stderr = saved }()
		tr, err := tracer.NewWithWriter(&headOnly{}, tracer.WithErrorHandler(func(err error) {
			panic("a bug in the handler")
		}))
		require.NoError(t, err)
		spread(4, 1_000, func(i int) {
			tr.Span("work")()
			if i%100 == 0 {
				tr.Flush()
			}
		})
		tr.Close()
		assert.Positive(t, tr.Stats().SinkErrors)
		require.NoError(t, f.Close())
		out, err := os.ReadFile(stderr)
		require.NoError(t, err)
		assert.Equal(t, 1, strings.Count(string(out), "tracer: the error handler panicked: a bug in the handler"), "once: %s", out)
		fmt.Println("HANDLER_PANIC_REPORTED")
		return -1
	},
	// A Sink whose Write and Close panic: failed writes, counted and
	// reported.
	"sink panics": func(t *testing.T, path string) int {
		var log []error
		var mu sync.Mutex
		tr, err := tracer.NewWithSink(&panickingSink{}, tracer.WithErrorHandler(func(err error) {
			mu.Lock()
			log = append(log, err)
			mu.Unlock()
		}))
		require.NoError(t, err)
		spread(4, 1_000, func(int) { tr.Span("work")() })
		err = tr.Close()
		require.ErrorContains(t, err, "the sink's Close panicked: a bug in Close")
		assert.Positive(t, tr.Stats().SinkErrors)
		mu.Lock()
		defer mu.Unlock()
		require.NotEmpty(t, log)
		assert.ErrorContains(t, log[0], "the sink's Write panicked: a bug in the sink")
		return -1
	},
}

// headOnly takes the trace's head and fails every later write.
type headOnly struct{ writes int }

func (h *headOnly) Write(p []byte) (int, error) {
	if h.writes++; h.writes > 1 {
		return failingWriter{}.Write(p)
	}
	return len(p), nil
}

// spread runs f(i) for i in [0, n) on each of g goroutines and waits.
func spread(g, n int, f func(i int)) {
	var wg sync.WaitGroup
	for range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range n {
				f(i)
			}
		}()
	}
	wg.Wait()
}

// TestUserCodeChild runs one shape of userCodeShapes in a child process
// of TestUserCode: a freeze is a child that never ends.
func TestUserCodeChild(t *testing.T) {
	arg := os.Getenv(userCodeEnv)
	if arg == "" {
		t.Skip("helper process for TestUserCode")
	}
	shape, path, _ := strings.Cut(arg, "|")
	recorded := userCodeShapes[shape](t, path)
	fmt.Printf("INSIDE %d\n", recorded)
}

// TestUserCode runs each shape of user code in a child process, which
// must end (a generous bound: a freeze never ends), and checks what it
// wrote: strict JSON, nested, with every event the user code recorded.
func TestUserCode(t *testing.T) {
	t.Parallel()
	for shape := range userCodeShapes {
		t.Run(shape, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "trace.json")
			out, err := childtest.Run(t, "TestUserCodeChild", 60*time.Second, userCodeEnv+"="+shape+"|"+path)
			if errors.Is(err, childtest.ErrTimeout) {
				require.FailNow(t, "the program froze", "%v", err)
			}
			require.NoError(t, err)
			var inside int
			_, err = fmt.Sscanf(out[strings.Index(out, "INSIDE "):], "INSIDE %d", &inside)
			require.NoError(t, err, out)
			if strings.Contains(shape, "handler panics") {
				assert.Contains(t, out, "HANDLER_PANIC_REPORTED")
			}
			if _, err := os.Stat(path); err != nil {
				return // written to a writer of the test's
			}
			evs := tracecheck.Read(t, path)
			tracecheck.Tracks(t, evs)
			if inside >= 0 {
				assert.Equal(t, inside, len(tracecheck.Named(evs, "inside")), "every event the user code recorded")
			}
			works := tracecheck.Named(evs, "work")
			require.NotEmpty(t, works)
			switch shape {
			case "String panics or sleeps":
				assert.Equal(t, "%!v(PANIC=String method: no text)", works[0].Args["p"])
				assert.Equal(t, "slept", works[0].Args["s"])
			case "String records":
				assert.Equal(t, "formatted", works[0].Args["s"])
			}
		})
	}
}
