//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package tracer

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gotracer/tracer/internal/childtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOneWriterPerFile opens a second tracer on a path a first one writes,
// in every shape of sink: the second New fails, naming the path, before
// it touches the file; once the first is closed, the path is free.
func TestOneWriterPerFile(t *testing.T) {
	for _, tc := range []struct {
		name string
		file string
		opts []Option
	}{
		{name: "plain", file: "t.json"},
		{name: "gzip", file: "t.json.gz"},
		{name: "rotated", file: "t.json", opts: []Option{WithMaxFileSize(1 << 20)}},
		{name: "symlink", file: "link.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, tc.file)
			second := path
			if tc.name == "symlink" {
				path = filepath.Join(dir, "target.json")
				require.NoError(t, os.WriteFile(path, nil, 0o644))
				require.NoError(t, os.Symlink(path, second))
			}
			first, err := New(path, tc.opts...)
			require.NoError(t, err)
			first.Span("first")()
			require.NoError(t, first.Flush())
			before, err := os.ReadFile(path)
			require.NoError(t, err)

			tr, err := New(second, tc.opts...)
			require.ErrorIs(t, err, ErrFileInUse)
			assert.Nil(t, tr)
			assert.Contains(t, err.Error(), second, "the error names the path")
			after, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, before, after, "the refused New left the file alone")

			require.NoError(t, first.Close())
			again, err := New(second, tc.opts...)
			require.NoError(t, err, "the path is free once the first tracer is closed")
			require.NoError(t, again.Close())
		})
	}
}

const holdChildEnv = "TRACER_HOLD_CHILD"

// TestHoldChild is a program run with TRACER_FILE: it records a span named
// after the word it is given, says READY, and stops the default tracer
// once its standard input is closed.
func TestHoldChild(t *testing.T) {
	word := os.Getenv(holdChildEnv)
	if word == "" {
		t.Skip("helper process for TestInheritedTracerFile")
	}
	defer Stop()
	Span(word)()
	require.NoError(t, Flush())
	fmt.Println("READY")
	io.Copy(io.Discard, os.Stdin)
}

// holdChild starts TestHoldChild with env and returns it once it is READY,
// with the pipe that ends it when closed.
func holdChild(t *testing.T, word string, env ...string) (*exec.Cmd, io.WriteCloser, *bytes.Buffer) {
	t.Helper()
	cmd := childtest.Command("TestHoldChild", append([]string{holdChildEnv + "=" + word}, env...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	lines := childtest.StartReady(t, cmd)
	go func() {
		for lines.Scan() { // drain what the child says after READY
		}
	}()
	return cmd, in, &stderr
}

// TestInheritedTracerFile runs two processes with one TRACER_FILE, as a
// program that starts a child with its own environment does: the second
// writes beside the first's file, with its pid in the name, and says so
// once; each file is a valid trace of its own process only. With {pid} in
// the variable, each process writes its own file from the start.
func TestInheritedTracerFile(t *testing.T) {
	t.Run("held", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "t.json")
		parent, parentIn, _ := holdChild(t, "parent", EnvFile+"="+path)
		child, childIn, childErr := holdChild(t, "child", EnvFile+"="+path)
		require.NoError(t, childIn.Close())
		require.NoError(t, child.Wait())
		require.NoError(t, parentIn.Close())
		require.NoError(t, parent.Wait())

		beside := filepath.Join(dir, "t.pid"+strconv.Itoa(child.Process.Pid)+".json")
		assert.Equal(t, 1, strings.Count(childErr.String(), "is being written by another process"), "said once: %s", childErr)
		assert.Contains(t, childErr.String(), beside)
		for file, want := range map[string]string{path: "parent", beside: "child"} {
			evs := readClosed(t, file)
			names := map[string]bool{}
			for _, e := range evs {
				names[e.Name] = true
			}
			assert.True(t, names[want], "%s holds the %s's span", file, want)
			assert.False(t, names[map[string]string{"parent": "child", "child": "parent"}[want]], "and only its own")
		}
	})
	t.Run("pid placeholder", func(t *testing.T) {
		dir := t.TempDir()
		env := EnvFile + "=" + filepath.Join(dir, "t-{pid}.json")
		a, aIn, aErr := holdChild(t, "a", env)
		b, bIn, bErr := holdChild(t, "b", env)
		require.NoError(t, aIn.Close())
		require.NoError(t, bIn.Close())
		require.NoError(t, a.Wait())
		require.NoError(t, b.Wait())
		assert.Empty(t, aErr.String()+bErr.String(), "nothing to say: each has its own file")
		for _, p := range []*exec.Cmd{a, b} {
			evs := readClosed(t, filepath.Join(dir, fmt.Sprintf("t-%d.json", p.Process.Pid)))
			assert.NotEmpty(t, evs)
		}
	})
}

func TestBesidePath(t *testing.T) {
	for in, want := range map[string]string{
		"trace.json":        "trace.pid42.json",
		"dir/trace.json.gz": "dir/trace.pid42.json.gz",
		"trace":             "trace.pid42",
		".hidden":           ".hidden.pid42",
		"/a.b/t.json":       "/a.b/t.pid42.json",
	} {
		assert.Equal(t, want, besidePath(in, 42), in)
	}
}

// TestCloseKeepsSymlinkAndMode closes traces written through a symlink to
// a file made 0600: the symlink stays a symlink, the file it points to
// holds the trace and keeps its permissions, plain or gzipped (whose
// Close replaces the file by its joined copy).
func TestCloseKeepsSymlinkAndMode(t *testing.T) {
	for _, name := range []string{"t.json", "t.json.gz"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			target := filepath.Join(dir, "real-"+name)
			link := filepath.Join(dir, name)
			require.NoError(t, os.WriteFile(target, nil, 0o600))
			require.NoError(t, os.Chmod(target, 0o600)) // past the umask
			require.NoError(t, os.Symlink(target, link))
			tr, err := New(link)
			require.NoError(t, err)
			for i := range 100 {
				tr.Span("work", Int("id", i))()
				if i%10 == 0 {
					require.NoError(t, tr.Flush()) // several gzip members to join
				}
			}
			require.NoError(t, tr.Close())

			fi, err := os.Lstat(link)
			require.NoError(t, err)
			assert.Equal(t, os.ModeSymlink, fi.Mode()&os.ModeSymlink, "the symlink stays")
			fi, err = os.Stat(target)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "the file keeps its mode")
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			assert.Len(t, entries, 2, "nothing left beside them")
			if strings.HasSuffix(name, ".gz") {
				data, err := os.ReadFile(target)
				require.NoError(t, err)
				assert.Equal(t, 1, bytes.Count(data, []byte{0x1f, 0x8b, 8}), "one gzip member: joined")
			} else {
				assert.Len(t, idsOf(readClosed(t, target), "work"), 100)
			}
		})
	}
}

// TestStaleJoinIsRemoved leaves what a kill during a gzip Close leaves,
// the joined copy never renamed over the trace, for a file and for a
// rotated one: the next tracer on the path removes them, and nothing else.
func TestStaleJoinIsRemoved(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.json.gz")
	stale := []string{path + ".join", filepath.Join(dir, "t.000003.json.gz.join")}
	keep := []string{filepath.Join(dir, "t.000003.json.gz"), filepath.Join(dir, "other.join")}
	for _, p := range append(stale, keep...) {
		require.NoError(t, os.WriteFile(p, []byte("half a join"), 0o644))
	}
	tr, err := New(path, WithMaxFileSize(1<<20))
	require.NoError(t, err)
	require.NoError(t, tr.Close())
	for _, p := range stale {
		assert.NoFileExists(t, p)
	}
	for _, p := range keep {
		assert.FileExists(t, p)
	}
}
