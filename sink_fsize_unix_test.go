//go:build unix

package tracer

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gotracer/tracer/internal/childtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The file size limit (RLIMIT_FSIZE) that makes a write fail part-way, as
// on a full disk, exists on Unix only.

const fsizeChildEnv = "TRACER_FSIZE_CHILD"

// TestFileSizeLimitChild writes a trace under a file size limit, so that
// writes fail part-way as on a full disk, and prints its Stats.
func TestFileSizeLimitChild(t *testing.T) {
	path := os.Getenv(fsizeChildEnv)
	if path == "" {
		t.Skip("helper process for TestShortWritesAreCutBack")
	}
	// Go ignores SIGXFSZ: a write past the limit fails with EFBIG.
	require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: 40 << 10, Max: 40 << 10}))
	var log errorLog
	tr, err := New(path, WithErrorHandler(log.handle), withClock(newTestClock()))
	require.NoError(t, err)
	for i := 0; tr.Stats().SinkErrors < 5; i++ {
		for j := 0; j < 50; j++ {
			tr.Span("work", Int("i", i), Int("j", j))()
		}
		tr.Flush()
	}
	tr.Close()
	fmt.Printf("STATS %d %d %v\n", tr.Stats().SinkErrors, tr.Stats().Events, errors.Is(log.errs[0], syscall.EFBIG))
}

// TestShortWritesAreCutBack checks that a write that fails part-way is cut
// back off the file: the file ends on its last whole write, plain or gzip.
func TestShortWritesAreCutBack(t *testing.T) {
	for _, name := range []string{"trace.json", "trace.json.gz"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), name)
			cmd := childtest.Command("TestFileSizeLimitChild", fsizeChildEnv+"="+path)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s", out)
			var sinkErrors, events uint64
			var efbig bool
			i := strings.Index(string(out), "STATS ")
			require.GreaterOrEqual(t, i, 0, "%s", out)
			_, err = fmt.Sscan(string(out[i+len("STATS "):]), &sinkErrors, &events, &efbig)
			require.NoError(t, err)
			// The child stops at 5 failed writes; Close's own writes may
			// fail too.
			require.GreaterOrEqual(t, sinkErrors, uint64(5))
			require.True(t, efbig, "the error is EFBIG")

			data, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Less(t, len(data), 40<<10)
			if filepath.Ext(name) == ".gz" {
				data = bytes.Join(gunzipMembers(t, data), nil)
			}
			evs := parseStream(t, data)
			assert.Greater(t, len(byPhase(evs, "X")), 100)
		})
	}
}
