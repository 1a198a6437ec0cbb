package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gotracer/tracer/cmd/tracer/internal/trace"
	"github.com/stretchr/testify/require"
)

// benchSize is the size of the file the benchmarks read: large enough
// that reading it dominates, small enough to generate in a second or two.
const benchSize = 64 << 20

// benchFile returns a plain trace of benchSize bytes written by the
// tracer package: requests of nested spans with args, from 4 goroutines,
// with instants, counters, async operations and flows.
// TRACER_BENCH_FILE names a file to read instead, to measure on real
// traces.
func benchFile(b *testing.B) string {
	path := os.Getenv("TRACER_BENCH_FILE")
	if path == "" {
		path = generate(b, filepath.Join(b.TempDir(), "bench.json"), benchSize)
	}
	b.SetBytes(fileSize(b, path))
	b.ResetTimer()
	return path
}

func fileSize(b *testing.B, path string) int64 {
	st, err := os.Stat(path)
	require.NoError(b, err)
	return st.Size()
}

// reportCPU reports MB of file per second of CPU time (all threads, the
// garbage collector's included) besides the MB/s of wall time, which on a
// machine shared with other work says more about the other work.
func reportCPU(b *testing.B, size int64, start time.Duration) {
	if cpu := cpuTime() - start; cpu > 0 {
		b.ReportMetric(float64(size)*float64(b.N)/1e6/cpu.Seconds(), "MB/cpu-s")
	}
}

// BenchmarkCheck measures tracer check on a plain file, in MB/s of file.
func BenchmarkCheck(b *testing.B) {
	path := benchFile(b)
	defer reportCPU(b, fileSize(b, path), cpuTime())
	for b.Loop() {
		problems, _, err := checkFile(path, true, func(p trace.Problem) { b.Log(p) })
		require.NoError(b, err)
		require.Empty(b, problems)
	}
}

// BenchmarkStats measures tracer stats on a plain file, in MB/s of file.
func BenchmarkStats(b *testing.B) {
	path := benchFile(b)
	defer reportCPU(b, fileSize(b, path), cpuTime())
	for b.Loop() {
		_, err := computeStats(path, true)
		require.NoError(b, err)
	}
}
