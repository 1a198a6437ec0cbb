// Package routertest serves random requests through a real router wrapped
// in one of the router packages, and checks that the trace names each
// request by the route the router itself says it took.
package routertest

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gotracer/tracer"
	"github.com/gotracer/tracer/internal/tracecheck"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// RouteHeader is the response header in which Handler reports the route
// its router says the request took.
const RouteHeader = "Test-Route"

// FlushInterval is the tracer's flush interval in Run: a request slower
// than it (see Slow) is written as a begin and an end event.
const FlushInterval = 2 * time.Millisecond

// Slow is the query parameter that makes Handler take longer than
// FlushInterval and flush, so that its request's span is written as a
// begin event before it ends.
const Slow = "slow"

// Handler returns the handler every route of the router under test
// serves: it reports route(r), the router's own account of the route, in
// RouteHeader, and records a span of its own, which must nest in the
// request's.
func Handler(route func(*http.Request) string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer tracer.Span("handler")()
		w.Header().Set(RouteHeader, route(r))
		if r.URL.Query().Has(Slow) {
			time.Sleep(5 * FlushInterval)
			tracer.Flush() // now, if the flusher is late: Run checks that it came

		}
		io.WriteString(w, "ok")
	})
}

// A Request makes a random request: its method, its path, and the route
// the router must take it by ("" if none) and its status.
type Request struct {
	Method string
	Route  string
	Status int
	Path   func(rng *rand.Rand) string
}

// Num returns a random path segment of digits.
func Num(rng *rand.Rand) string { return strconv.Itoa(rng.IntN(1e6)) }

// Run serves n requests, picked at random from reqs and sent four at a
// time, through h on a real server, with the default tracer on, and
// checks the trace: every request's span (an X event, or B and E for the
// slow ones) and async slice are named by its method and the route
// (spanName's rule: "HTTP GET" with no route), with the route as the
// "route" arg, the status from the end, and the handler's span inside.
func Run(t *testing.T, h http.Handler, reqs []Request, n int) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	type sent struct {
		Method, Path, Route, Name string
		Status                    int
	}
	want := make([]sent, n)
	urls := make([]string, n)
	for i := range want {
		rq := reqs[rng.IntN(len(reqs))]
		path := rq.Path(rng)
		want[i] = sent{Method: rq.Method, Path: path, Route: rq.Route, Name: name(rq.Method, rq.Route), Status: rq.Status}
		urls[i] = path
		if i%10 == 0 && rq.Status == http.StatusOK {
			urls[i] += "?" + Slow
		}
	}

	path := filepath.Join(t.TempDir(), "routes.json")
	require.NoError(t, tracer.Start(path, tracer.WithFlushInterval(FlushInterval)))
	stopped := false
	defer func() {
		if !stopped {
			tracer.Stop()
		}
	}()
	srv := httptest.NewServer(h)
	defer srv.Close()
	var wg sync.WaitGroup
	next := make(chan int)
	for range 4 {
		wg.Go(func() {
			for i := range next {
				req, err := http.NewRequest(want[i].Method, srv.URL+urls[i], nil)
				require.NoError(t, err)
				resp, err := http.DefaultClient.Do(req)
				require.NoError(t, err)
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				assert.Equal(t, want[i].Status, resp.StatusCode, "%s %s", want[i].Method, urls[i])
				assert.Equal(t, want[i].Route, resp.Header.Get(RouteHeader), "the router's own route for %s %s", want[i].Method, urls[i])
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	srv.Close()
	stopped = true
	require.NoError(t, tracer.Stop())

	evs := tracecheck.Read(t, path)
	tracks := tracecheck.Tracks(t, evs)
	var spans, slices []sent
	begins := 0
	open := map[uint64][]tracecheck.Event{}
	addSpan := func(e tracecheck.Event, args map[string]any, start, end float64) {
		route, _ := args["route"].(string)
		status, _ := args["status"].(float64)
		spans = append(spans, sent{Method: args["method"].(string), Path: args["path"].(string), Route: route, Name: e.Name, Status: int(status)})
		if route == "" {
			return // the router answered: no handler ran
		}
		inner := 0
		for _, s := range tracks[e.Tid] {
			if s.Name == "handler" && s.Start >= start && s.End <= end {
				inner++
			}
		}
		assert.Equal(t, 1, inner, "the handler's span inside %q", e.Name)
	}
	for _, e := range evs {
		if e.Cat != "http" {
			continue
		}
		switch e.Ph {
		case "X":
			addSpan(e, e.Args, e.Ts, e.Ts+e.Dur)
		case "B":
			begins++
			open[e.Tid] = append(open[e.Tid], e)
		case "E":
			st := open[e.Tid]
			b := st[len(st)-1]
			open[e.Tid] = st[:len(st)-1]
			args := map[string]any{}
			for k, v := range b.Args {
				args[k] = v
			}
			for k, v := range e.Args {
				args[k] = v
			}
			addSpan(b, args, b.Ts, e.Ts)
		}
	}
	for _, op := range tracecheck.Async(t, evs) {
		if op.Begin.Cat != "http" {
			continue
		}
		route, _ := op.Begin.Args["route"].(string)
		slices = append(slices, sent{Method: op.Begin.Args["method"].(string), Path: op.Begin.Args["path"].(string), Route: route, Name: op.Begin.Name, Status: int(op.End.Args["status"].(float64))})
	}
	assert.ElementsMatch(t, want, spans, "the requests' spans")
	assert.ElementsMatch(t, want, slices, "the requests' async slices")
	assert.Positive(t, begins, "slow requests written as B and E")
}

// name is tracehttp's name for a request: the method and the route, or
// "HTTP" and the method.
func name(method, route string) string {
	if route == "" {
		return "HTTP " + method
	}
	return fmt.Sprintf("%s %s", method, route)
}
