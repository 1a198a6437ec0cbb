package main

import (
	"bytes"
	"encoding/json"
	"os"
	osexec "os/exec"
	"path/filepath"
	rtrace "runtime/trace"
	"strings"
	"testing"
	"time"

	"github.com/gotracer/tracer"
	"github.com/gotracer/tracer/internal/tracecheck"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// header returns the process_name event of a trace file.
func header(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	line := strings.TrimSuffix(strings.Split(string(data), "\n")[1], ",")
	var ev map[string]any
	require.NoError(t, json.Unmarshal([]byte(line), &ev))
	require.Equal(t, "process_name", ev["name"])
	return ev
}

func TestImportGo(t *testing.T) {
	dir := t.TempDir()
	spans := filepath.Join(dir, "spans.json")
	// A long flush interval keeps the span one X event, however long a
	// loaded machine makes it last.
	tr, err := tracer.New(spans, tracer.WithFlushInterval(10*time.Second))
	require.NoError(t, err)
	exec := filepath.Join(dir, "trace.out")
	f, err := os.Create(exec)
	require.NoError(t, err)
	require.NoError(t, rtrace.Start(f))
	tr.Span("work")()
	time.Sleep(time.Millisecond)
	rtrace.Stop()
	require.NoError(t, f.Close())
	require.NoError(t, tr.Close())

	data, err := os.ReadFile(exec)
	require.NoError(t, err)
	truncated := filepath.Join(dir, "truncated.out")
	require.NoError(t, os.WriteFile(truncated, data[:len(data)/2], 0o644))

	for _, tc := range []struct {
		name    string
		args    []string
		out     string
		wantErr string
		aligned bool
	}{
		{name: "plain", args: []string{exec}, out: filepath.Join(dir, "trace.json")},
		{name: "aligned", args: []string{"-align", spans, "-o", filepath.Join(dir, "a.json"), exec}, out: filepath.Join(dir, "a.json"), aligned: true},
		{name: "truncated", args: []string{"-o", filepath.Join(dir, "t.json"), truncated}, wantErr: "goruntime: "},
		{name: "missing", args: []string{filepath.Join(dir, "nope.out")}, wantErr: "no such file"},
		{name: "align to a non-trace", args: []string{"-align", exec, exec}, wantErr: "not a tracer file"},
		{name: "no trace", args: nil, wantErr: "one execution trace"},
		{name: "exists", args: []string{"-o", spans, exec}, wantErr: "exists: -f writes over it"},
		{name: "not an execution trace", args: []string{"-o", filepath.Join(dir, "x.json"), spans}, wantErr: "nothing written"},
		{name: "over with -f", args: []string{"-f", "-o", filepath.Join(dir, "a.json"), exec}, out: filepath.Join(dir, "a.json")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(tc.args, &stdout, &stderr)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				assert.NoFileExists(t, filepath.Join(dir, "x.json"), "a failed conversion leaves nothing")
				litter, _ := filepath.Glob(filepath.Join(dir, ".*.tmp"))
				assert.Empty(t, litter)
				return
			}
			require.NoError(t, err)
			assert.Contains(t, stdout.String(), "events")
			h := header(t, tc.out)
			args := h["args"].(map[string]any)
			sp := header(t, spans)
			spArgs := sp["args"].(map[string]any)
			if tc.aligned {
				assert.Equal(t, sp["pid"], h["pid"], "the span trace's pid: merge keeps them one process")
				assert.Equal(t, spArgs["ts0_mono_ns"], args["ts0_mono_ns"])
				assert.Equal(t, spArgs["ts0_unix_ns"], args["ts0_unix_ns"])
			} else {
				assert.NotEqual(t, spArgs["ts0_mono_ns"], args["ts0_mono_ns"], "its own ts 0: the trace's start")
			}
		})
	}
}

// TestMergeWithSpans is what -align is for: the converted trace and a span
// trace of the same process, merged by `tracer merge`, are one process on
// one clock, so a span starts inside a running state of its goroutine's
// runtime track, to the microsecond the file keeps.
func TestMergeWithSpans(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cmd/tracer")
	}
	dir := t.TempDir()
	spans, rt, all := filepath.Join(dir, "spans.json"), filepath.Join(dir, "rt.json"), filepath.Join(dir, "all.json")
	// A long flush interval keeps the span one X event, however long a
	// loaded machine makes it last.
	tr, err := tracer.New(spans, tracer.WithFlushInterval(10*time.Second))
	require.NoError(t, err)
	exec := filepath.Join(dir, "trace.out")
	f, err := os.Create(exec)
	require.NoError(t, err)
	require.NoError(t, rtrace.Start(f))
	end := tr.Span("work")
	for deadline := time.Now().Add(500 * time.Microsecond); time.Now().Before(deadline); {
		// running, long enough to pass the default minimum state
	}
	end()
	rtrace.Stop()
	require.NoError(t, f.Close())
	require.NoError(t, tr.Close())

	var stdout, stderr bytes.Buffer
	require.NoError(t, run([]string{"-align", spans, "-o", rt, exec}, &stdout, &stderr))
	merge := osexec.Command("go", "run", "github.com/gotracer/tracer/cmd/tracer", "merge", "-o", all, spans, rt)
	out, err := merge.CombinedOutput()
	require.NoError(t, err, "%s", out)

	evs := tracecheck.Read(t, all)
	pids := map[int]bool{}
	for _, e := range evs {
		if e.Ph == "X" {
			pids[e.Pid] = true
		}
	}
	assert.Len(t, pids, 1, "spans and runtime states in one process")
	work := tracecheck.Named(evs, "work")
	require.Len(t, work, 1)
	w := work[0]
	const runtimeTidBit = 1 << 31
	inside := false
	for _, e := range evs {
		if e.Ph == "X" && e.Name == "running" && e.Tid == runtimeTidBit|w.Tid &&
			e.Ts <= w.Ts+1 && e.Ts+e.Dur >= w.Ts-1 {
			inside = true
		}
	}
	assert.True(t, inside, "the span starts while its goroutine runs, on the merged clock")
}
