package duckdb

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gotracer/tracer/cmd/tracer/internal/tracegen"
)

// BenchmarkSQL measures tracer sql end to end on a trace of about a
// million events (or the file TRACER_BENCH_FILE names): load the tables,
// run a GROUP BY with a percentile, print the result.
func BenchmarkSQL(b *testing.B) {
	path := os.Getenv("TRACER_BENCH_FILE")
	if path == "" {
		path = tracegen.Generate(b, filepath.Join(b.TempDir(), "bench.json"), 95<<20)
	}
	st, err := os.Stat(path)
	require.NoError(b, err)
	b.SetBytes(st.Size())
	b.ResetTimer()
	for b.Loop() {
		db, err := Open()
		require.NoError(b, err)
		rep, err := db.Load([]string{path})
		require.NoError(b, err)
		require.NoError(b, db.Query(io.Discard, `SELECT name, count(*), sum(dur), quantile_cont(dur, 0.99) FROM slice GROUP BY name`, FormatTable))
		require.NoError(b, db.Close())
		b.ReportMetric(float64(rep.Events)/1e6, "Mevents")
	}
}
