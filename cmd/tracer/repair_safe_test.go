package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gotracer/tracer"
	"github.com/gotracer/tracer/internal/tracecheck"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRepairNeverShrinksWhatItDoesNotKnow gives repair -i files it must
// not replace: what is not a trace is an error and stays byte for byte;
// a trace that needs nothing stays byte for byte, the tracer's own
// closed files (object form) included.
func TestRepairNeverShrinksWhatItDoesNotKnow(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ownPath := filepath.Join(dir, "own.json")
	tr, err := tracer.New(ownPath)
	require.NoError(t, err)
	tr.Span("x")()
	require.NoError(t, tr.Close())
	own, err := os.ReadFile(ownPath)
	require.NoError(t, err)
	for _, tc := range []struct {
		name, content string
		code          int
		stderr        string
	}{
		{"text", strings.Repeat("not a trace, just some text\n", 1000), 1, "not a JSON trace"},
		{"binary", "\x00\x01\x02" + strings.Repeat("\xfe", 5000), 1, "not a JSON trace"},
		{"strict trace", "[\n" + ev + ",\n" + ev + "\n]\n", 0, "nothing to repair; left as it is"},
		{"tracer's own closed file", string(own), 0, "nothing to repair; left as it is"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, dir, tc.name+".json", tc.content)
			code, _, stderr := runCmd("repair", "-i", path)
			assert.Equal(t, tc.code, code, stderr)
			assert.Contains(t, stderr, tc.stderr)
			got, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.True(t, bytes.Equal([]byte(tc.content), got), "the file is left byte for byte")
		})
	}
}

// TestRepairByteOrderMark: a trace behind a UTF-8 byte order mark, which
// catapult reads and Perfetto refuses, is reported by check and repaired
// into one both load.
func TestRepairByteOrderMark(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := writeFile(t, dir, "bom.json", "\xef\xbb\xbf[\n"+ev+",\n"+ev+",\n")
	code, stdout, _ := runCmd("check", path)
	assert.Equal(t, 1, code)
	assert.Contains(t, stdout, "byte order mark")
	code, _, stderr := runCmd("repair", "-i", path)
	require.Equal(t, 0, code, stderr)
	evs := strictEvents(t, path)
	assert.Len(t, evs, 2, "every event kept")
	if heavyRun() {
		tracecheck.Import(t, path)
	}
}

// TestRepairKeepsSymlinks repairs a trace through a symlink: the symlink
// stays, the file it names is repaired, with its mode.
func TestRepairKeepsSymlinks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	target := writeFile(t, dir, "real.json", "[\n"+ev+",\n{\"na")
	require.NoError(t, os.Chmod(target, 0o640))
	link := filepath.Join(dir, "link.json")
	require.NoError(t, os.Symlink(target, link))
	code, _, stderr := runCmd("repair", "-i", link)
	require.Equal(t, 0, code, stderr)
	fi, err := os.Lstat(link)
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode()&os.ModeSymlink, "still a symlink")
	fi, err = os.Stat(target)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o640), fi.Mode().Perm())
	assert.Len(t, strictEvents(t, target), 1)
}
