package tracedebug_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gotracer/tracer"
	"github.com/gotracer/tracer/internal/tracecheck"
	"github.com/gotracer/tracer/tracedebug"
	"github.com/gotracer/tracer/tracehttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/atomic"
)

// The tests share the default tracer, which a capture sets: none runs in
// parallel.

// app is the program under test: a server whose every request records a
// span with its id and a nested step, through tracehttp and the
// package-level functions, as a service instrumented once would.
func app() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /work", func(w http.ResponseWriter, r *http.Request) {
		defer tracer.Span("work", tracer.String("req", r.Header.Get("X-Req")))()
		func() {
			defer tracer.Span("step")()
			runtime.Gosched()
		}()
		_, _ = io.WriteString(w, "done\n")
	})
	return tracehttp.Middleware(mux)
}

// request is one request of the load, as its client saw it.
type request struct {
	id         string
	start, end time.Time
}

// load sends requests to url from n goroutines, each a request every
// millisecond at most (a bounded load, so that a capture holds thousands
// of requests, not hundreds of thousands), until stop is called, which
// returns every request that completed.
func load(t *testing.T, url string, n int) (stop func() []request) {
	var (
		mu   sync.Mutex
		done []request
		wg   sync.WaitGroup
	)
	quit := make(chan struct{})
	for g := range n {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-quit:
					return
				default:
				}
				id := fmt.Sprintf("%d-%d", g, i)
				req, err := http.NewRequest("GET", url+"/work", nil)
				if !assert.NoError(t, err) {
					return
				}
				req.Header.Set("X-Req", id)
				start := time.Now()
				resp, err := http.DefaultClient.Do(req)
				if !assert.NoError(t, err) {
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				mu.Lock()
				done = append(done, request{id, start, time.Now()})
				mu.Unlock()
				time.Sleep(time.Millisecond)
			}
		})
	}
	return func() []request {
		close(quit)
		wg.Wait()
		return done
	}
}

// one sends one request to the app at url, with the id req.
func one(t *testing.T, url, req string) {
	t.Helper()
	r, err := http.NewRequest("GET", url+"/work", nil)
	require.NoError(t, err)
	r.Header.Set("X-Req", req)
	resp, err := http.DefaultClient.Do(r)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// debugServer serves the app and, on the same mux, tracedebug's handler.
func debugServer(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	mux.Handle("/debug/tracer/", tracedebug.Handler())
	mux.Handle("/", app())
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// get fetches url and returns the status and the body.
func get(t *testing.T, ctx context.Context, url string) (int, []byte, http.Header) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, body, resp.Header
}

// idle waits until no capture runs: the default tracer is off again, and
// the index at srv's /debug/tracer/ (or index) says no capture runs (the
// handler has returned).
func idle(t *testing.T, srv *httptest.Server, index ...string) {
	t.Helper()
	url := srv.URL + "/debug/tracer/"
	if len(index) > 0 {
		url = srv.URL + index[0]
	}
	require.Eventually(t, func() bool {
		if tracer.Enabled() {
			return false
		}
		code, body, _ := get(t, context.Background(), url)
		return code == http.StatusOK && !bytes.Contains(body, []byte("A capture is running"))
	}, 20*time.Second, time.Millisecond, "the capture still runs")
}

// TestCaptureOfAServerUnderLoad captures a real server on 127.0.0.1 while
// it serves: the capture is strict JSON, every goroutine's spans nest, both
// importers load it, and it holds every request that ran inside its window;
// so does the program's own file when it traces already (the capture is
// a tee of its tracer).
func TestCaptureOfAServerUnderLoad(t *testing.T) {
	srv := debugServer(t)
	dir := t.TempDir()
	var paths []string // loaded in both importers at the end: one browser for both
	for _, tc := range []struct {
		name     string
		gz, file bool
	}{
		{"plain", false, false},
		{"gzip", true, false},
		{"beside the program's file", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gz := tc.gz
			own := filepath.Join(dir, "own.json")
			if tc.file {
				require.NoError(t, tracer.Start(own))
				one(t, srv.URL, "before")
			}
			stop := load(t, srv.URL, 2)
			const d = 500 * time.Millisecond
			url := srv.URL + "/debug/tracer/trace?seconds=" + strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
			if gz {
				url += "&gzip=1"
			}
			sent := time.Now()
			resp, err := http.Get(url)
			require.NoError(t, err)
			headers := time.Now() // the capture's tracer is the default by now
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.NoError(t, err)
			reqs := stop()
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
			assert.Contains(t, resp.Header.Get("Content-Disposition"), "attachment; filename=\"trace-")
			path := filepath.Join(dir, fmt.Sprintf("capture-%d.json", len(paths)))
			if gz {
				assert.Equal(t, "application/gzip", resp.Header.Get("Content-Type"))
				// One gzip member: chrome://tracing reads the first only.
				path += ".gz"
				require.NoError(t, os.WriteFile(path, body, 0o644))
				rest := bytes.NewReader(body)
				zr, err := gzip.NewReader(rest)
				require.NoError(t, err)
				zr.Multistream(false)
				body, err = io.ReadAll(zr)
				require.NoError(t, err)
				assert.Zero(t, rest.Len(), "bytes after the first gzip member")
			} else {
				require.NoError(t, os.WriteFile(path, body, 0o644))
			}

			evs := tracecheck.Parse(t, body) // closed: strict JSON
			tracks := tracecheck.Tracks(t, evs)
			got := map[string]bool{}
			for _, s := range tracecheck.SlicesNamed(tracks, "work") {
				got[fmt.Sprint(s.Args["req"])] = true
			}
			require.NotEmpty(t, got, "the load ran through the capture")
			// The capture closes no earlier than d after the request was
			// sent: a request begun after its answer started and ended
			// before then ran inside the window.
			inside := 0
			for _, r := range reqs {
				if r.start.After(headers) && r.end.Before(sent.Add(d)) {
					inside++
					assert.True(t, got[r.id], "request %s ran inside the window and is not in the capture", r.id)
				}
			}
			t.Logf("%d requests in the capture, %d of them known to be inside its window, %d events", len(got), inside, len(evs))
			paths = append(paths, path) // the answer as it came, gzip or not
			if tc.file {
				one(t, srv.URL, "after")
				require.NoError(t, tracer.Stop())
				inFile := map[string]bool{}
				for _, s := range tracecheck.SlicesNamed(tracecheck.Tracks(t, tracecheck.Read(t, own)), "work") {
					inFile[fmt.Sprint(s.Args["req"])] = true
				}
				for id := range got {
					assert.True(t, inFile[id], "request %s is in the capture and not in the program's own file", id)
				}
				assert.True(t, inFile["before"] && inFile["after"], "the file holds the requests before and after the capture too")
				assert.False(t, got["before"] || got["after"], "the capture holds neither")
			}
			idle(t, srv)
		})
	}
	tracecheck.ImportQuick(t, paths...)
}

// TestCaptureIsItsWindow: a capture is its window, as tracer cut cuts
// one: a span open when it begins begins at its start there (one the
// program's own tracer recorded), a span open when it ends ends there,
// and nothing in it is left open; the program's file has both spans
// whole.
func TestCaptureIsItsWindow(t *testing.T) {
	for _, file := range []bool{true, false} {
		t.Run(fmt.Sprintf("file=%v", file), func(t *testing.T) {
			srv := debugServer(t)
			own := filepath.Join(t.TempDir(), "own.json")
			release := make(chan struct{})
			var wg sync.WaitGroup
			if file {
				require.NoError(t, tracer.Start(own))
				defer tracer.Stop() // if the test fails first
				started := make(chan struct{})
				wg.Go(func() {
					defer tracer.Span("across the start")()
					close(started)
					<-release
				})
				<-started
			}
			resp, err := http.Get(srv.URL + "/debug/tracer/trace?seconds=0.3")
			require.NoError(t, err)
			defer resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
			// The answer's head came: the capture runs.
			close(release)
			wg.Wait()
			endAcross := tracer.Span("across the end")
			one(t, srv.URL, "inside")
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			endAcross()
			if file {
				require.NoError(t, tracer.Stop())
			}
			idle(t, srv)

			evs := tracecheck.Parse(t, body)
			tracks := tracecheck.Tracks(t, evs)
			assert.Equal(t, len(tracecheck.Phase(evs, "B")), len(tracecheck.Phase(evs, "E")), "every span in the capture ends in it")
			last := 0.0
			for _, e := range evs {
				if e.Ph != "M" {
					last = max(last, e.Ts+e.Dur)
				}
			}
			end := tracecheck.SlicesNamed(tracks, "across the end")
			require.Len(t, end, 1)
			assert.Equal(t, last, end[0].End, "the span open at the capture's end ends there, with the trace")
			assert.Len(t, tracecheck.SlicesNamed(tracks, "work"), 1)
			if !file {
				return
			}
			fileTracks := tracecheck.Tracks(t, tracecheck.Read(t, own))
			start := tracecheck.SlicesNamed(tracks, "across the start")
			require.Len(t, start, 1)
			whole := tracecheck.SlicesNamed(fileTracks, "across the start")
			require.Len(t, whole, 1)
			ns := tracecheck.Nanos
			assert.Less(t, ns(whole[0].Start), ns(start[0].Start), "the span begun before the capture begins at its start there")
			assert.Equal(t, ns(whole[0].End), ns(start[0].End), "and ends when it ended")
			first := math.Inf(1)
			for _, e := range evs {
				if e.Ph != "M" && e.Name != "across the start" {
					first = min(first, e.Ts)
				}
			}
			assert.Less(t, start[0].Start, first, "before anything recorded in the window")
			wholeEnd := tracecheck.SlicesNamed(fileTracks, "across the end")
			require.Len(t, wholeEnd, 1)
			assert.Less(t, ns(end[0].End), ns(wholeEnd[0].End), "the span open at its end lasts longer in the program's file")
			assert.Equal(t, ns(wholeEnd[0].Start), ns(end[0].Start))
		})
	}
}

// TestOneCaptureAtATime: a second capture while one runs gets 409 and
// says why; a client that goes away ends its capture, and the next one
// runs.
func TestOneCaptureAtATime(t *testing.T) {
	srv := debugServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", srv.URL+"/debug/tracer/trace?seconds=60", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.True(t, tracer.Enabled(), "the capture runs")

	code, body, _ := get(t, context.Background(), srv.URL+"/debug/tracer/trace?seconds=1")
	assert.Equal(t, http.StatusConflict, code)
	assert.Contains(t, string(body), "one at a time")

	cancel() // the client goes away: its capture ends long before 60 s
	resp.Body.Close()
	idle(t, srv)

	code, body, _ = get(t, context.Background(), srv.URL+"/debug/tracer/trace?seconds=0.1")
	require.Equal(t, http.StatusOK, code, "%s", body)
	tracecheck.Parse(t, body)
	idle(t, srv)
}

// TestStalledClient: a client that stops reading holds up neither the
// program nor the next capture: the capture is cut once it is the
// tracer's buffer limit behind, its end gives up on the client after a
// bounded wait, whatever the program's stop timeout, and nothing of it
// is left running.
func TestStalledClient(t *testing.T) {
	// The client never reads: a short stop timeout cuts it as surely.
	old := tracedebug.StopTimeout.Swap(250 * time.Millisecond)
	defer tracedebug.StopTimeout.Store(old)
	for _, tee := range []bool{false, true} {
		t.Run(fmt.Sprintf("tee=%v", tee), func(t *testing.T) {
			srv := debugServer(t)
			if tee {
				// The program's tracer waits for its sink forever.
				tr, err := tracer.NewWithWriter(io.Discard, tracer.WithStopTimeout(0))
				require.NoError(t, err)
				require.NoError(t, tracer.SetDefault(tr))
				defer tracer.Stop()
			}
			before := runtime.NumGoroutine()
			conn, err := net.Dial("tcp", srv.Listener.Addr().String())
			require.NoError(t, err)
			defer conn.Close()
			require.NoError(t, conn.(*net.TCPConn).SetReadBuffer(4<<10))
			_, err = io.WriteString(conn, "GET /debug/tracer/trace?seconds=0.5 HTTP/1.1\r\nHost: x\r\n\r\n")
			require.NoError(t, err)
			require.Eventually(t, func() bool { return capturing(t, srv) }, 20*time.Second, time.Millisecond, "the capture starts")
			// Megabytes of events, more than the sockets hold, that
			// nobody reads: recorded through the capture's window (half
			// a second), and no longer, as nothing after it is captured.
			var stop atomic.Bool
			var wg sync.WaitGroup
			for range 2 {
				wg.Go(func() {
					for !stop.Load() {
						tracer.Span("unread", tracer.String("pad", "padding that fills the socket's buffers sooner"))()
					}
				})
			}
			for end := time.Now().Add(600 * time.Millisecond); capturing(t, srv) && time.Now().Before(end); {
				time.Sleep(time.Millisecond)
			}
			stop.Store(true)
			wg.Wait()
			require.Eventually(t, func() bool { return !capturing(t, srv) }, 20*time.Second, time.Millisecond,
				"the capture ended, however its client behaves")

			code, body, _ := get(t, context.Background(), srv.URL+"/debug/tracer/trace?seconds=0.1")
			require.Equal(t, http.StatusOK, code, "%s", body)
			tracecheck.Parse(t, body)
			require.Eventually(t, func() bool { return !capturing(t, srv) }, 20*time.Second, time.Millisecond)
			assert.Equal(t, tee, tracer.Enabled(), "only the program's own tracer runs")
			conn.Close()
			http.DefaultClient.CloseIdleConnections()
			srv.CloseClientConnections()
			// Polled here: Eventually runs its condition on goroutines of its own.
			for deadline := time.Now().Add(20 * time.Second); runtime.NumGoroutine() > before && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
			if n := runtime.NumGoroutine(); n > before {
				buf := make([]byte, 1<<20)
				t.Fatalf("goroutines left running: %d, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
			}
		})
	}
}

// capturing reports whether srv's index says a capture runs.
func capturing(t *testing.T, srv *httptest.Server) bool {
	code, body, _ := get(t, context.Background(), srv.URL+"/debug/tracer/")
	require.Equal(t, http.StatusOK, code)
	return bytes.Contains(body, []byte("A capture is running"))
}

// TestCaptureRefusals: bad seconds and a capture longer than the server's
// WriteTimeout each get a clear answer, and start nothing.
func TestCaptureRefusals(t *testing.T) {
	srv := debugServer(t)
	for _, tc := range []struct {
		query string
		want  string
	}{
		{"seconds=abc", "want a number of seconds"},
		{"seconds=0", "above 0"},
		{"seconds=-1", "above 0"},
		{"seconds=NaN", "want a number"},
		{"seconds=301", "at most 300"},
		{"seconds=1e9", "at most 300"},
	} {
		t.Run(tc.query, func(t *testing.T) {
			code, body, _ := get(t, context.Background(), srv.URL+"/debug/tracer/trace?"+tc.query)
			assert.Equal(t, http.StatusBadRequest, code)
			assert.Contains(t, string(body), tc.want)
			assert.False(t, tracer.Enabled())
		})
	}

	t.Run("WriteTimeout", func(t *testing.T) {
		short := httptest.NewUnstartedServer(tracedebug.Handler())
		short.Config.WriteTimeout = time.Second
		short.Start()
		defer short.Close()
		code, body, _ := get(t, context.Background(), short.URL+"/debug/tracer/trace?seconds=2")
		assert.Equal(t, http.StatusBadRequest, code)
		assert.Contains(t, string(body), "WriteTimeout")
	})

}

// TestRecent serves the flight recorder's window, or says how to keep
// one; while the recorder is the default tracer, a capture is a tee of it.
func TestRecent(t *testing.T) {
	srv := debugServer(t)
	code, body, _ := get(t, context.Background(), srv.URL+"/debug/tracer/recent")
	assert.Equal(t, http.StatusNotFound, code)
	assert.Contains(t, string(body), "tracedebug.SetFlightRecorder(r)")

	r, err := tracer.NewFlightRecorder(tracer.FlightRecorderConfig{MaxEvents: 1000})
	require.NoError(t, err)
	require.NoError(t, tracer.SetDefault(r.Tracer()))
	tracedebug.SetFlightRecorder(r)
	defer func() {
		tracedebug.SetFlightRecorder(nil)
		require.NoError(t, tracer.Stop())
	}()
	stop := load(t, srv.URL, 2)
	require.Eventually(t, func() bool { return r.Stats().Events > 50 }, 20*time.Second, time.Millisecond)
	stop()

	for _, gz := range []bool{false, true} {
		url := srv.URL + "/debug/tracer/recent"
		if gz {
			url += "?gzip=1"
		}
		code, body, h := get(t, context.Background(), url)
		require.Equal(t, http.StatusOK, code, "%s", body)
		assert.Contains(t, h.Get("Content-Disposition"), "recent-")
		if gz {
			assert.Equal(t, "application/gzip", h.Get("Content-Type"))
			zr, err := gzip.NewReader(bytes.NewReader(body))
			require.NoError(t, err)
			body, err = io.ReadAll(zr)
			require.NoError(t, err)
		}
		evs := tracecheck.Parse(t, body)
		tracecheck.Tracks(t, evs)
		assert.NotEmpty(t, tracecheck.Named(evs, "work"))
	}

	stop = load(t, srv.URL, 2)
	code, body, _ = get(t, context.Background(), srv.URL+"/debug/tracer/trace?seconds=0.2")
	stop()
	require.Equal(t, http.StatusOK, code, "%s", body)
	evs := tracecheck.Parse(t, body)
	tracecheck.Tracks(t, evs)
	assert.NotEmpty(t, tracecheck.Named(evs, "work"))
	assert.Same(t, r.Tracer(), tracer.Default(), "the recorder goes on")
}

// TestIndexAndPaths: the index lists what there is with relative links,
// an unknown name is 404, and the handler works under another prefix.
func TestIndexAndPaths(t *testing.T) {
	srv := debugServer(t)
	code, body, h := get(t, context.Background(), srv.URL+"/debug/tracer/")
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, "text/html; charset=utf-8", h.Get("Content-Type"))
	for _, want := range []string{`action="trace"`, `href="recent"`, "ui.perfetto.dev", "serve this page only"} {
		assert.Contains(t, string(body), want)
	}
	code, _, _ = get(t, context.Background(), srv.URL+"/debug/tracer/heap")
	assert.Equal(t, http.StatusNotFound, code)

	mux := http.NewServeMux()
	mux.Handle("/admin/tracing/", http.StripPrefix("/admin/tracing", tracedebug.Handler()))
	other := httptest.NewServer(mux)
	defer other.Close()
	code, body, _ = get(t, context.Background(), other.URL+"/admin/tracing/trace?seconds=0.1")
	require.Equal(t, http.StatusOK, code, "%s", body)
	tracecheck.Parse(t, body)
	idle(t, other, "/admin/tracing/")
}

// TestGetOnly: every other method gets 405 and starts nothing.
func TestGetOnly(t *testing.T) {
	srv := debugServer(t)
	for _, path := range []string{"", "trace?seconds=0.1", "recent"} {
		for _, method := range []string{"POST", "PUT", "DELETE", "HEAD", "PATCH"} {
			req, err := http.NewRequest(method, srv.URL+"/debug/tracer/"+path, nil)
			require.NoError(t, err)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, "%s %s", method, path)
			assert.Equal(t, "GET", resp.Header.Get("Allow"))
			assert.False(t, tracer.Enabled(), "%s %s started a capture", method, path)
		}
	}
}

// TestDefaultServeMux: the blank import registers the handler on
// http.DefaultServeMux, as net/http/pprof does.
func TestDefaultServeMux(t *testing.T) {
	h, pattern := http.DefaultServeMux.Handler(httptest.NewRequest("GET", "/debug/tracer/trace", nil))
	assert.Equal(t, "/debug/tracer/", pattern)
	assert.Equal(t, tracedebug.Handler(), h)
}

// BenchmarkIdleServer: a request to the app, served through a mux with
// and without tracedebug's handler mounted, while nothing is captured:
// the instrumented code costs what it costs with tracing off. The two
// muxes take turns, request by request, so that the machine's drift and
// the order of the cases weigh on both alike; it reports each one's time
// a request and their ratio.
func BenchmarkIdleServer(b *testing.B) {
	muxes := [2]*http.ServeMux{http.NewServeMux(), http.NewServeMux()}
	muxes[1].Handle("/debug/tracer/", tracedebug.Handler())
	for _, m := range muxes {
		m.Handle("/", app())
	}
	req := httptest.NewRequest("GET", "/work", nil)
	var took [2]time.Duration
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		k := i & 1
		start := time.Now()
		muxes[k].ServeHTTP(httptest.NewRecorder(), req)
		took[k] += time.Since(start)
	}
	n := float64(b.N / 2)
	without, with := float64(took[0].Nanoseconds())/n, float64(took[1].Nanoseconds())/n
	b.ReportMetric(without, "ns/req-without")
	b.ReportMetric(with, "ns/req-with")
	b.ReportMetric(with/without, "with/without")
}
