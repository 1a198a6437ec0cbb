package tracehttp_test

import (
	"cmp"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gotracer/tracer"
	"github.com/gotracer/tracer/internal/race"
	"github.com/gotracer/tracer/internal/tracecheck"
	"github.com/gotracer/tracer/tracehttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startTrace starts the default tracer for one test and returns the file's
// path and the function that stops it.
func startTrace(t *testing.T) (path string, stop func()) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "http.json")
	// The longest flush interval, longer than a test: every span is an
	// X event, whatever the machine's load (a span older than the flush
	// interval is written as a B event, and what its end carries as its
	// E's args).
	require.NoError(t, tracer.Start(path, tracer.WithFlushInterval(10*time.Second)))
	var once sync.Once
	stop = func() { once.Do(func() { require.NoError(t, tracer.Stop()) }) }
	t.Cleanup(stop)
	return path, stop
}

func newMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		defer tracer.Span("load", tracer.String("id", r.PathValue("id")))()
		time.Sleep(5 * time.Millisecond) // long enough for requests to overlap
		fmt.Fprintf(w, "item %s", r.PathValue("id"))
	})
	mux.HandleFunc("POST /items", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, "created")
	})
	mux.HandleFunc("/stream/", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "a")
		w.(http.Flusher).Flush() // the wrapper must keep the optional interfaces
		w.(io.ReaderFrom).ReadFrom(strings.NewReader("bc"))
	})
	return mux
}

// TestServerAndClient serves requests through Middleware to clients using
// Transport in the same process, and checks everything the package
// promises the trace shows.
func TestServerAndClient(t *testing.T) {
	path, stop := startTrace(t)
	srv := httptest.NewServer(tracehttp.Middleware(newMux()))
	defer srv.Close()
	client := &http.Client{Transport: tracehttp.Transport(nil)}

	get := func(method, url string, header http.Header) (int, string) {
		defer tracer.Span("client call")()
		req, err := http.NewRequest(method, srv.URL+url, nil)
		require.NoError(t, err)
		for k, v := range header {
			req.Header[k] = v
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			code, body := get("GET", fmt.Sprintf("/items/%d", i), nil)
			assert.Equal(t, http.StatusOK, code)
			assert.Equal(t, fmt.Sprintf("item %d", i), body)
		})
	}
	wg.Wait()
	code, _ := get("POST", "/items", nil)
	assert.Equal(t, http.StatusCreated, code)
	code, body := get("GET", "/stream/x", nil)
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "abc", body)
	code, _ = get("GET", "/nowhere", nil)
	assert.Equal(t, http.StatusNotFound, code)
	// A traceparent this process did not send draws no flow here. The
	// client would send it as it is: send it without the Transport, as
	// a client elsewhere would.
	req, _ := http.NewRequest("GET", srv.URL+"/items/forged", nil)
	req.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	resp, err := http.DefaultTransport.RoundTrip(req)
	require.NoError(t, err)
	resp.Body.Close()
	srv.Close()
	stop()

	evs := tracecheck.Read(t, path)
	tracks := tracecheck.Tracks(t, evs)

	// The server's spans, on the serving goroutines, with the handler's
	// spans inside.
	require.Len(t, tracecheck.SlicesNamed(tracks, "GET /items/{id}"), 9) // 8 and the forged one
	for _, e := range tracecheck.Named(evs, "load") {
		outer, ok := tracecheck.Enclosing(tracks, e.Tid, e.Ts-0.001)
		require.True(t, ok)
		assert.Equal(t, "GET /items/{id}", outer.Name)
		assert.Equal(t, "/items/"+e.Args["id"].(string), outer.Args["path"])
		assert.Equal(t, "GET /items/{id}", outer.Args["route"])
		assert.Equal(t, "GET", outer.Args["method"])
		assert.Contains(t, outer.Args, "status", "the span's end carries the status")
	}

	// One async slice per request, its end carrying status and bytes.
	ops := tracecheck.Async(t, evs)

	got := map[string][]result{}
	var itemOps []tracecheck.AsyncOp
	for _, op := range ops {
		if op.Begin.Cat != "http" {
			continue
		}
		require.NotContains(t, op.End.Args, "panic")
		r := result{status: op.End.Args["status"].(float64), bytes: op.End.Args["bytes"].(float64)}
		got[op.Begin.Name] = append(got[op.Begin.Name], r)
		if op.Begin.Name == "GET /items/{id}" {
			itemOps = append(itemOps, op)
		}
	}
	assert.Equal(t, map[string][]result{
		"GET /items/{id}": slicesOf(result{200, 6}, 8, result{200, 11}),
		"POST /items":     {{201, 7}},
		"GET /stream/":    {{200, 3}},
		"HTTP GET":        {{404, 19}},
	}, sortedResults(got))
	overlapping := false
	for i := range itemOps {
		for j := range i {
			a, b := itemOps[i], itemOps[j]
			overlapping = overlapping || (a.Begin.Ts < b.End.Ts && b.Begin.Ts < a.End.Ts)
		}
	}
	assert.True(t, overlapping, "concurrent requests must show as concurrent slices")

	// Client side: a span and an async slice per request sent through the
	// Transport.
	assert.Len(t, tracecheck.Named(evs, "HTTP POST"), 1+2) // span, b, e
	assert.Len(t, tracecheck.Phase(tracecheck.Named(evs, "HTTP GET"), "X"), 8+3)

	// A flow from each client span to the server span of its request, and
	// none for the forged header.
	starts, ends := tracecheck.Phase(evs, "s"), tracecheck.Phase(evs, "f")
	assert.Len(t, starts, 11)
	assert.Len(t, ends, 11)
	byID := map[string]tracecheck.Event{}
	for _, s := range starts {
		byID[s.ID.String()] = s
		span, ok := tracecheck.Enclosing(tracks, s.Tid, s.Ts)
		require.True(t, ok)
		assert.True(t, strings.HasPrefix(span.Name, "HTTP "), "flow starts in the client's span, not %q", span.Name)
	}
	for _, f := range ends {
		s, ok := byID[f.ID.String()]
		require.True(t, ok, "flow end %s without its start", f.ID)
		assert.Equal(t, s.Name, f.Name)
		assert.Equal(t, s.Cat, f.Cat)
		assert.Equal(t, "e", f.Bp)
		assert.NotEqual(t, s.Tid, f.Tid)
		span, ok := tracecheck.Enclosing(tracks, f.Tid, f.Ts)
		require.True(t, ok)
		assert.Contains(t, []string{"GET /items/{id}", "POST /items", "GET /stream/", "HTTP GET"}, span.Name)
	}

	// Both viewers draw the eleven arrows and a slice per request
	// (catapult's importer in a heavy run only: see ImportQuick).
	perfetto, catapult := tracecheck.ImportQuick(t, path)
	assert.Equal(t, 11.0, perfetto[0].Totals()["flows"])
	if catapult != nil {
		assert.Equal(t, 11.0, catapult[0].Totals()["flows"])
		assert.Equal(t, 12.0+11, catapult[0].Totals()["asyncSlices"], "12 server and 11 client requests")
	}
}

func slicesOf[T any](v T, n int, more ...T) []T {
	out := make([]T, 0, n+len(more))
	for range n {
		out = append(out, v)
	}
	return append(out, more...)
}

type result struct{ status, bytes float64 }

// sortedResults sorts each request's results by bytes.
func sortedResults(m map[string][]result) map[string][]result {
	for _, rs := range m {
		slices.SortFunc(rs, func(a, b result) int { return cmp.Compare(a.bytes, b.bytes) })
	}
	return m
}

// TestPanickingHandler checks that a handler's panic ends the request's
// span and async slice, marked, and goes on to the server.
func TestPanickingHandler(t *testing.T) {
	path, stop := startTrace(t)
	h := tracehttp.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		panic("boom")
	}))
	assert.PanicsWithValue(t, "boom", func() {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/x", nil))
	})
	stop()
	evs := tracecheck.Read(t, path)
	tracecheck.Tracks(t, evs)
	ops := tracecheck.Async(t, evs)
	require.Len(t, ops, 1)
	assert.Equal(t, "HTTP GET", ops[0].Begin.Name)
	assert.Equal(t, true, ops[0].End.Args["panic"])
	assert.Len(t, tracecheck.SlicesNamed(tracecheck.Tracks(t, evs), "HTTP GET"), 1)
}

// TestRouteOfWrappedMux checks the route when the ServeMux is behind
// another handler: the span is named by the method only, and the end of
// the async slice carries the pattern that matched.
func TestRouteOfWrappedMux(t *testing.T) {
	path, stop := startTrace(t)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /users/{name}", func(w http.ResponseWriter, r *http.Request) {})
	logged := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { mux.ServeHTTP(w, r) })
	h := tracehttp.Middleware(logged)
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/users/ann", nil))
	stop()
	evs := tracecheck.Read(t, path)
	ops := tracecheck.Async(t, evs)
	require.Len(t, ops, 1)
	assert.Equal(t, "HTTP GET", ops[0].Begin.Name)
	assert.Equal(t, "GET /users/{name}", ops[0].End.Args["route"])
	assert.Equal(t, 200.0, ops[0].End.Args["status"])
}

// TestOffAllocatesNothing checks that with tracing off the middleware and
// the transport add no allocation to a request.
func TestOffAllocatesNothing(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector allocates")
	}
	require.Nil(t, tracer.Default())
	mux := http.NewServeMux()
	mux.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) })
	req := httptest.NewRequest("GET", "/items/1", nil)
	w := httptest.NewRecorder()
	bare := testing.AllocsPerRun(100, func() { mux.ServeHTTP(w, req) })
	wrapped := tracehttp.Middleware(mux)
	assert.Equal(t, bare, testing.AllocsPerRun(100, func() { wrapped.ServeHTTP(w, req) }))

	rt := tracehttp.Transport(roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, nil }))
	assert.Zero(t, testing.AllocsPerRun(100, func() { rt.RoundTrip(req) }))
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestMiddlewareWithRoute checks that the route function names the span
// and the async slice from their start, and is called only while tracing
// runs.
func TestMiddlewareWithRoute(t *testing.T) {
	var calls []string
	h := tracehttp.MiddlewareWithRoute(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer tracer.Span("inner")()
	}), func(r *http.Request) string {
		calls = append(calls, r.URL.Path)
		if r.URL.Path == "/none" {
			return ""
		}
		return "/users/{name}"
	})
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/users/off", nil))
	assert.Empty(t, calls, "no route asked for with tracing off")

	path, stop := startTrace(t)
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/users/ann", nil))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("POST", "/none", nil))
	stop()
	assert.Equal(t, []string{"/users/ann", "/none"}, calls)
	evs := tracecheck.Read(t, path)
	tracks := tracecheck.Tracks(t, evs)
	require.Len(t, tracecheck.SlicesNamed(tracks, "GET /users/{name}"), 1)
	require.Len(t, tracecheck.SlicesNamed(tracks, "HTTP POST"), 1)
	s := tracecheck.SlicesNamed(tracks, "GET /users/{name}")[0]
	assert.Equal(t, "/users/{name}", s.Args["route"])
	names := map[string]bool{}
	for _, op := range tracecheck.Async(t, evs) {
		names[op.Begin.Name] = true
	}
	assert.Equal(t, map[string]bool{"GET /users/{name}": true, "HTTP POST": true}, names)
}
