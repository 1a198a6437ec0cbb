package goruntime

import (
	"context"
	"runtime"
	rtrace "runtime/trace"
	"sync"
	"testing"
	"time"

	"github.com/gotracer/tracer"
	"github.com/gotracer/tracer/internal/tracecheck"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestImporters loads every kind of file this package writes in both real
// importers (one run of each, which is what takes the time): a live trace
// with every kind of runtime event, one with every state kept, a trace
// killed mid-run, and a converted one. Neither may warn, and Perfetto may
// not move any slice to an overflow track (which would mean the runtime
// track overlapped itself).
func TestImporters(t *testing.T) {
	full := traced(t, []Option{WithMinState(0)}, busyWork)
	live := traced(t, nil, busyWork)
	killed := killedTrace(t)
	data, _ := executionTrace(t, waitWork)
	converted, _, err := convertFile(t, data, ConvertConfig{})
	require.NoError(t, err)

	perfetto, _ := tracecheck.ImportQuick(t, full, live, killed, converted)
	for i, rep := range perfetto {
		tracks, _ := rep["slice_tracks"].([]any)
		seen := map[float64]bool{}
		for _, tr := range tracks {
			m := tr.(map[string]any)
			if m["track_type"] != "thread_execution" {
				continue
			}
			tid, _ := m["tid"].(float64)
			assert.False(t, seen[tid], "file %d: tid %v has an overflow track", i, tid)
			seen[tid] = true
		}
		assert.NotEmpty(t, seen, "file %d has thread tracks", i)
	}
}

// busyWork is a small worker pool with spans, regions, a task, lock
// contention and a GC.
func busyWork(tr *tracer.Tracer) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	ctx, task := rtrace.NewTask(context.Background(), "batch")
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tr.SetGoroutineName("worker " + uintString(uint64(w)))
			for range 5 {
				end := tr.Span("job")
				rtrace.WithRegion(ctx, "locked", func() {
					mu.Lock()
					time.Sleep(200 * time.Microsecond)
					mu.Unlock()
				})
				rtrace.Log(ctx, "progress", "one job done")
				end()
			}
		}()
	}
	runtime.GC()
	wg.Wait()
	task.End()
}
