//go:build unix

package tracer

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gotracer/tracer/internal/childtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const endingChildEnv = "TRACER_ENDING_CHILD" // mode:path

// TestEndingChild is a program that ends abnormally in the way its mode
// says, with the default tracer running. The flush interval is long, so
// whatever reaches the file was written by the ending itself.
func TestEndingChild(t *testing.T) {
	spec := os.Getenv(endingChildEnv)
	if spec == "" {
		t.Skip("helper process for TestSignalStopsTrace and TestPanicStopsTrace")
	}
	mode, path, _ := strings.Cut(spec, ":")
	require.NoError(t, Start(path, withClock(newTestClock())))
	if mode != "goroutine panic" {
		defer Stop() // what the README tells main to do
	}
	SetGoroutineName("main")
	Span("before", Int("n", 1))()
	release, busy := make(chan struct{}), make(chan struct{})
	go func() {
		SetGoroutineName("worker")
		defer Span("worker busy", String("job", "long"))()
		close(busy)
		<-release
	}()
	<-busy
	switch mode {
	case "SIGTERM", "SIGINT":
		cancel := StopOnSignal()
		defer cancel()
		defer Span("waiting for the signal")()
		os.Stdout.WriteString("READY\n")
		for i := 0; ; i++ {
			Instant("tick", Int("i", i))
			time.Sleep(time.Millisecond)
		}
	case "SIGINT ignored", "SIGINT ignored by the parent":
		if mode == "SIGINT ignored" {
			signal.Ignore(os.Interrupt) // as a program that must not stop on Ctrl-C does
		}
		cancel := StopOnSignal()
		defer cancel()
		os.Stdout.WriteString("READY\n")
		for i := range 300 { // the parent sends SIGINT meanwhile
			Instant("tick", Int("i", i))
			time.Sleep(time.Millisecond)
		}
		if !Enabled() {
			os.Stdout.WriteString("STOPPED\n")
		}
		Span("after the signal")()
		require.NoError(t, Stop())
		os.Exit(3) // a status the parent recognises: ran to its end
	case "main panic":
		defer Span("unwinding")() // ends while the panic unwinds, before Stop
		panic("boom in main")
	case "goroutine panic", "goroutine panic with StopOnPanic":
		withStopOnPanic := mode == "goroutine panic with StopOnPanic"
		go func() {
			if withStopOnPanic {
				defer StopOnPanic()
			}
			Span("worker step")()
			panic("boom in a goroutine")
		}()
		time.Sleep(10 * time.Second)
	}
}

// runEndingChild runs TestEndingChild in mode, sending it sig once it is
// ready if sig is not nil, and returns how it ended and its stderr.
func runEndingChild(t *testing.T, mode, path string, sig os.Signal) (syscall.WaitStatus, string) {
	t.Helper()
	cmd := childtest.Command("TestEndingChild", endingChildEnv+"="+mode+":"+path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	// Should the ending not end it, fail rather than hang.
	defer time.AfterFunc(time.Minute, func() { cmd.Process.Kill() }).Stop()
	if sig != nil {
		lines := bufio.NewScanner(out)
		for lines.Scan() && !strings.Contains(lines.Text(), "READY") {
		}
		time.Sleep(20 * time.Millisecond) // a few ticks
		require.NoError(t, cmd.Process.Signal(sig))
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "the child must fail: %v\n%s", err, stderr.String())
	return exit.Sys().(syscall.WaitStatus), stderr.String()
}

// TestSignalStopsTrace: with StopOnSignal, SIGTERM and SIGINT close the
// trace, including the spans open at that moment, and the process still
// dies of the signal.
func TestSignalStopsTrace(t *testing.T) {
	for name, sig := range map[string]syscall.Signal{"SIGTERM": syscall.SIGTERM, "SIGINT": syscall.SIGINT} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "trace.json")
			status, stderr := runEndingChild(t, name, path, sig)
			require.True(t, status.Signaled(), "the child must die of the signal, not exit: %v\n%s", status, stderr)
			assert.Equal(t, sig, status.Signal())

			evs := readClosed(t, path)
			checkTracks(t, evs)
			assert.Equal(t, map[string]any{"n": 1.0}, find(t, evs, "X", "before").Args)
			assert.NotEmpty(t, byName(evs, "tick"), "events up to the signal are written")
			// Open when the signal came: written as B, however young.
			assert.Equal(t, map[string]any{"job": "long"}, find(t, evs, "B", "worker busy").Args)
			find(t, evs, "B", "waiting for the signal")
		})
	}
}

// TestIgnoredSignalIsIgnored: StopOnSignal changes nothing for a signal
// the program ignores, by signal.Ignore or inherited from its parent (a
// shell's trap ” INT, nohup-style launchers): a SIGINT neither stops the
// trace nor the program, which records on and closes its file itself.
func TestIgnoredSignalIsIgnored(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"SIGINT ignored", "SIGINT ignored by the parent"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel() // a child that mostly waits
			path := filepath.Join(t.TempDir(), "trace.json")
			cmd := childtest.Command("TestEndingChild")
			if mode == "SIGINT ignored by the parent" {
				cmd = exec.Command("sh", "-c", `trap '' INT; exec "$0" "$@"`, os.Args[0], "-test.run=^TestEndingChild$")
			}
			cmd.Env = append(os.Environ(), endingChildEnv+"="+mode+":"+path)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.StdoutPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			defer time.AfterFunc(time.Minute, func() { cmd.Process.Kill() }).Stop()
			lines := bufio.NewScanner(out)
			for lines.Scan() && lines.Text() != "READY" {
			}
			require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
			var rest strings.Builder
			for lines.Scan() {
				rest.WriteString(lines.Text() + "\n")
			}
			err = cmd.Wait()
			var exit *exec.ExitError
			require.True(t, errors.As(err, &exit), "%v\n%s", err, stderr.String())
			require.Equal(t, 3, exit.ExitCode(), "the program ran to its end: %v\n%s", exit, stderr.String())
			assert.NotContains(t, rest.String(), "STOPPED", "the signal stopped the trace")
			evs := readClosed(t, path)
			find(t, evs, "X", "after the signal")
			assert.Len(t, byName(evs, "tick"), 300)
		})
	}
}

// TestPanicStopsTrace: a deferred Stop in main closes the trace when main
// panics, and StopOnPanic does when another goroutine panics; without it,
// that panic leaves the file as a crash does.
func TestPanicStopsTrace(t *testing.T) {
	t.Run("main", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "trace.json")
		status, stderr := runEndingChild(t, "main panic", path, nil)
		assert.Equal(t, 2, status.ExitStatus(), "a panic exits with status 2")
		assert.Contains(t, stderr, "boom in main")
		evs := readClosed(t, path)
		checkTracks(t, evs)
		find(t, evs, "X", "before")
		find(t, evs, "X", "unwinding")
		find(t, evs, "B", "worker busy")
	})
	t.Run("goroutine with StopOnPanic", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "trace.json")
		status, stderr := runEndingChild(t, "goroutine panic with StopOnPanic", path, nil)
		assert.Equal(t, 2, status.ExitStatus())
		assert.Contains(t, stderr, "boom in a goroutine")
		assert.Contains(t, stderr, "signal_test.go", "the stack trace shows where it panicked")
		evs := readClosed(t, path)
		checkTracks(t, evs)
		find(t, evs, "X", "before")
		find(t, evs, "X", "worker step")
		find(t, evs, "B", "worker busy")
	})
	t.Run("goroutine without StopOnPanic", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "trace.json")
		status, stderr := runEndingChild(t, "goroutine panic", path, nil)
		assert.Equal(t, 2, status.ExitStatus())
		assert.Contains(t, stderr, "boom in a goroutine")
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		evs := readCrashed(t, data) // not closed: the header only, nothing was flushed
		assert.Empty(t, byName(evs, "before"), "nothing ran main's deferred Stop")
	})
}
