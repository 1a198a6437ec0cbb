package duckdb

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gotracer/tracer/cmd/tracer/internal/tracegen"
)

// TestSQLOverURL runs "tracer sql" on the URL of a trace, as a program's
// /debug/tracer/trace answers it, and on the file of the same bytes:
// the tracer command fetches it and hands it to tracer-sql on its
// standard input (two URLs, as temporary files), and the answers are
// the same.
func TestSQLOverURL(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	for _, build := range [][]string{
		{"build", "-o", filepath.Join(bin, "tracer-sql"), "./tracer-sql"},
		{"-C", "..", "build", "-o", filepath.Join(bin, "tracer"), "."},
	} {
		out, err := exec.Command("go", build...).CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	a := tracegen.Generate(t, filepath.Join(dir, "a.json"), 256<<10)
	b := tracegen.Generate(t, filepath.Join(dir, "b.json.gz"), 256<<10)
	serve := func(path, encoding string) string {
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		if encoding == "gzip" {
			var z bytes.Buffer
			zw := gzip.NewWriter(&z)
			zw.Write(data)
			zw.Close()
			data = z.Bytes()
		}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if encoding != "" {
				w.Header().Set("Content-Encoding", encoding)
			}
			w.Write(data)
		}))
		t.Cleanup(srv.Close)
		return srv.URL + "/debug/tracer/trace?seconds=5&gzip=1"
	}
	urlA, urlB, urlAEncoded := serve(a, ""), serve(b, ""), serve(a, "gzip")

	const q = `SELECT (SELECT count(*) FROM slice) AS slices, (SELECT sum(dur) FROM slice) AS dur,
(SELECT count(*) FROM thread) AS threads, (SELECT count(*) FROM counter) AS counters, (SELECT count(*) FROM flow) AS flows,
(SELECT string_agg(DISTINCT name, ',' ORDER BY name) FROM slice) AS names`
	sql := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(filepath.Join(bin, "tracer"), append(append([]string{"sql", "-format", "csv"}, args...), q)...)
		cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		require.NoError(t, cmd.Run(), stderr.String())
		return stdout.String()
	}
	for _, tc := range []struct {
		name        string
		files, urls []string
	}{
		{"plain", []string{a}, []string{urlA}},
		{"gzip bytes", []string{b}, []string{urlB}},
		{"Content-Encoding gzip", []string{a}, []string{urlAEncoded}},
		{"two", []string{a, b}, []string{urlA, urlB}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := sql(tc.files...)
			assert.Regexp(t, `\n[1-9]\d*,`, want, "slices read")
			assert.Equal(t, want, sql(tc.urls...))
		})
	}
}
