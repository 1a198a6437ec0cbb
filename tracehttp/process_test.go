package tracehttp_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gotracer/tracer"
	"github.com/gotracer/tracer/internal/childtest"
	"github.com/gotracer/tracer/internal/tracecheck"
	"github.com/gotracer/tracer/tracehttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The environment of TestThreeProcessesChild: its role ("client", "a" or
// "b"), its trace file, and the URL it calls.
const (
	envRole = "TRACEHTTP_CHILD"
	envFile = "TRACEHTTP_CHILD_FILE"
	envNext = "TRACEHTTP_CHILD_NEXT"
)

// requestsSent is how many requests the client process sends; every
// third carries a tracestate of the client's.
const requestsSent = 12

// TestThreeProcesses runs a client, a server A and a server B in three
// processes, each tracing to its own file, the client calling A and A
// calling B with the request's context, and checks W3C Trace Context
// across them: each request keeps the client's trace id in all three
// files, each hop has a parent id of its own (the client's traceparent.out
// is A's traceparent.in, A's is B's), and the client's tracestate reaches
// B.
func TestThreeProcesses(t *testing.T) {
	dir := t.TempDir()
	file := func(role string) string { return filepath.Join(dir, role+".json") }
	serve := func(role, next string) (url string, stop func()) {
		cmd := childtest.Command("TestThreeProcessesChild", envRole+"="+role, envFile+"="+file(role), envNext+"="+next)
		stdin, err := cmd.StdinPipe()
		require.NoError(t, err)
		lines := childtest.StartReady(t, cmd)
		require.True(t, lines.Scan(), "the %s server's address", role)
		url = lines.Text()
		drained := make(chan struct{})
		go func() {
			for lines.Scan() {
			}
			close(drained)
		}()
		stopped := false
		stop = func() {
			if stopped {
				return
			}
			stopped = true
			stdin.Close() // the server stops, closes its trace and exits
			timer := time.AfterFunc(time.Minute, func() { cmd.Process.Kill() })
			defer timer.Stop()
			<-drained
			require.NoError(t, cmd.Wait(), "server %s", role)
		}
		t.Cleanup(stop)
		return url, stop
	}
	urlB, stopB := serve("b", "")
	urlA, stopA := serve("a", urlB)
	_, err := childtest.Run(t, "TestThreeProcessesChild", time.Minute, envRole+"=client", envFile+"="+file("client"), envNext+"="+urlA)
	require.NoError(t, err)
	stopA()
	stopB()

	client, a, b := tracecheck.Read(t, file("client")), tracecheck.Read(t, file("a")), tracecheck.Read(t, file("b"))
	bySent := func(evs []tracecheck.Event, name, arg string) map[string]tracecheck.Event {
		m := map[string]tracecheck.Event{}
		for _, e := range tracecheck.Phase(tracecheck.Named(evs, name), "X") {
			tp, ok := e.Args[arg].(string)
			require.True(t, ok, "%s without %s", name, arg)
			m[tp] = e
		}
		return m
	}
	aIn, aOut := bySent(a, "GET /a", "traceparent.in"), bySent(a, "HTTP GET", "traceparent.out")
	bIn := bySent(b, "GET /b", "traceparent.in")
	aTracks := tracecheck.Tracks(t, a)
	states := map[string]string{} // B's traceparent.in -> the tracestate B got
	for _, e := range tracecheck.Named(b, "b work") {
		states[e.Args["traceparent"].(string)] = e.Args["tracestate"].(string)
	}
	sent := tracecheck.Phase(tracecheck.Named(client, "HTTP GET"), "X")
	require.Len(t, sent, requestsSent)
	clientTracks := tracecheck.Tracks(t, client)
	traces := map[string]bool{}
	for _, c := range sent {
		request, ok := tracecheck.Enclosing(clientTracks, c.Tid, c.Ts-0.001)
		require.True(t, ok)
		require.Equal(t, "request", request.Name)
		out := c.Args["traceparent.out"].(string)
		trace := out[3:35]
		server, ok := aIn[out]
		require.True(t, ok, "A served %s", out)
		assert.Equal(t, trace, server.Args["trace_id"], "A keeps the client's trace id")
		// A's call to B, inside A's span.
		var call tracecheck.Event
		n := 0
		for tp, e := range aOut {
			if outer, ok := tracecheck.Enclosing(aTracks, e.Tid, e.Ts-0.001); ok && outer.Name == "GET /a" && outer.Args["traceparent.in"] == out {
				call, n = aOut[tp], n+1
			}
		}
		require.Equal(t, 1, n, "A's call to B for %s", out)
		next := call.Args["traceparent.out"].(string)
		assert.Equal(t, trace, next[3:35], "A calls B in the client's trace")
		assert.NotEqual(t, out[36:52], next[36:52], "a parent id for each hop")
		assert.Equal(t, out[53:], next[53:], "flags as they were")
		got, ok := bIn[next]
		require.True(t, ok, "B served %s", next)
		assert.Equal(t, trace, got.Args["trace_id"], "B keeps the client's trace id")
		assert.Equal(t, request.Args["tracestate"], states[next], "the client's tracestate reached B")
		traces[trace] = true
	}
	// The trace ids of the async slices: the client's and A's calls'.
	for name, evs := range map[string][]tracecheck.Event{"client": client, "a": a} {
		var calls []any
		for _, op := range tracecheck.Async(t, evs) {
			if op.Begin.Cat == "http.client" {
				calls = append(calls, op.Begin.Args["trace_id"])
				assert.True(t, traces[op.Begin.Args["trace_id"].(string)], "%s: a call in a client's trace", name)
			}
		}
		assert.Len(t, calls, requestsSent, name)
	}
	tracecheck.ImportQuick(t, file("client"), file("a"), file("b"))
}

// TestThreeProcessesChild is one process of TestThreeProcesses.
func TestThreeProcessesChild(t *testing.T) {
	role := os.Getenv(envRole)
	if role == "" {
		t.Skip("helper process for TestThreeProcesses")
	}
	// The longest flush interval: every span is an X event, whatever the
	// machine's load (see startTrace).
	require.NoError(t, tracer.Start(os.Getenv(envFile), tracer.WithProcessName(role), tracer.WithFlushInterval(10*time.Second)))
	next := os.Getenv(envNext)
	client := &http.Client{Transport: tracehttp.Transport(nil)}
	if role == "client" {
		for i := range requestsSent {
			state := ""
			if i%3 == 0 {
				state = fmt.Sprintf("client=%d", i)
			}
			// A span around the request records the tracestate sent,
			// for the parent to look for at B.
			end := tracer.Span("request", tracer.String("tracestate", state))
			req, err := http.NewRequest("GET", next+"/a", nil)
			require.NoError(t, err)
			if state != "" {
				req.Header.Set("tracestate", state)
			}
			resp, err := client.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
			end()
		}
		require.NoError(t, tracer.Stop())
		return
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /a", func(w http.ResponseWriter, r *http.Request) {
		req, err := http.NewRequestWithContext(r.Context(), "GET", next+"/b", nil)
		if err == nil {
			var resp *http.Response
			if resp, err = client.Do(req); err == nil {
				resp.Body.Close()
			}
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
		}
	})
	mux.HandleFunc("GET /b", func(w http.ResponseWriter, r *http.Request) {
		tracer.Span("b work", tracer.String("traceparent", r.Header.Get("traceparent")), tracer.String("tracestate", r.Header.Get("tracestate")))()
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: tracehttp.Middleware(mux)}
	go srv.Serve(ln)
	fmt.Printf("READY\nhttp://%s\n", ln.Addr())
	bufio.NewReader(os.Stdin).ReadString(0) // until the parent closes stdin
	require.NoError(t, srv.Close())
	require.NoError(t, tracer.Stop())
}
