//go:build unix

package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gotracer/tracer/internal/childtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const urlChildEnv = "TRACER_URL_CHILD"

// TestURLChild runs the tracer command line of its environment, for
// TestURLInterrupt.
func TestURLChild(t *testing.T) {
	args := os.Getenv(urlChildEnv)
	if args == "" {
		t.Skip("helper process for TestURLInterrupt")
	}
	os.Exit(run(strings.Split(args, "\x1f"), os.Stdout, os.Stderr))
}

// TestURLInterrupt: Ctrl-C while a command fetches a URL (its server
// sends the start of a capture, then nothing) ends the fetch and the
// command at once: exit status 1, "interrupted", no temporary copy left
// and no output written.
func TestURLInterrupt(t *testing.T) {
	t.Parallel()
	data := streamed(t, 16<<10)
	bin := t.TempDir()
	fake := "#!/bin/sh\nfor a in \"$@\"; do [ \"$a\" != - ] || cat; done\n"
	require.NoError(t, os.WriteFile(filepath.Join(bin, "tracer-sql"), []byte(fake), 0o755))
	for _, tc := range []struct {
		name string
		args []string // OUT is a file in the test's directory
	}{
		{"stats", []string{"stats", "URL"}},          // copied to a file first
		{"check", []string{"check", "URL"}},          // the same
		{"cut", []string{"cut", "-o", "OUT", "URL"}}, // streamed
		{"repair", []string{"repair", "-o", "OUT", "URL"}},
		{"view", []string{"view", "-no-browser", "-port", "0", "URL"}},
		{"sql", []string{"sql", "URL", "SELECT 1"}}, // streamed to the program
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			started := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Write(data[:len(data)/2])
				w.(http.Flusher).Flush()
				close(started)
				<-r.Context().Done() // the capture goes on until the client leaves
			}))
			t.Cleanup(srv.Close)
			dir, tmp := t.TempDir(), t.TempDir()
			out := filepath.Join(dir, "out.json")
			args := strings.Join(tc.args, "\x1f")
			args = strings.ReplaceAll(args, "URL", srv.URL+tracePath)
			args = strings.ReplaceAll(args, "OUT", out)
			cmd := childtest.Command("TestURLChild", urlChildEnv+"="+args, "TMPDIR="+tmp, "PATH="+bin+":"+os.Getenv("PATH"))
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			require.NoError(t, cmd.Start())
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			select {
			case <-started:
			case err := <-exited:
				t.Fatalf("the command ended before its fetch: %v\n%s", err, stderr.String())
			case <-time.After(timeout):
				cmd.Process.Kill()
				t.Fatal("no request came")
			}
			require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
			select {
			case <-exited:
			case <-time.After(timeout):
				cmd.Process.Kill()
				<-exited
				t.Fatalf("Ctrl-C did not end the fetch\n%s", stderr.String())
			}
			assert.Equal(t, 1, cmd.ProcessState.ExitCode(), stderr.String())
			assert.Contains(t, stderr.String(), srv.URL+tracePath+": interrupted\n")
			left, err := os.ReadDir(tmp)
			require.NoError(t, err)
			assert.Empty(t, left, "temporary files left")
			assert.NoFileExists(t, out)
		})
	}
}
