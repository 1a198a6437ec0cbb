package parquet

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gotracer/tracer/cmd/tracer/internal/tracegen"
)

// BenchmarkExport measures tracer export -format parquet in MB/s of trace
// file: a 256 MiB trace the tracer package wrote, or the file
// TRACER_BENCH_FILE names. Its memory is measured on the command (see
// docs/analysis.md): /usr/bin/time -f %M tracer-export ...
func BenchmarkExport(b *testing.B) {
	path := os.Getenv("TRACER_BENCH_FILE")
	if path == "" {
		path = tracegen.Generate(b, filepath.Join(b.TempDir(), "bench.json"), 256<<20)
	}
	st, err := os.Stat(path)
	require.NoError(b, err)
	b.SetBytes(st.Size())
	b.ResetTimer()
	for b.Loop() {
		out := filepath.Join(b.TempDir(), "out")
		rep, err := Export(out, []string{path}, 0)
		require.NoError(b, err)
		require.Zero(b, rep.Unsure)
		b.ReportMetric(float64(rep.Events)/1e6, "Mevents")
	}
}
