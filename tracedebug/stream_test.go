package tracedebug

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/gotracer/tracer"
	"github.com/gotracer/tracer/internal/tracecheck"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// slowResponse is a response whose client reads slowly: each Write waits
// for gate to be closed, if it is not nil, and then for delay; after a
// write deadline, writes fail. With gate set, the first Write closes
// writing first.
type slowResponse struct {
	*httptest.ResponseRecorder
	delay   time.Duration
	gate    chan struct{}
	writing chan struct{}
	once    sync.Once

	mu  sync.Mutex
	cut bool
}

func (w *slowResponse) Write(p []byte) (int, error) {
	if w.gate != nil {
		w.once.Do(func() { close(w.writing) })
		<-w.gate
	}
	time.Sleep(w.delay)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cut {
		return 0, os.ErrDeadlineExceeded
	}
	return w.ResponseRecorder.Write(p)
}

func (w *slowResponse) Flush() {}

func (w *slowResponse) SetWriteDeadline(time.Time) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.cut = true
	return nil
}

// TestSlowClientGetsItAll: a client that reads, however slowly, gets the
// capture whole, though taking what was left at the window's end lasts
// many stop timeouts; one that takes nothing is cut after one (see
// TestStalledClient).
func TestSlowClientGetsItAll(t *testing.T) {
	// A write lasts a twentieth of the stop timeout or less; what is
	// left at the window's end takes about three stop timeouts to drain.
	old := stopTimeout.Swap(time.Second)
	defer stopTimeout.Store(old)
	// A write lasts what the client makes it last, not what a loaded
	// machine does: on this clock it takes no time, however long the
	// writing goroutine waits for a CPU. The whole drain still takes
	// seconds of real time, many stop timeouts.
	clock := writeClock
	writeClock = func() time.Duration { return 0 }
	defer func() { writeClock = clock }()
	for _, tc := range []struct {
		name  string
		gzip  bool
		delay time.Duration // a write of 32 KiB, or a gzip block (many more, smaller)
	}{
		{"plain", false, 50 * time.Millisecond},
		{"gzip", true, 15 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &slowResponse{ResponseRecorder: httptest.NewRecorder(), delay: tc.delay}
			url := "/debug/tracer/trace?seconds=1"
			if tc.gzip {
				url += "&gzip=1"
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				serveTrace(w, httptest.NewRequest(http.MethodGet, url, nil))
			}()
			require.Eventually(t, tracer.Enabled, 20*time.Second, time.Millisecond, "the capture starts")
			// Megabytes at once, more than the client takes in the
			// window: what is left at its end takes several stop
			// timeouts to drain, a write at a time.
			for range 16000 {
				tracer.Span("pad", tracer.String("pad", "padding, padding, padding, padding, padding, padding"))()
			}
			<-done
			assert.False(t, w.cut, "the client read: its capture was not cut")
			body := w.Body.Bytes()
			if tc.gzip {
				var err error
				body, err = gunzip(body)
				require.NoError(t, err)
			}
			evs := tracecheck.Parse(t, body) // strict JSON: ended, not cut
			assert.NotEmpty(t, tracecheck.Named(evs, "pad"))
		})
	}
}

// gunzip returns the content of the gzip stream b: an error if it does
// not end.
func gunzip(b []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}

// TestClientFallenBehindGetsALoadableTrace: a client that reads, but
// slower than the program records, falls the tracer's buffer limit behind;
// the capture stops there and the client gets what came before, ended as
// a file cut by a crash, which both viewers load: with gzip=1 the member
// is ended too. Its connection is not cut, as a client that stopped
// reading is.
func TestClientFallenBehindGetsALoadableTrace(t *testing.T) {
	dir := t.TempDir()
	var paths []string // the captures, loaded at once: the importers take seconds to start
	for _, gz := range []bool{false, true} {
		t.Run(fmt.Sprintf("gzip=%v", gz), func(t *testing.T) {
			// The program's own tracer, whose buffer limit bounds the
			// capture's lag.
			tr, err := tracer.NewWithWriter(io.Discard, tracer.WithBufferLimit(256<<10), tracer.WithStopTimeout(0))
			require.NoError(t, err)
			require.NoError(t, tracer.SetDefault(tr))
			defer tracer.Stop()

			// The client takes nothing until the program has recorded
			// megabytes, far past the limit however slow the machine,
			// and then a write a millisecond.
			w := &slowResponse{ResponseRecorder: httptest.NewRecorder(), delay: time.Millisecond,
				gate: make(chan struct{}), writing: make(chan struct{})}
			url := "/debug/tracer/trace?seconds=1"
			if gz {
				url += "&gzip=1"
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				serveTrace(w, httptest.NewRequest(http.MethodGet, url, nil))
			}()
			// The first write, the trace's head, comes once the tee is
			// attached: what is recorded from then on is in the window.
			// (capturing is set before the tee is: spans recorded in
			// between, all of them on a loaded machine, are not.)
			select {
			case <-w.writing:
			case <-time.After(20 * time.Second):
				t.Fatal("the capture did not start")
			}
			for range 20000 {
				tracer.Span("pad", tracer.String("pad", "padding, padding, padding, padding, padding, padding"))()
			}
			close(w.gate)
			<-done
			assert.False(t, w.cut, "the client read: its connection was not cut")
			body := w.Body.Bytes()
			if gz {
				body, err = gunzip(body)
				require.NoError(t, err, "the gzip member ends")
			}
			assert.False(t, bytes.HasSuffix(bytes.TrimSpace(body), []byte("]")), "the capture was cut: it fell behind")
			evs := tracecheck.ReadBytes(t, body) // cut on an event's end
			assert.NotEmpty(t, tracecheck.Named(evs, "pad"))
			path := filepath.Join(dir, fmt.Sprintf("capture-gzip=%v.json", gz))
			require.NoError(t, os.WriteFile(path, body, 0o644))
			paths = append(paths, path)
		})
	}
	tracecheck.ImportQuick(t, paths...) // both viewers load them
}
