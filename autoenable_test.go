//go:build unix

package tracer

import (
	"errors"
	"fmt"
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

const autoChildEnv = "TRACER_AUTO_CHILD" // how the child ends

// TestAutoChild is a program that never calls Start: it runs under
// TRACER_FILE, records with the package-level calls, and ends the way
// TRACER_AUTO_CHILD says.
func TestAutoChild(t *testing.T) {
	mode := os.Getenv(autoChildEnv)
	if mode == "" {
		t.Skip("helper process for TestAutoEnable")
	}
	if mode == "stop" {
		defer Stop() // the one line the documentation suggests
	}
	if mode == "start" {
		// The README's quick start, run with TRACER_FILE set: the
		// variable wins, and Start returns nil.
		if err := Start(filepath.Join(filepath.Dir(os.Getenv(EnvFile)), "chosen-by-main.json")); err != nil {
			t.Fatalf("Start under TRACER_FILE: %v", err)
		}
		defer Stop()
	}
	SetGoroutineName("main")
	for i := range 10 {
		Span("work", Int("i", i))()
	}
	func() {
		defer Span("outer")()
		Span("inner")()
	}()
	// What the flusher (TRACER_FLUSH=10ms) has written before an exit
	// that no hook catches is what the file keeps: the modes that end so
	// wait for it to be written.
	path := os.Getenv(EnvFile)
	written := []string{`"inner"`, `{"i":9}`}
	switch mode {
	case "return":
		waitWritten(t, path, written...)
	case "signal":
		readyOnceWritten(t, path, written...)
	case "own handler":
		// A server's shutdown: its own handler, and a second signal would
		// mean "exit now". It must get the one signal sent, once.
		sigs := make(chan os.Signal, 4)
		signal.Notify(sigs, syscall.SIGTERM)
		waitWritten(t, path, written...)
		os.Stdout.WriteString("READY\n")
		<-sigs
		Span("graceful shutdown")()
		waitWritten(t, path, `"graceful shutdown"`)
		time.Sleep(300 * time.Millisecond) // for a second signal, were one sent
		fmt.Printf("SIGNALS %d\n", 1+len(sigs))
	}
}

// TestAutoEnable runs TestAutoChild with TRACER_FILE set and checks the
// file each way of ending leaves.
func TestAutoEnable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		mode   string
		env    []string
		closed bool // strict JSON, ending in ]
		extra  string
	}{
		{mode: "stop", closed: true},
		{mode: "start", closed: true},
		{mode: "return", env: []string{EnvFlush + "=10ms"}},
		{mode: "signal", env: []string{EnvFlush + "=10ms"}},
		{mode: "own handler", env: []string{EnvFlush + "=10ms"}, extra: "graceful shutdown"},
		{mode: "stop", env: []string{EnvProcessName + "=auto child", EnvBuffer + "=1048576", EnvLossless + "=true"}, closed: true},
	}
	for _, tc := range tests {
		t.Run(tc.mode+strings.Join(tc.env, ","), func(t *testing.T) {
			t.Parallel() // a child that mostly waits
			path := filepath.Join(t.TempDir(), "auto.json")
			cmd := childtest.Command("TestAutoChild", autoChildEnv+"="+tc.mode, EnvFile+"="+path)
			cmd.Env = append(cmd.Env, tc.env...)
			if strings.HasPrefix(tc.mode, "signal") || tc.mode == "own handler" {
				lines := childtest.StartReady(t, cmd)
				require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
				if tc.mode == "own handler" {
					require.True(t, lines.Scan(), "the child reports the signals it got")
					assert.Equal(t, "SIGNALS 1", lines.Text(), "tracing changes nothing in the program's signals")
					require.NoError(t, cmd.Wait())
				} else {
					err := cmd.Wait()
					var exit *exec.ExitError
					require.True(t, errors.As(err, &exit), "the child must die of the signal: %v", err)
					assert.Equal(t, syscall.SIGTERM, exit.Sys().(syscall.WaitStatus).Signal())
				}
			} else {
				out, err := cmd.CombinedOutput()
				require.NoError(t, err, "%s", out)
				if tc.mode == "start" {
					assert.Equal(t, 1, strings.Count(string(out), "TRACER_FILE="+path+" is set: the trace goes there"), "%s", out)
					_, err := os.Stat(filepath.Join(filepath.Dir(path), "chosen-by-main.json"))
					assert.ErrorIs(t, err, os.ErrNotExist, "Start leaves the file TRACER_FILE names")
				}
			}

			var evs []event
			if tc.closed {
				evs = readClosed(t, path)
			} else {
				data, err := os.ReadFile(path)
				require.NoError(t, err)
				require.False(t, strings.HasSuffix(strings.TrimSpace(string(data)), "]"), "no hook can close the file on this exit")
				evs = readCrashed(t, data)
			}
			checkTracks(t, evs)
			assert.Len(t, byName(evs, "work"), 10)
			assert.Len(t, byName(evs, "inner"), 1)
			if tc.extra != "" {
				assert.NotEmpty(t, byName(evs, tc.extra))
			}
			for _, kv := range tc.env {
				if name, ok := strings.CutPrefix(kv, EnvProcessName+"="); ok {
					assert.Equal(t, name, byName(evs, "process_name")[0].Args["name"])
				}
			}
		})
	}
}

// TestAutoEnableOff checks that a process without TRACER_FILE has no
// default tracer, and that bad variables leave tracing off with an error.
func TestAutoEnableOff(t *testing.T) {
	if os.Getenv(EnvFile) != "" {
		t.Skip("TRACER_FILE is set for this test binary")
	}
	require.Nil(t, Default())

	tests := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{EnvFlush: "fast"}, "TRACER_FLUSH=fast"},
		{map[string]string{EnvFlush: "0s"}, "flush interval"},
		{map[string]string{EnvBuffer: "lots"}, "TRACER_BUFFER=lots: not an integer"},
		{map[string]string{EnvBuffer: "1024"}, "buffer limit"},
		{map[string]string{EnvLossless: "maybe"}, "TRACER_LOSSLESS=maybe: not a boolean"},
		{map[string]string{EnvGzip: "11"}, "gzip"},
		{map[string]string{EnvCategories: "a,,b"}, "invalid category"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "never.json")
			err := startFromEnv(path, func(k string) string { return tc.env[k] })
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Nil(t, Default())
			assert.NoFileExists(t, path)
		})
	}
}
