//go:build unix

package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fifo makes a named pipe in dir that a goroutine fills with data once
// it is opened, and returns its path.
func fifo(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, syscall.Mkfifo(path, 0o600))
	go func() {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer f.Close()
		f.Write(data)
	}()
	return path
}

// TestPipesAsFiles gives every command its input as a named pipe, which
// can be read once, and checks that it says what it says of the same
// bytes in a file, plain and gzip: merge anchors its files from their
// first events, stats replays a track nested too deep for a stream.
func TestPipesAsFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var deep strings.Builder
	deep.WriteString("[\n")
	for i := 599; i >= 0; i-- {
		fmt.Fprintf(&deep, `{"name":"g","ph":"X","ts":%d,"dur":%d,"pid":1,"tid":2},`+"\n", i, 2*(600-i))
	}
	deep.WriteString(`{"name":"h","ph":"X","ts":0,"dur":1,"pid":1,"tid":3}]`)
	a := generate(t, filepath.Join(dir, "a.json"), 64<<10)
	b := generate(t, filepath.Join(dir, "b.json"), 64<<10)
	files := map[string][]byte{"deep": []byte(deep.String())}
	for name, path := range map[string]string{"a": a, "b": b} {
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		files[name] = data
	}
	var zb bytes.Buffer
	zw := gzip.NewWriter(&zb)
	zw.Write(files["a"])
	zw.Close()
	files["a.gz"] = zb.Bytes()
	for name, data := range files {
		writeFile(t, dir, "file-"+name, string(data))
	}

	for _, tc := range []struct {
		name string
		args []string // FILE-x is the file or the pipe of x
	}{
		{"check", []string{"check", "FILE-a"}},
		{"check gzip", []string{"check", "FILE-a.gz"}},
		{"stats", []string{"stats", "-json", "FILE-a"}},
		{"stats deep", []string{"stats", "-json", "FILE-deep"}},
		{"stats gzip", []string{"stats", "-json", "FILE-a.gz"}},
		{"merge", []string{"merge", "-q", "-o", "-", "FILE-a", "FILE-b"}},
		{"cut", []string{"cut", "-q", "-from", "0s", "-o", "-", "FILE-a"}}, // a window inside any trace, however fast it was made
		{"repair", []string{"repair", "-q", "-o", "-", "FILE-a.gz"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := func(pipe bool) []string {
				var out []string
				for _, arg := range tc.args {
					if name, ok := strings.CutPrefix(arg, "FILE-"); ok {
						arg = filepath.Join(dir, "file-"+name)
						if pipe {
							arg = fifo(t, t.TempDir(), "pipe-"+name, files[name])
						}
					}
					out = append(out, arg)
				}
				return out
			}
			fileArgs, pipeArgs := args(false), args(true)
			code, want, stderr := runCmd(fileArgs...)
			require.Equal(t, 0, code, stderr)
			code, got, stderr := runCmd(pipeArgs...)
			require.Equal(t, 0, code, stderr)
			for i := range fileArgs {
				got = strings.ReplaceAll(got, pipeArgs[i], fileArgs[i])
			}
			assert.Equal(t, want, got)
			assert.Regexp(t, `[1-9]\d* events|"name"`, got, "events read, not nothing")
		})
	}
}
