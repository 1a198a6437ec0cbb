package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRun runs the command line: usage mistakes are status 2, a file
// that cannot be read status 1, and an export reports what it wrote.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "trace.json")
	require.NoError(t, os.WriteFile(path, []byte(`[{"ph":"X","name":"a","pid":1,"tid":1,"ts":0,"dur":2},`+"\n"), 0o644))
	for _, tc := range []struct {
		name       string
		args       []string
		wantStatus int
		wantErr    string
	}{
		{"export", []string{"-format", "parquet", "-o", filepath.Join(dir, "out"), path}, 0, "exported 1 events of 1 files"},
		{"again", []string{"-o", filepath.Join(dir, "out"), path}, 1, "already holds a slice table"},
		{"no -o", []string{path}, 2, "-o DIR is required"},
		{"no file", []string{"-o", filepath.Join(dir, "x")}, 2, "no file to export"},
		{"csv", []string{"-format", "csv", "-o", filepath.Join(dir, "y"), path}, 2, `unknown format "csv"`},
		{"missing file", []string{"-o", filepath.Join(dir, "z"), filepath.Join(dir, "none.json")}, 1, "no such file"},
		// The first file exported, the second missing: no half tables.
		{"missing second file", []string{"-o", filepath.Join(dir, "w"), path, filepath.Join(dir, "none.json")}, 1, "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			status := run(tc.args, &stderr)
			assert.Equal(t, tc.wantStatus, status, stderr.String())
			assert.Contains(t, stderr.String(), tc.wantErr)
			if i := slices.Index(tc.args, "-o"); tc.wantStatus != 0 && tc.name != "again" && i >= 0 {
				assert.NoDirExists(t, tc.args[i+1], "left behind")
			}
		})
	}
}
