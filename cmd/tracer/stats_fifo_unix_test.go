//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStatsTooDeepPipe checks that stats, reading a pipe it cannot read
// twice, counts a track nested deeper than Perfetto keeps whole, and
// says so.
func TestStatsTooDeepPipe(t *testing.T) {
	var b strings.Builder
	b.WriteString("[\n")
	for i := 599; i >= 0; i-- {
		fmt.Fprintf(&b, `{"name":"g","ph":"X","ts":%d,"dur":%d,"pid":1,"tid":2},`+"\n", i, 2*(600-i))
	}
	b.WriteString(`{"name":"h","ph":"X","ts":0,"dur":1,"pid":1,"tid":3}]`)
	path := filepath.Join(t.TempDir(), "deep.fifo")
	require.NoError(t, syscall.Mkfifo(path, 0o600))
	go func() {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer f.Close()
		f.WriteString(b.String())
	}()
	code, stdout, stderr := runCmd("stats", "-json", path)
	require.Equal(t, 0, code, stderr)
	var s Stats
	require.NoError(t, json.Unmarshal([]byte(stdout), &s))
	assert.Zero(t, s.TooDeep)
	assert.Equal(t, int64(600), s.Spans[0].Count, "all counted")
	assert.Contains(t, s.Deep, "slices are nested deeper than the 512 levels Perfetto keeps, and counted here, where Perfetto drops them (the file could not be read again: not a regular file)")
}
