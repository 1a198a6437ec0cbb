package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gotracer/tracer"
	"github.com/stretchr/testify/require"
)

const crashEnv = "TRACER_CMD_CRASH_CHILD"

// TestCrashChild is the process crashed kills: it records the workload,
// with a span open since its start on another goroutine, says READY after
// a few flushes and goes on until killed.
func TestCrashChild(t *testing.T) {
	path := os.Getenv(crashEnv)
	if path == "" {
		t.Skip("helper process for the tests on files left by a killed process")
	}
	tr, err := tracer.New(path, tracer.WithFlushInterval(10*time.Millisecond))
	require.NoError(t, err)
	go func() {
		tr.SetGoroutineName("lifetime")
		defer tr.Span("lifetime")() // open at every flush: written as B, never ended
		// Paced, so that the file a kill leaves is a few megabytes, not
		// the hundreds of megabytes a second an unpaced loop writes.
		workload(tr, 2, func() bool { tr.Flush(); time.Sleep(20 * time.Millisecond); return false })
	}()
	for range 5 {
		time.Sleep(25 * time.Millisecond)
		require.NoError(t, tr.Flush())
	}
	fmt.Println("READY")
	select {}
}

// crashed runs TestCrashChild writing to path, kills it with SIGKILL once
// it has flushed a few times, and returns path.
func crashed(t *testing.T, path string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$")
	cmd.Env = append(os.Environ(), crashEnv+"="+path)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	ready := make(chan bool)
	go func() {
		lines := bufio.NewScanner(out)
		for lines.Scan() {
			if strings.TrimSpace(lines.Text()) == "READY" {
				ready <- true
				return
			}
		}
		close(ready)
	}()
	select {
	case ok := <-ready:
		require.True(t, ok, "the child exited before it was ready")
	case <-time.After(timeout):
		cmd.Process.Kill()
		t.Fatal("the child was not ready in time")
	}
	time.Sleep(7 * time.Millisecond) // kill it in the middle of its work
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	return path
}
