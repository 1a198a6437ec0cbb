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
		if v, ok := s.Args["traceparent.in"]; ok {
			ins = append(ins, v.(string))
		}
	}
	for _, c := range clients {
		if v, ok := c.Args["traceparent.out"]; ok {
			outs = append(outs, v.(string))
		}
	}
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
