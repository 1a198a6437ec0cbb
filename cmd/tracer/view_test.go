package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gotracer/tracer/internal/tracecheck"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startViewer serves path on an ephemeral port of 127.0.0.1 and returns
// the viewer, the error serve returns, when it does, and what stops it
// as Ctrl-C does.
func startViewer(t *testing.T, path string, idle time.Duration) (*viewer, <-chan error, context.CancelFunc) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	v := newViewer(path, l)
	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { done <- v.serve(ctx, idle) }()
	return v, done, cancel
}

// request sends method to url with the Host header host (its own if empty).
func request(t *testing.T, method, url, host string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	require.NoError(t, err)
	if host != "" {
		req.Host = host
	}
	req.Header.Set("Origin", perfettoUI)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// TestViewServesTheFile: the Perfetto UI's URL names the file on
// 127.0.0.1; the server answers the CORS preflight, serves the file's
// bytes with the header the UI needs (whole, or the range asked for),
// refuses other paths and other host names, serves it again (a reloaded
// tab), and stops on Ctrl-C. The bytes it served load in trace_processor.
func TestViewServesTheFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := writeFile(t, dir, "my trace.json", "[\n"+ev+",\n"+ev+"\n]\n")
	v, done, stop := startViewer(t, path, 0)

	assert.Equal(t, "https://ui.perfetto.dev/#!/?url="+v.base()+"/my_trace.json", v.uiURL())
	assert.True(t, strings.HasPrefix(v.base(), "http://127.0.0.1:"))

	pre := request(t, http.MethodOptions, v.fileURL(), "")
	assert.Equal(t, http.StatusNoContent, pre.StatusCode)
	assert.Equal(t, perfettoUI, pre.Header.Get("Access-Control-Allow-Origin"))

	assert.Equal(t, http.StatusNotFound, request(t, http.MethodGet, v.base()+"/etc/passwd", "").StatusCode)
	assert.Equal(t, http.StatusNotFound, request(t, http.MethodGet, v.base()+"/../"+filepath.Base(dir), "").StatusCode)
	_, port, _ := net.SplitHostPort(v.l.Addr().String())
	assert.Equal(t, http.StatusForbidden, request(t, http.MethodGet, v.fileURL(), "evil.example:"+port).StatusCode, "DNS rebinding")
	assert.Equal(t, http.StatusMethodNotAllowed, request(t, http.MethodPost, v.fileURL(), "").StatusCode)

	want, err := os.ReadFile(path)
	require.NoError(t, err)
	var body []byte
	for range 2 { // the UI's first load, then a reload of its tab
		resp := request(t, http.MethodGet, v.fileURL(), "")
		require.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, perfettoUI, resp.Header.Get("Access-Control-Allow-Origin"))
		body, err = io.ReadAll(resp.Body)
		require.NoError(t, err)
		assert.Equal(t, want, body)
	}
	req, err := http.NewRequest(http.MethodGet, v.fileURL(), nil)
	require.NoError(t, err)
	req.Header.Set("Range", "bytes=2-9")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	part, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Equal(t, http.StatusPartialContent, resp.StatusCode)
	assert.Equal(t, want[2:10], part)
	select {
	case <-done:
		t.Fatal("stopped while the UI may fetch the file again")
	default:
	}
	stop()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("still serving after Ctrl-C")
	}

	served := filepath.Join(dir, "served.json")
	require.NoError(t, os.WriteFile(served, body, 0o644))
	perfetto, _ := tracecheck.ImportQuick(t, served)
	assert.Equal(t, 2.0, perfetto[0].Totals()["thread_slices"])
}

// TestViewNames: a file name with characters that mean something in a
// URL is served under a name the printed URL needs no escaping for.
func TestViewNames(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, name := range []string{"a&b.json", "a#b.json", "a?b.json", "100%.json", "a+b c.json"} {
		path := writeFile(t, dir, name, "[\n"+ev+"\n]\n")
		v, _, _ := startViewer(t, path, 0)
		u, err := url.Parse(v.uiURL())
		require.NoError(t, err)
		frag, err := url.Parse(strings.TrimPrefix(u.Fragment, "!"))
		require.NoError(t, err)
		got := frag.Query()["url"]
		assert.Equal(t, []string{v.fileURL()}, got, name)
		resp := request(t, http.MethodGet, got[0], "")
		assert.Equal(t, http.StatusOK, resp.StatusCode, name)
	}
}

// TestViewStalledClient: Ctrl-C stops view even while a client holds a
// download half read; and with no request for the idle time it stops by
// itself.
func TestViewStalledClient(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := writeFile(t, dir, "big.json", "[\n"+strings.Repeat(ev+",\n", 200_000)+ev+"\n]\n")
	v, done, stop := startViewer(t, path, 0)
	conn, err := net.Dial("tcp", v.l.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	_, err = io.WriteString(conn, "GET /big.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	require.NoError(t, err)
	head := make([]byte, 100)
	_, err = io.ReadFull(conn, head) // then reads no more
	require.NoError(t, err)
	stop()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Ctrl-C did not stop view while a client stalls")
	}

	_, done, _ = startViewer(t, path, 50*time.Millisecond)
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("view did not stop when idle")
	}
}

// TestViewCommand runs tracer view without a browser: it prints the URL
// and what to forward over SSH, warns of a file too big for the browser,
// and fails clearly on a missing file or a port in use.
func TestViewCommand(t *testing.T) {
	t.Setenv("TRACER_NO_BROWSER", "1")
	dir := t.TempDir()
	path := writeFile(t, dir, "t.json", "[\n"+ev+"\n]\n")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	_, port, _ := net.SplitHostPort(l.Addr().String())
	code, _, stderr := runCmd("view", "-port", port, path)
	assert.Equal(t, 1, code, "the port is in use")
	assert.Contains(t, stderr, "cannot serve on 127.0.0.1:"+port)
	l.Close()

	code, _, stderr = runCmd("view", filepath.Join(dir, "nope.json"))
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "no such file")

	url := "http://127.0.0.1:" + port + "/t.json"
	_, idle, stdout, _ := viewAndFetch(t, url, func(idle string) (int, string, string) {
		return runCmd("view", "-port", port, "-idle", idle, path)
	})
	assert.Contains(t, stdout, "https://ui.perfetto.dev/#!/?url="+url)
	assert.Contains(t, stdout, "ssh -L "+port+":127.0.0.1:"+port)
	assert.Contains(t, stdout, "until Ctrl-C, or "+idle+" without a request")
}

// viewAndFetch runs view, a run of tracer view with the idle time it is
// given, fetches url from it once it serves, and returns the body, the
// idle time and the command's stdout and stderr once it has stopped,
// idle. The command counts its idle time from its start: a machine too
// loaded to make the first request within it stops the command first,
// so each try gives it longer (300 ms, then 3 s, then 30 s).
func viewAndFetch(t *testing.T, url string, view func(idle string) (code int, stdout, stderr string)) (body []byte, idle, stdout, stderr string) {
	t.Helper()
	type result struct {
		code           int
		stdout, stderr string
	}
	for _, idle := range []string{"300ms", "3s", "30s"} {
		done := make(chan result, 1)
		go func() {
			code, stdout, stderr := view(idle)
			done <- result{code, stdout, stderr}
		}()
		var r result
		served, stopped := false, false
		for !stopped && !served {
			select {
			case r = <-done:
				stopped = true
			default:
				resp, err := http.Get(url)
				if err != nil {
					time.Sleep(20 * time.Millisecond) // not listening yet
					continue
				}
				body, err = io.ReadAll(resp.Body)
				resp.Body.Close()
				require.NoError(t, err)
				require.Equal(t, http.StatusOK, resp.StatusCode)
				served = true
			}
		}
		if !served {
			t.Logf("tracer view -idle %s stopped before the first request: again, idle longer", idle)
			continue
		}
		select {
		case r = <-done:
		case <-time.After(time.Minute):
			t.Fatal("tracer view did not stop once idle")
		}
		require.Equal(t, 0, r.code, r.stderr)
		return body, idle, r.stdout, r.stderr
	}
	t.Fatal("tracer view served no request")
	return nil, "", "", ""
}

func TestViewSizeWarning(t *testing.T) {
	t.Parallel()
	assert.Empty(t, sizeWarning("t.json", browserLimit))
	w := sizeWarning("big.json", 3<<30)
	assert.Contains(t, w, "big.json is 3072 MiB")
	assert.Contains(t, w, "tracer stats big.json")
	assert.Contains(t, w, "trace_processor_shell --httpd big.json")
}
