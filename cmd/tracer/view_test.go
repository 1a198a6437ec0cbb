package main

import (
	"context"
	"io"
	"net"
	"net/http"
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
// the viewer and the error serve returns, when it does.
func startViewer(t *testing.T, path string) (*viewer, <-chan error) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	v := newViewer(path, l)
	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { done <- v.serve(ctx) }()
	return v, done
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

// TestViewServesTheFileOnce: the Perfetto UI's URL names the file on
// 127.0.0.1; the server answers the CORS preflight, serves the file's
// bytes with the header the UI needs, refuses other paths and other host
// names, and stops once the file was fetched whole. The bytes it served
// load in trace_processor.
func TestViewServesTheFileOnce(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "my trace.json", "[\n"+ev+",\n"+ev+"\n]\n")
	v, done := startViewer(t, path)

	assert.Equal(t, "https://ui.perfetto.dev/#!/?url="+v.base()+"/my%20trace.json", v.uiURL())
	assert.True(t, strings.HasPrefix(v.base(), "http://127.0.0.1:"))

	pre := request(t, http.MethodOptions, v.fileURL(), "")
	assert.Equal(t, http.StatusNoContent, pre.StatusCode)
	assert.Equal(t, perfettoUI, pre.Header.Get("Access-Control-Allow-Origin"))

	assert.Equal(t, http.StatusNotFound, request(t, http.MethodGet, v.base()+"/etc/passwd", "").StatusCode)
	assert.Equal(t, http.StatusNotFound, request(t, http.MethodGet, v.base()+"/../"+filepath.Base(dir), "").StatusCode)
	_, port, _ := net.SplitHostPort(v.l.Addr().String())
	assert.Equal(t, http.StatusForbidden, request(t, http.MethodGet, v.fileURL(), "evil.example:"+port).StatusCode, "DNS rebinding")
	assert.Equal(t, http.StatusMethodNotAllowed, request(t, http.MethodPost, v.fileURL(), "").StatusCode)
	select {
	case <-done:
		t.Fatal("stopped before the file was fetched")
	default:
	}

	resp := request(t, http.MethodGet, v.fileURL(), "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, perfettoUI, resp.Header.Get("Access-Control-Allow-Origin"))
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, want, body)
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("still serving after the file was fetched")
	}

	served := filepath.Join(dir, "served.json")
	require.NoError(t, os.WriteFile(served, body, 0o644))
	perfetto, _ := tracecheck.Import(t, served)
	assert.Equal(t, 2.0, perfetto[0].Totals()["thread_slices"])
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

	out := make(chan string, 1)
	go func() {
		_, stdout, _ := runCmd("view", "-port", port, path)
		out <- stdout
	}()
	url := "http://127.0.0.1:" + port + "/t.json"
	require.Eventually(t, func() bool {
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 5*time.Second, 20*time.Millisecond)
	select {
	case stdout := <-out:
		assert.Contains(t, stdout, "https://ui.perfetto.dev/#!/?url="+url)
		assert.Contains(t, stdout, "ssh -L "+port+":127.0.0.1:"+port)
	case <-time.After(5 * time.Second):
		t.Fatal("tracer view did not stop after the fetch")
	}
}

func TestViewSizeWarning(t *testing.T) {
	assert.Empty(t, sizeWarning("t.json", browserLimit))
	w := sizeWarning("big.json", 3<<30)
	assert.Contains(t, w, "big.json is 3072 MiB")
	assert.Contains(t, w, "tracer stats big.json")
	assert.Contains(t, w, "trace_processor_shell --httpd big.json")
}
