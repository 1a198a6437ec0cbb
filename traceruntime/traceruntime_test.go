package traceruntime_test

import (
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/gotracer/tracer"
	"github.com/gotracer/tracer/internal/tracecheck"
	"github.com/gotracer/tracer/traceruntime"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var sink [][]byte

// TestSamplerRecordsCounters samples a program that allocates, collects
// and starts goroutines, and checks the counters in the file and what both
// viewers make of them.
func TestSamplerRecordsCounters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runtime.json")
	require.NoError(t, tracer.Start(path))
	stop := traceruntime.Start(2 * time.Millisecond)
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() { <-release })
	}
	for range 3 {
		for range 1000 {
			sink = append(sink, make([]byte, 1024))
		}
		sink = nil
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
	}
	close(release)
	wg.Wait()
	stop()
	stop() // a second call does nothing
	require.NoError(t, tracer.Stop())

	evs := tracecheck.Read(t, path)
	series := map[string][]map[string]any{}
	for _, e := range tracecheck.Phase(evs, "C") {
		series[e.Name] = append(series[e.Name], e.Args)
	}
	tests := []struct {
		counter string
		keys    []string
	}{
		{"runtime.heap", []string{"in_use", "goal", "total"}},
		{"runtime.alloc", []string{"bytes_per_s"}},
		{"runtime.goroutines", []string{"count"}},
		{"runtime.gc", []string{"cycles"}},
		{"runtime.gc_pause", []string{"p50_us", "p99_us", "max_us"}},
		{"runtime.sched", []string{"p50_us", "p99_us", "max_us"}},
	}
	for _, tc := range tests {
		t.Run(tc.counter, func(t *testing.T) {
			require.GreaterOrEqual(t, len(series[tc.counter]), 3, "a sample every interval")
			for _, args := range series[tc.counter] {
				for _, k := range tc.keys {
					require.IsType(t, 0.0, args[k], "series %q", k)
					assert.GreaterOrEqual(t, args[k].(float64), 0.0)
				}
			}
		})
	}
	maxOf := func(counter, key string) float64 {
		m := 0.0
		for _, args := range series[counter] {
			m = max(m, args[key].(float64))
		}
		return m
	}
	cycles := series["runtime.gc"]
	assert.GreaterOrEqual(t, cycles[len(cycles)-1]["cycles"].(float64)-cycles[0]["cycles"].(float64), 3.0, "three forced collections")
	assert.GreaterOrEqual(t, maxOf("runtime.goroutines", "count"), 50.0)
	assert.Positive(t, maxOf("runtime.heap", "in_use"))
	assert.Positive(t, maxOf("runtime.gc_pause", "max_us"), "the forced collections paused")
	assert.Positive(t, maxOf("runtime.alloc", "bytes_per_s"))

	perfetto, catapult := tracecheck.ImportQuick(t, path)
	// Perfetto: a track per series; nothing dropped, so no drop counter.
	assert.Equal(t, 3+1+1+1+3+3.0, perfetto[0].Totals()["counter_tracks"])
	if catapult != nil { // a heavy run: see ImportQuick
		assert.Equal(t, 6.0, catapult[0].Totals()["counters"])
	}
}
