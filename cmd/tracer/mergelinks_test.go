package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gotracer/tracer"
	"github.com/gotracer/tracer/internal/tracecheck"
	"github.com/gotracer/tracer/tracehttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const httpServerEnv = "TRACER_CMD_HTTP_SERVER_CHILD"

// The flush interval of both processes of TestMergeBindsHTTP, and how
// long its slow requests take: a span open across a pass and older than
// the interval is written as a B and an E, not an X.
const (
	mergeFlushInterval = 20 * time.Millisecond
	slowRequest        = 10 * mergeFlushInterval
)

// TestHTTPServerChild is the server process of TestMergeBindsHTTP: it
// traces a server on 127.0.0.1 into the file the variable names, prints
// its address, and serves until its standard input closes. Request 0 is
// slow before it answers (a B at both ends), request 1 after it has sent
// its answer (a B at the server's end; an X at the client's, unless a
// busy machine made it slow).
func TestHTTPServerChild(t *testing.T) {
	path := os.Getenv(httpServerEnv)
	if path == "" {
		t.Skip("helper process for TestMergeBindsHTTP")
	}
	require.NoError(t, tracer.Start(path, tracer.WithProcessName("server"), tracer.WithFlushInterval(mergeFlushInterval)))
	mux := http.NewServeMux()
	mux.HandleFunc("GET /work/{n}", func(w http.ResponseWriter, r *http.Request) {
		defer tracer.Span("work", tracer.String("n", r.PathValue("n")))()
		time.Sleep(2 * time.Millisecond)
		if r.PathValue("n") == "0" {
			time.Sleep(slowRequest)
		}
		io.WriteString(w, r.Header.Get("traceparent"))
		if r.PathValue("n") == "1" {
			w.(http.Flusher).Flush()
			time.Sleep(slowRequest)
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: tracehttp.Middleware(mux)}
	go srv.Serve(ln)
	fmt.Println("ADDR", ln.Addr())
	io.Copy(io.Discard, os.Stdin)
	require.NoError(t, srv.Close())
	require.NoError(t, tracer.Stop())
}

// TestMergeBindsHTTP runs a client (this process) and a server (a child
// process) that talk HTTP on 127.0.0.1, each tracing into its own file
// with tracehttp, merges the two files and checks, in the merged file and
// in both importers, that every request's arrow goes from the client's
// span to the server's span of that request, bound at both ends.
func TestMergeBindsHTTP(t *testing.T) {
	t.Parallel()
	const requests = 12
	dir := t.TempDir()
	clientPath, serverPath := filepath.Join(dir, "client.json"), filepath.Join(dir, "server.json")

	cmd := exec.Command(os.Args[0], "-test.run=^TestHTTPServerChild$")
	cmd.Env = append(os.Environ(), httpServerEnv+"="+serverPath)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(stdout)
	var addr string
	for addr == "" && lines.Scan() {
		addr, _ = strings.CutPrefix(lines.Text(), "ADDR ")
	}
	require.NotEmpty(t, addr, "the server child printed no address")
	go io.Copy(io.Discard, stdout)

	require.NoError(t, tracer.Start(clientPath, tracer.WithProcessName("client"), tracer.WithFlushInterval(mergeFlushInterval)))
	client := &http.Client{Transport: tracehttp.Transport(nil)}
	sent := make([]string, requests) // the traceparent the server got, per request
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Go(func() {
			tracer.SetGoroutineName(fmt.Sprintf("client %d", w))
			for i := w; i < requests; i += 3 {
				resp, err := client.Get(fmt.Sprintf("http://%s/work/%d", addr, i))
				if !assert.NoError(t, err) {
					continue
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				sent[i] = string(body)
			}
		})
	}
	wg.Wait()
	require.NoError(t, tracer.Stop())
	stdin.Close()
	require.NoError(t, cmd.Wait())

	out := filepath.Join(dir, "merged.json")
	code, _, stderr := runCmd("merge", "-o", out, clientPath, serverPath)
	require.Equal(t, 0, code, stderr)

	// In the file: every client span has a flow_out, every server span a
	// flow_in, with the same bind id for the same request. A span may be
	// an X or, when it was open across a flush on a busy machine, a B and
	// an E: the B carries the binding.
	outs, ins := map[string]boundSpan{}, map[string]boundSpan{}
	for _, s := range spansOf(t, strictEvents(t, out)) {
		id, _ := s.ev["bind_id"].(string)
		switch s.ev["name"] {
		case "HTTP GET":
			assert.Equal(t, true, s.ev["flow_out"], "%v", s.ev)
			outs[id] = s
		case "GET /work/{n}":
			assert.Equal(t, true, s.ev["flow_in"], "%v", s.ev)
			ins[id] = s
		}
	}
	require.Len(t, outs, requests)
	require.Len(t, ins, requests)
	for id, c := range outs {
		s, ok := ins[id]
		require.True(t, ok, "client span %s has no server span", id)
		assert.NotEqual(t, c.ev["pid"], s.ev["pid"])
		assert.Equal(t, c.ev["args"].(map[string]any)["traceparent.out"], s.ev["args"].(map[string]any)["traceparent.in"])
		assert.Contains(t, sent, c.ev["args"].(map[string]any)["traceparent.out"])
		// Aligned clocks: the server span lies within the client's, or
		// starts in it for request 1, whose server goes on after its
		// answer.
		assert.GreaterOrEqual(t, s.start, c.start, "server span %v", s.ev)
		if s.ev["args"].(map[string]any)["path"] != "/work/1" {
			assert.LessOrEqual(t, s.end, c.end, "server span %v", s.ev)
		}
	}

	code, report, _ := runCmd("check", out)
	assert.Equal(t, 0, code, report)

	// The slow requests' spans are B events (TestHTTPServerChild); the
	// others are X events unless a busy machine made them slow too.
	phase := func(spans map[string]boundSpan, n string) any {
		for _, s := range spans {
			args := s.ev["args"].(map[string]any)
			if args["url.path"] == "/work/"+n || args["path"] == "/work/"+n {
				return s.ev["ph"]
			}
		}
		return nil
	}
	assert.Equal(t, "B", phase(outs, "0"), "client span of request 0")
	assert.Equal(t, "B", phase(ins, "0"), "server span of request 0")
	assert.Equal(t, "B", phase(ins, "1"), "server span of request 1")

	// In both importers: an arrow per request, from a client span to a
	// server span. chrome://tracing reads bind_id on X events alone: a
	// request with a B at either end has its arrow in Perfetto only, and
	// a B at the client's end leaves catapult a consumer without a
	// producer, which it warns of.
	xOnly := 0
	var noProducer []string
	for id, c := range outs {
		switch {
		case c.ev["ph"] == "X" && ins[id].ev["ph"] == "X":
			xOnly++
		case c.ev["ph"] == "B" && ins[id].ev["ph"] == "X":
			noProducer = append(noProducer, "Flow consumer "+id+" does not have a flow producer")
		}
	}
	perfetto, catapult := tracecheck.Load(t, out)
	for _, rep := range []tracecheck.Report{perfetto[0], catapult[0]} {
		require.Equal(t, true, rep["ok"], "%s: %v", rep["importer"], rep["error"])
		assert.Empty(t, rep["importErrors"], rep["importer"])
	}
	assert.Empty(t, perfetto[0]["warnings"])
	var warned []string
	warnings, _ := catapult[0]["warnings"].([]any)
	for _, w := range warnings {
		warned = append(warned, w.(map[string]any)["message"].(string))
	}
	assert.ElementsMatch(t, noProducer, warned)
	for name, rep := range map[string]tracecheck.Report{"perfetto": perfetto[0], "catapult": catapult[0]} {
		want := requests
		if name == "catapult" {
			want = xOnly
		}
		flows, _ := rep["flows"].([]any)
		require.Len(t, flows, want, name)
		for _, f := range flows {
			from := f.(map[string]any)["from"].(map[string]any)
			to := f.(map[string]any)["to"].(map[string]any)
			assert.Equal(t, "HTTP GET", from["slice"], name)
			assert.Equal(t, "GET /work/{n}", to["slice"], name)
		}
	}
}

// A boundSpan is a span of a merged file: its X or B event, and its
// start and end in microseconds.
type boundSpan struct {
	ev         map[string]any
	start, end float64
}

// spansOf returns the spans of evs, an X each and a B paired with the E
// that ends it on its track; it fails t on an E with no B open.
func spansOf(t *testing.T, evs []map[string]any) []boundSpan {
	t.Helper()
	type track struct{ pid, tid any }
	open := map[track][]map[string]any{}
	var spans []boundSpan
	for _, e := range evs {
		k := track{e["pid"], e["tid"]}
		switch e["ph"] {
		case "X":
			ts := e["ts"].(float64)
			spans = append(spans, boundSpan{e, ts, ts + e["dur"].(float64)})
		case "B":
			open[k] = append(open[k], e)
		case "E":
			stack := open[k]
			require.NotEmpty(t, stack, "an E with no B open: %v", e)
			b := stack[len(stack)-1]
			open[k] = stack[:len(stack)-1]
			spans = append(spans, boundSpan{b, b["ts"].(float64), e["ts"].(float64)})
		}
	}
	return spans
}

// TestMergeLinkArgs checks which events merge binds: spans (X, B) with a
// valid traceparent.out or traceparent.in, and no other.
func TestMergeLinkArgs(t *testing.T) {
	t.Parallel()
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	tests := []struct {
		name, event, want string // want: the fields added, "" for none
	}{
		{"client X", `{"name":"a","ph":"X","ts":1.000,"dur":1.000,"pid":1,"tid":1,"args":{"traceparent.out":"` + tp + `"}}`, `"bind_id":"0xf067aa0ba902b7","flow_out":true`},
		{"server B", `{"name":"a","ph":"B","ts":1.000,"pid":1,"tid":1,"args":{"traceparent.in":"` + tp + `"}}`, `"bind_id":"0xf067aa0ba902b7","flow_in":true`},
		{"async begin", `{"name":"a","cat":"c","ph":"b","ts":1.000,"pid":1,"tid":1,"id2":{"local":"0x1"},"args":{"traceparent.out":"` + tp + `"}}`, ""},
		{"invalid", `{"name":"a","ph":"X","ts":1.000,"dur":1.000,"pid":1,"tid":1,"args":{"traceparent.out":"00-x"}}`, ""},
		{"not a string", `{"name":"a","ph":"X","ts":1.000,"dur":1.000,"pid":1,"tid":1,"args":{"traceparent.out":1}}`, ""},
		{"bound already", `{"name":"a","ph":"X","ts":1.000,"dur":1.000,"pid":1,"tid":1,"bind_id":"0x1","flow_in":true,"args":{"traceparent.out":"` + tp + `"}}`, ""},
		{"no link", `{"name":"a","ph":"X","ts":1.000,"dur":1.000,"pid":1,"tid":1,"args":{"path":"/"}}`, ""},
		// Drawn on lanes: a server span's goroutine is renamed, since
		// chrome://tracing merges the args of the spans an arrow binds.
		{"server on a lane", `{"name":"a","ph":"X","ts":1.000,"dur":1.000,"pid":1,"tid":1,"args":{"goroutine":7,"traceparent.in":"` + tp + `"}}`, `"bind_id":"0xf067aa0ba902b7","flow_in":true`},
		{"client on a lane", `{"name":"a","ph":"X","ts":1.000,"dur":1.000,"pid":1,"tid":1,"args":{"goroutine":7,"traceparent.out":"` + tp + `"}}`, `"bind_id":"0xf067aa0ba902b7","flow_out":true`},
	}
	dir := t.TempDir()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := writeFile(t, dir, "in.json", "[\n"+tc.event+"\n]\n")
			out := filepath.Join(dir, "out.json")
			code, _, stderr := runCmd("merge", "-q", "-o", out, in)
			require.Equal(t, 0, code, stderr)
			got := strings.TrimSpace(readText(t, out))
			want := tc.event
			if tc.want != "" {
				want = strings.Replace(tc.event, `"ts":1.000`, `"ts":1.000,`+tc.want, 1)
			}
			if strings.Contains(tc.want, "flow_in") {
				want = strings.Replace(want, `"goroutine":`, `"goroutine.in":`, 1)
			}
			assert.Contains(t, got, want)
			assert.Equal(t, tc.want != "", strings.Count(got, "bind_id") == 1 && !strings.Contains(tc.event, "bind_id"))
		})
	}
}
