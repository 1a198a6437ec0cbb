package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFlagsAfterFiles: flags go before or after file names, as go test
// takes them; "--" ends the flags, for a file named like one.
func TestFlagsAfterFiles(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "t.json", "[\n"+ev+"\n]\n")
	writeFile(t, dir, "-top", "[\n"+ev+"\n]\n")
	t.Chdir(dir) // for a relative file name that starts with "-"
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"before", []string{"stats", "-json", path}, 0, `"spans"`},
		{"after", []string{"stats", path, "-json"}, 0, `"spans"`},
		{"value after", []string{"stats", path, "-top", "1", "-json"}, 0, `"spans"`},
		{"check, quiet after", []string{"check", path, "-q"}, 0, ""},
		{"dashed file after --", []string{"check", "--", "-top"}, 0, ""},
		{"dashed file without --", []string{"check", "-top"}, 2, ""},
		{"unknown flag after", []string{"stats", path, "-nope"}, 2, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCmd(tc.args...)
			require.Equal(t, tc.code, code, stderr)
			assert.Contains(t, stdout, tc.want)
		})
	}
}

// TestVersion prints the module and the Go version from the build info.
func TestVersion(t *testing.T) {
	t.Parallel()
	code, stdout, _ := runCmd("version")
	require.Equal(t, 0, code)
	assert.True(t, strings.HasPrefix(stdout, "tracer "), stdout)
	assert.Contains(t, stdout, runtime.Version())
	code, _, _ = runCmd("version", "extra")
	assert.Equal(t, 2, code)
}

// TestMergeSameFileTwice: a file given twice, under any name, or the
// output among the inputs, is refused without -f, and nothing is written.
func TestMergeSameFileTwice(t *testing.T) {
	dir := t.TempDir()
	a := writeFile(t, dir, "a.json", "[\n"+ev+"\n]\n")
	t.Chdir(dir)
	out := filepath.Join(dir, "all.json")
	for _, args := range [][]string{
		{"merge", "-o", out, a, a},
		{"merge", "-o", out, a, "./a.json"},
		{"merge", "-o", a, a},
	} {
		code, _, stderr := runCmd(args...)
		assert.Equal(t, 1, code, "%v", args)
		assert.Contains(t, stderr, "-f", "the error says how to do it anyway")
		assert.NoFileExists(t, out)
	}
	code, _, stderr := runCmd("merge", "-f", "-q", "-o", out, a, a)
	require.Equal(t, 0, code, stderr)
	assert.Len(t, strictEvents(t, out), 2, "with -f, twice")
}

// TestCutFileReported: a file cut by a crash is said to be one, with the
// spans still open at its end, and stats counts those spans to the end of
// the trace rather than leaving them out.
func TestCutFileReported(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cut := writeFile(t, dir, "cut.json", "[\n"+
		`{"name":"request","ph":"B","ts":10,"pid":1,"tid":1},`+"\n"+
		`{"name":"step","ph":"X","ts":20,"dur":5,"pid":1,"tid":1},`+"\n"+
		`{"name":"last","ph":"X","ts":30,"dur":10,"pid":1,"tid":2},`+"\n")
	code, stdout, _ := runCmd("check", cut)
	assert.Equal(t, 0, code, "both viewers load it")
	assert.Contains(t, stdout, "cut: the file ends as a crash leaves it")
	assert.Contains(t, stdout, "1 span still open at the end")

	code, stdout, stderr := runCmd("stats", "-json", cut)
	require.Equal(t, 0, code, stderr)
	var s Stats
	require.NoError(t, json.Unmarshal([]byte(stdout), &s))
	assert.Equal(t, 1, s.Open)
	assert.Contains(t, s.Cut, "cut:")
	var request *SpanStats
	for i := range s.Spans {
		if s.Spans[i].Name == "request" {
			request = &s.Spans[i]
		}
	}
	require.NotNil(t, request, "the open span is counted")
	assert.EqualValues(t, 1, request.Count)
	assert.EqualValues(t, 30_000, request.Total, "from its start to the end of the trace (ns)")
	assert.EqualValues(t, 25_000, request.Self)
}

// TestNotATraceRefused gives the commands that write what they read a
// file that is no JSON trace (text, binary, gzipped text): each fails
// with the reader's words and writes nothing, and an output already there
// stays byte for byte, as with any error. check reports it as a problem.
func TestNotATraceRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	_, err := w.Write([]byte("just some text\n"))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	good := writeFile(t, dir, "good.json", "[\n"+ev+",\n"+ev+"\n]\n")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	_, busy, _ := net.SplitHostPort(l.Addr().String())
	for _, f := range []struct{ name, content string }{
		{"text.txt", "hello, not a trace\n"},
		{"binary.json", "\x00\x01\x02\xfe\xfe"},
		{"text.json.gz", gz.String()},
	} {
		path := writeFile(t, dir, f.name, f.content)
		for _, tc := range []struct {
			name string
			args []string // the output last
		}{
			{"cut", []string{"cut", path, "-o"}},
			{"merge", []string{"merge", "-f", path, "-o"}},
			{"merge with a trace", []string{"merge", "-f", good, path, "-o"}},
		} {
			t.Run(f.name+"/"+tc.name, func(t *testing.T) {
				out := filepath.Join(dir, f.name+tc.name+".out.json")
				code, _, stderr := runCmd(append(tc.args, out)...)
				assert.Equal(t, 1, code)
				assert.Contains(t, stderr, path+":1: not a JSON trace")
				assert.NoFileExists(t, out)
				const before = "a file the user had\n"
				require.NoError(t, os.WriteFile(out, []byte(before), 0o644))
				code, _, _ = runCmd(append(tc.args, out)...)
				assert.Equal(t, 1, code)
				got, err := os.ReadFile(out)
				require.NoError(t, err)
				assert.Equal(t, before, string(got))
			})
		}
		code, stdout, _ := runCmd("check", path)
		assert.Equal(t, 1, code)
		assert.Contains(t, stdout, "not a JSON trace", f.name)

		// view refuses it before it serves: on a port in use, a view
		// that went on would fail to listen instead.
		code, _, stderr := runCmd("view", "-no-browser", "-port", busy, path)
		assert.Equal(t, 1, code)
		assert.Contains(t, stderr, path+":1: not a JSON trace", f.name)
		content := f.content
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, content)
		}))
		// A URL is fetched once view listens (on any port here; a view
		// that went on would serve until idle, and exit 0).
		code, _, stderr = runCmd("view", "-no-browser", "-port", "0", "-idle", "1s", srv.URL+"/"+f.name)
		srv.Close()
		assert.Equal(t, 1, code)
		assert.Contains(t, stderr, srv.URL+"/"+f.name+":1: not a JSON trace", f.name)
	}
}
