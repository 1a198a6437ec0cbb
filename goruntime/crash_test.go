package goruntime

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/gotracer/tracer"
	"github.com/gotracer/tracer/internal/tracecheck"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// crashChild is the environment variable that makes the test binary the
// program TestKilled kills: it traces a worker pool until it is killed.
const crashChild = "GORUNTIME_CRASH_CHILD"

func TestMain(m *testing.M) {
	if path := os.Getenv(crashChild); path != "" {
		runUntilKilled(path)
		return
	}
	os.Exit(m.Run())
}

func runUntilKilled(path string) {
	tr, err := tracer.New(path, tracer.WithFlushInterval(50*time.Millisecond))
	if err != nil {
		panic(err)
	}
	if _, err := Start(tr); err != nil {
		panic(err)
	}
	var mu sync.Mutex
	for w := range runtime.GOMAXPROCS(0) + 1 {
		go func() {
			tr.SetGoroutineName("worker " + uintString(uint64(w)))
			for {
				end := tr.Span("job")
				mu.Lock()
				time.Sleep(100 * time.Microsecond)
				mu.Unlock()
				end()
			}
		}()
	}
	select {}
}

// TestKilled checks crash tolerance: a process killed with SIGKILL leaves
// a file that holds its spans and the runtime's view of them up to the
// last flush, and that both viewers load.
func TestKilled(t *testing.T) {
	path := killedTrace(t)
	evs := tracecheck.Read(t, path)
	tracks := tracecheck.Tracks(t, evs)
	spans, states := 0, 0
	for tid, ss := range tracks {
		if tid&runtimeTidBit != 0 && tid < gcTid {
			states += len(ss)
		} else {
			spans += len(ss)
		}
	}
	assert.Positive(t, spans, "spans")
	assert.Positive(t, states, "runtime states")
}

// killedTrace runs the crash child until its file holds runtime states
// (the first generation takes about a second), kills it and returns the
// file.
func killedTrace(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "killed.json")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChild+"="+path)
	require.NoError(t, cmd.Start())
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		if data, _ := os.ReadFile(path); bytes.Contains(data, []byte(`"cat":"state"`)) {
			break
		}
	}
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	return path
}
