package main

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gotracer/tracer"
	"github.com/klauspost/compress/gzip"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// record writes a small trace at path with one span named name.
func record(t *testing.T, path, name string) {
	t.Helper()
	// A flush interval longer than the test: the span is one X event
	// however long a loaded machine makes it last.
	tr, err := tracer.New(path, tracer.WithFlushInterval(10*time.Second))
	require.NoError(t, err)
	time.Sleep(time.Millisecond)
	end := tr.Span(name)
	time.Sleep(time.Millisecond)
	end()
	require.NoError(t, tr.Close())
}

// anchorOf returns the pid and the wall-clock anchor of the trace at
// path, read from its text: as a float64, ts0_unix_ns would be rounded.
func anchorOf(t *testing.T, path string) (pid float64, anchor int64) {
	t.Helper()
	m := regexp.MustCompile(`"process_name","ph":"M","pid":(\d+).*"ts0_unix_ns":(\d+)`).FindStringSubmatch(readText(t, path))
	require.NotNil(t, m, "no anchor in %s", path)
	p, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	anchor, err = strconv.ParseInt(m[2], 10, 64)
	require.NoError(t, err)
	return p, anchor
}

// readText returns the text of a trace, plain or gzip.
func readText(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(f)
		require.NoError(t, err)
		r = zr
	}
	data, err := io.ReadAll(r)
	require.NoError(t, err)
	return string(data)
}

func find(t *testing.T, evs []map[string]any, ph, name string) map[string]any {
	t.Helper()
	for _, e := range evs {
		if e["ph"] == ph && e["name"] == name {
			return e
		}
	}
	t.Fatalf("no %s event named %s", ph, name)
	return nil
}

// TestMergeProcesses merges two traces of one process (so with one pid)
// started 30ms apart: the second's pid is remapped, its clock shifted by
// the difference of the anchors.
func TestMergeProcesses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json.gz")
	record(t, a, "in a")
	time.Sleep(30 * time.Millisecond)
	record(t, b, "in b")
	evA, evB := strictEvents(t, a), strictEvents(t, b)
	pidA, anchorA := anchorOf(t, a)
	pidB, anchorB := anchorOf(t, b)
	require.Equal(t, pidA, pidB)
	require.Greater(t, anchorB-anchorA, int64(30*time.Millisecond))

	out := filepath.Join(dir, "merged.json.gz")
	code, _, stderr := runCmd("merge", "-o", out, a, b) // the first keeps its pid
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "it becomes pid 4194304")
	merged := strictEvents(t, out) // one gzip member
	// A process is named once: a file may end with its header again.
	repeated := count(evA, "M", "process_name") - 1 + count(evB, "M", "process_name") - 1
	assert.Len(t, merged, len(evA)+len(evB)-repeated)

	xa, xb := find(t, merged, "X", "in a"), find(t, merged, "X", "in b")
	assert.Equal(t, pidA, xa["pid"])
	assert.Equal(t, float64(remapBase), xb["pid"])
	assert.InDelta(t, find(t, evA, "X", "in a")["ts"].(float64), xa["ts"].(float64), 0.0005)
	shift := float64(anchorB-anchorA) / 1000 // microseconds
	assert.InDelta(t, find(t, evB, "X", "in b")["ts"].(float64)+shift, xb["ts"].(float64), 0.0015)

	names := 0
	for _, e := range merged {
		if e["name"] == "process_name" {
			names++
			args := e["args"].(map[string]any)
			assert.Equal(t, float64(anchorA), args["ts0_unix_ns"], "ts 0 of the merged trace is the earliest anchor")
			if e["pid"] == float64(remapBase) {
				assert.True(t, strings.HasSuffix(args["name"].(string), "(pid "+itoa(int(pidB))+")"), args["name"])
			}
		}
	}
	assert.Equal(t, 2, names)
	code, stdout, _ := runCmd("check", out)
	assert.Equal(t, 0, code, stdout)
	if heavyRun() {
		importers(t, out)
	}
}

// TestMergeRotated merges the files of a rotated trace, with a span open
// across every rotation: its B event, which each new file repeats at its
// top, is in the merged trace once. Another trace of the same process,
// given first, keeps the pid: the rotated files all get one new pid.
func TestMergeRotated(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	other := filepath.Join(dir, "other.json")
	record(t, other, "elsewhere")
	path := filepath.Join(dir, "rot.json")
	tr, err := tracer.New(path, tracer.WithMaxFileSize(16<<10))
	require.NoError(t, err)
	end := tr.LongSpan("whole run")
	workload(tr, 2, func() bool { tr.Flush(); return tr.Stats().Bytes > 200<<10 })
	end()
	require.NoError(t, tr.Close())
	files, err := filepath.Glob(filepath.Join(dir, "rot*.json"))
	require.NoError(t, err)
	require.Greater(t, len(files), 5)
	var all []map[string]any
	begins := 0
	for _, f := range files {
		evs := strictEvents(t, f)
		all = append(all, evs...)
		begins += count(evs, "B", "whole run")
	}
	require.Equal(t, len(files), begins, "every file repeats the open B")

	out := filepath.Join(dir, "merged.json")
	code, _, stderr := runCmd(append([]string{"merge", "-o", out, other}, files...)...)
	require.Equal(t, 0, code, stderr)
	merged := strictEvents(t, out)
	assert.Equal(t, 1, count(merged, "B", "whole run"))
	assert.Equal(t, 1, count(merged, "E", "whole run"))
	otherEvents := strictEvents(t, other)
	// Every file of the rotated process repeats the open B and starts
	// with its header; each file may end with it again: once is enough.
	repeated := count(otherEvents, "M", "process_name") - 1 + count(all, "M", "process_name") - 1
	assert.Len(t, merged, len(otherEvents)+len(all)-(begins-1)-repeated)
	pid, _ := anchorOf(t, other)
	for _, e := range merged[len(otherEvents):] {
		if p, ok := e["pid"]; ok {
			require.Equal(t, float64(remapBase), p, "%v", e)
		}
	}
	assert.Equal(t, pid, merged[0]["pid"])
	code, stdout, _ := runCmd("check", out)
	assert.Equal(t, 0, code, stdout)
}

// TestMergeOffset merges files of another producer, without anchors,
// shifting one by -offset: pids are kept apart all the same.
func TestMergeOffset(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := writeFile(t, dir, "a.json", `[{"name":"x","ph":"X","ts":1,"dur":2,"pid":7,"tid":1}]`)
	b := writeFile(t, dir, "b.json", `{"traceEvents":[{"name":"y","ph":"X","ts":1.5,"dur":2,"pid":7,"tid":1}]}`)
	out := filepath.Join(dir, "m.json")
	code, _, stderr := runCmd("merge", "-q", "-o", out, "-offset", b+"=2ms", a, b)
	require.Equal(t, 0, code, stderr)
	assert.Empty(t, stderr)
	merged := strictEvents(t, out)
	require.Len(t, merged, 3) // and a process_name for the remapped pid
	assert.Equal(t, 1.0, find(t, merged, "X", "x")["ts"])
	y := find(t, merged, "X", "y")
	assert.Equal(t, 2001.5, y["ts"])
	assert.Equal(t, float64(remapBase), y["pid"])
	p := find(t, merged, "M", "process_name")
	assert.Equal(t, "pid 7 of b.json", p["args"].(map[string]any)["name"])
}

// TestMergeRefusesCopy: a byte-identical copy of a file, under another
// name, is the same events twice; -f merges it anyway.
func TestMergeRefusesCopy(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := generate(t, filepath.Join(dir, "a.json"), 300<<10)
	data, err := os.ReadFile(a)
	require.NoError(t, err)
	b := writeFile(t, dir, "copy.json", string(data))
	out := filepath.Join(dir, "out.json")
	code, _, stderr := runCmd("merge", "-o", out, a, b)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "hold the same events (a copy)")
	assert.NoFileExists(t, out)
	code, _, stderr = runCmd("merge", "-f", "-o", out, a, b)
	assert.Equal(t, 0, code, stderr)
}
