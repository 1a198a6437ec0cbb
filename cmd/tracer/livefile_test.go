//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gotracer/tracer"
	"github.com/gotracer/tracer/internal/tracecheck"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const liveEnv = "TRACER_CMD_LIVE_CHILD"

// TestLiveChild is the program whose file the commands must not replace:
// it records spans, says READY, waits for its standard input to close,
// records as many again and stops, saying whether Close failed.
func TestLiveChild(t *testing.T) {
	path := os.Getenv(liveEnv)
	if path == "" {
		t.Skip("helper process for TestLiveFileRefused")
	}
	tr, err := tracer.New(path)
	require.NoError(t, err)
	for range 100 {
		tr.Span("before")()
	}
	require.NoError(t, tr.Flush())
	fmt.Println("READY")
	_, _ = io.Copy(io.Discard, os.Stdin)
	for range 100 {
		tr.Span("after")()
	}
	fmt.Println("CLOSE", tr.Close())
}

// TestLiveFileRefused runs a real program that holds its trace file and
// points every command that replaces a file at it: each refuses, says
// the file is being written, and leaves it in place (the same file, not
// one renamed over it), so that every span the program records after
// reaches the file.
func TestLiveFileRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "live.json")
	other := writeFile(t, dir, "other.json", "[\n"+ev+"\n]\n")
	cmd := exec.Command(os.Args[0], "-test.run=^TestLiveChild$")
	cmd.Env = append(os.Environ(), liveEnv+"="+path)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(out)
	ready := make(chan bool, 1)
	go func() { ready <- lines.Scan() && lines.Text() == "READY" }()
	select {
	case ok := <-ready:
		require.True(t, ok, "the child failed before it was ready")
	case <-time.After(timeout):
		t.Fatal("the child was not ready in time")
	}
	before, err := os.Stat(path)
	require.NoError(t, err)

	for _, args := range [][]string{
		{"repair", "-i", path},
		{"repair", "-o", path, other},
		{"merge", "-o", path, other},
		{"merge", "-f", "-o", path, path, other},
		{"cut", "-o", path, other},
	} {
		t.Run(strings.Join(args[:2], " "), func(t *testing.T) {
			code, _, stderr := runCmd(args...)
			assert.Equal(t, 1, code, stderr)
			assert.Contains(t, stderr, "a running tracer is writing it")
			now, err := os.Stat(path)
			require.NoError(t, err)
			assert.True(t, os.SameFile(before, now), "the live file was replaced")
		})
	}
	matches, err := filepath.Glob(filepath.Join(dir, ".*.tmp"))
	require.NoError(t, err)
	assert.Empty(t, matches, "no temporary file left behind")

	require.NoError(t, stdin.Close())
	var rest []string
	for lines.Scan() {
		rest = append(rest, lines.Text())
	}
	require.NoError(t, cmd.Wait())
	assert.Contains(t, rest, "CLOSE <nil>")
	evs := tracecheck.Read(t, path)
	assert.Len(t, tracecheck.Named(evs, "before"), 100)
	assert.Len(t, tracecheck.Named(evs, "after"), 100, "the spans recorded after the commands reached the file")
}
