package main

import (
	"os"
	"path/filepath"
	"testing"

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
	st, err := os.Stat(path)
	require.NoError(b, err)
	b.SetBytes(st.Size())
	b.ResetTimer()
	return path
}

// BenchmarkCheck measures tracer check on a plain file, in MB/s of file.
func BenchmarkCheck(b *testing.B) {
	path := benchFile(b)
	for b.Loop() {
		problems, _, err := checkFile(path, true, func(p trace.Problem) { b.Log(p) })
		require.NoError(b, err)
		require.Empty(b, problems)
	}
}

// BenchmarkStats measures tracer stats on a plain file, in MB/s of file.
func BenchmarkStats(b *testing.B) {
	path := benchFile(b)
	for b.Loop() {
		_, err := computeStats(path, true)
		require.NoError(b, err)
	}
}
