package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRun runs the command line: the last argument is the query, the
// ones before the files; mistakes are usage errors (status 2), a bad
// file or query a failure (status 1).
func TestRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.json")
	require.NoError(t, os.WriteFile(path, []byte(`[{"ph":"X","name":"a","pid":1,"tid":1,"ts":0,"dur":2},`+"\n"), 0o644))
	for _, tc := range []struct {
		name       string
		args       []string
		wantStatus int
		wantOut    string
		wantErr    string
	}{
		{"query", []string{path, "SELECT name, dur FROM slice"}, 0, "name  dur\na     2000\n", ""},
		{"csv", []string{"-format", "csv", path, "SELECT name FROM slice"}, 0, "name\na\n", ""},
		{"flag after the query", []string{path, "SELECT name FROM slice", "-format", "csv"}, 0, "name\na\n", ""},
		{"flag between", []string{path, "-format", "csv", "SELECT name FROM slice"}, 0, "name\na\n", ""},
		{"no file", []string{"SELECT 1 AS one"}, 0, "one\n1\n", ""},
		{"nothing", nil, 2, "", "want the trace files, then the query"},
		{"bad format", []string{"-format", "xml", path, "SELECT 1"}, 2, "", `unknown format "xml"`},
		{"bad flag", []string{"-x", path, "SELECT 1"}, 2, "", "flag provided but not defined"},
		{"bad query", []string{path, "SELECT FROM WHERE"}, 1, "", "Parser Error"},
		{"missing file", []string{filepath.Join(t.TempDir(), "none.json"), "SELECT 1"}, 1, "", "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			status := run(tc.args, &stdout, &stderr)
			assert.Equal(t, tc.wantStatus, status, stderr.String())
			assert.Equal(t, tc.wantOut, stdout.String())
			assert.Contains(t, stderr.String(), tc.wantErr)
		})
	}
}
