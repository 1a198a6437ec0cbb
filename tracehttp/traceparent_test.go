package tracehttp_test

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"

	"github.com/gotracer/tracer/internal/tracecheck"
	"github.com/gotracer/tracer/tracehttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var validTraceparent = regexp.MustCompile(`^00-[0-9a-f]{32}-[0-9a-f]{16}-01$`)

// TestTraceparent checks the W3C headers each side sends and reads: the
// client sends one (its own, or the request's, kept with its tracestate),
// the server reads it, and only a client elsewhere leaves a
// traceparent.in on the server's span.
func TestTraceparent(t *testing.T) {
	const (
		theirs = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		state  = "congo=t61rcWkgMzE"
	)
	path, stop := startTrace(t)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /echo", func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Got-Traceparent"] = r.Header.Values("traceparent")
		w.Header()["Got-Tracestate"] = r.Header.Values("tracestate")
	})
	srv := httptest.NewServer(tracehttp.Middleware(mux))
	defer srv.Close()
	traced := &http.Client{Transport: tracehttp.Transport(nil)}
	plain := &http.Client{} // a client elsewhere

	tests := []struct {
		name      string
		client    *http.Client
		header    http.Header
		sent      string // what the server must get; "new" for a fresh valid one
		flow      bool   // a flow in this process's trace
		in        string // the server span's traceparent.in
		clientArg bool   // the client span's traceparent.out is what was sent
	}{
		{name: "new", client: traced, sent: "new", flow: true, clientArg: true},
		{name: "kept", client: traced, header: http.Header{"Traceparent": {theirs}, "Tracestate": {state}}, sent: theirs, flow: true, clientArg: true},
		{name: "from elsewhere", client: plain, header: http.Header{"Traceparent": {theirs}}, sent: theirs, in: theirs},
		{name: "later version from elsewhere", client: plain, header: http.Header{"Traceparent": {"01" + theirs[2:] + "-more"}}, sent: "01" + theirs[2:] + "-more", in: "01" + theirs[2:]},
		{name: "invalid from elsewhere", client: plain, header: http.Header{"Traceparent": {"00-zz"}}, sent: "00-zz"},
		{name: "invalid kept by the client", client: traced, header: http.Header{"Traceparent": {"00-zz"}}, sent: "00-zz"},
		{name: "two from elsewhere", client: plain, header: http.Header{"Traceparent": {theirs, theirs}}, sent: theirs},
	}
	sent := map[string]string{} // test name -> the traceparent the server got
	for _, tc := range tests {
		req, err := http.NewRequest("GET", srv.URL+"/echo", nil)
		require.NoError(t, err)
		req.Header = tc.header.Clone()
		if req.Header == nil {
			req.Header = http.Header{}
		}
		req.Header.Set("Test", tc.name)
		resp, err := tc.client.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		got := resp.Header.Values("Got-Traceparent")
		require.NotEmpty(t, got, tc.name)
		if tc.sent == "new" {
			assert.Regexp(t, validTraceparent, got[0], tc.name)
			assert.Len(t, got, 1)
		} else {
			assert.Equal(t, tc.sent, got[0], tc.name)
		}
		assert.Equal(t, tc.header.Values("Tracestate"), resp.Header.Values("Got-Tracestate"), "%s: tracestate as it was", tc.name)
		assert.Equal(t, tc.header.Values("Traceparent"), req.Header.Values("Traceparent"), "%s: the caller's request is not changed", tc.name)
		sent[tc.name] = got[0]
	}
	srv.Close()
	stop()

	evs := tracecheck.Read(t, path)
	servers := tracecheck.Phase(tracecheck.Named(evs, "GET /echo"), "X")
	clients := tracecheck.Phase(tracecheck.Named(evs, "HTTP GET"), "X")
	require.Len(t, servers, len(tests))
	require.Len(t, clients, 3, "the requests sent through the Transport")
	assert.Len(t, tracecheck.Phase(evs, "f"), 2, "a flow for each request the Transport sent with a valid traceparent")
	var ins, outs []string
	for _, s := range servers {
		require.Regexp(t, `^[0-9a-f]{32}$`, s.Args["trace_id"], "every request served is in a trace")
		if v, ok := s.Args["traceparent.in"]; ok {
			ins = append(ins, v.(string))
			assert.Equal(t, v.(string)[3:35], s.Args["trace_id"])
		}
	}
	for _, c := range clients {
		if v, ok := c.Args["traceparent.out"]; ok {
			outs = append(outs, v.(string))
		}
	}
	var clientTraces, sentTraces []any
	for _, op := range tracecheck.Async(t, evs) {
		if id, ok := op.Begin.Args["trace_id"]; ok && op.Begin.Cat == "http.client" {
			clientTraces = append(clientTraces, id) // not for an invalid header kept
		}
	}
	for _, out := range outs {
		sentTraces = append(sentTraces, out[3:35])
	}
	assert.ElementsMatch(t, sentTraces, clientTraces, "the client's async slices carry the trace ids sent")
	var wantIns, wantOuts []string
	for _, tc := range tests {
		if tc.in != "" {
			wantIns = append(wantIns, tc.in)
		}
		if tc.clientArg {
			wantOuts = append(wantOuts, sent[tc.name])
		}
	}
	assert.ElementsMatch(t, wantIns, ins)
	assert.ElementsMatch(t, wantOuts, outs)
}

// TestTraceContextDownTheChain sends requests with and without a W3C
// header to a server A whose handler calls a server B through Transport
// with the request's context, and checks what B gets: A's trace id and
// flags with a new parent id for each call, and A's tracestate, and that
// A's server and client spans and B's server span all carry the trace id.
func TestTraceContextDownTheChain(t *testing.T) {
	const (
		trace  = "4bf92f3577b34da6a3ce929d0e0e4736"
		theirs = "00-" + trace + "-00f067aa0ba902b7-01"
	)
	path, stop := startTrace(t)
	b := http.NewServeMux()
	b.HandleFunc("GET /b", func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Got-Traceparent"] = r.Header.Values("traceparent")
		w.Header()["Got-Tracestate"] = r.Header.Values("tracestate")
	})
	srvB := httptest.NewServer(tracehttp.Middleware(b))
	defer srvB.Close()
	client := &http.Client{Transport: tracehttp.Transport(nil)}
	a := http.NewServeMux()
	a.HandleFunc("GET /a", func(w http.ResponseWriter, r *http.Request) {
		for range 2 { // two calls: two parent ids, one trace
			req, err := http.NewRequestWithContext(r.Context(), "GET", srvB.URL+"/b", nil)
			require.NoError(t, err)
			resp, err := client.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			w.Header()["B-Traceparent"] = append(w.Header()["B-Traceparent"], resp.Header.Values("Got-Traceparent")...)
			w.Header()["B-Tracestate"] = append(w.Header()["B-Tracestate"], resp.Header.Values("Got-Tracestate")...)
		}
	})
	srvA := httptest.NewServer(tracehttp.Middleware(a))
	defer srvA.Close()

	tests := []struct {
		name   string
		header http.Header
		trace  string // "" for a new one
		flags  string
		state  []string
	}{
		{name: "sampled", header: http.Header{"Traceparent": {theirs}, "Tracestate": {"congo=t61rcWkgMzE", "rojo=00f067aa0ba902b7"}},
			trace: trace, flags: "01", state: []string{"congo=t61rcWkgMzE", "rojo=00f067aa0ba902b7"}},
		{name: "not sampled", header: http.Header{"Traceparent": {theirs[:53] + "00"}}, trace: trace, flags: "00"},
		{name: "later version", header: http.Header{"Traceparent": {"cc" + theirs[2:] + "-more"}, "Tracestate": {"a=1"}}, trace: trace, flags: "01", state: []string{"a=1"}},
		{name: "none", flags: "01"},
		{name: "invalid: tracestate dropped", header: http.Header{"Traceparent": {"00-zz"}, "Tracestate": {"a=1"}}, flags: "01"},
	}
	traceOf := map[string]string{} // test name -> the trace id B got
	for _, tc := range tests {
		req, err := http.NewRequest("GET", srvA.URL+"/a", nil)
		require.NoError(t, err)
		req.Header = tc.header.Clone()
		if req.Header == nil {
			req.Header = http.Header{}
		}
		resp, err := http.DefaultClient.Do(req) // a client elsewhere
		require.NoError(t, err)
		resp.Body.Close()
		got := resp.Header.Values("B-Traceparent")
		require.Len(t, got, 2, tc.name)
		for _, tp := range got {
			require.Regexp(t, `^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$`, tp, tc.name)
			assert.Equal(t, got[0][3:35], tp[3:35], "%s: one trace id for both calls", tc.name)
			assert.Equal(t, tc.flags, tp[53:], "%s: flags", tc.name)
			assert.NotEqual(t, "00f067aa0ba902b7", tp[36:52], "%s: a new parent id", tc.name)
		}
		assert.NotEqual(t, got[0][36:52], got[1][36:52], "%s: a parent id for each call", tc.name)
		if tc.trace != "" {
			assert.Equal(t, tc.trace, got[0][3:35], tc.name)
		}
		var wantState []string
		for range 2 {
			wantState = append(wantState, tc.state...)
		}
		assert.Equal(t, wantState, resp.Header.Values("B-Tracestate"), "%s: tracestate passed on", tc.name)
		traceOf[tc.name] = got[0][3:35]
	}
	assert.NotEqual(t, traceOf["none"], traceOf["invalid: tracestate dropped"], "each request without a valid header starts its own trace")
	srvA.Close()
	srvB.Close()
	stop()

	// Each request's trace id is on A's server span, the async slices of
	// A's two calls and B's two server spans, and on nothing else.
	evs := tracecheck.Read(t, path)
	count := map[string]map[string]int{}
	for _, e := range evs {
		if id, ok := e.Args["trace_id"].(string); ok {
			if count[id] == nil {
				count[id] = map[string]int{}
			}
			count[id][e.Ph+" "+e.Name]++
		}
	}
	want := map[string]map[string]int{}
	for _, id := range traceOf {
		if want[id] == nil {
			want[id] = map[string]int{}
		}
		want[id]["X GET /a"]++
		want[id]["b HTTP GET"] += 2
		want[id]["X GET /b"] += 2
	}
	assert.Equal(t, want, count, "the spans of each trace")
}
