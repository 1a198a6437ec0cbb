package duckdb

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gotracer/tracer/cmd/tracer/internal/tables"
	"github.com/gotracer/tracer/internal/tracecheck"
)

// root is the repository's root, which holds the tracer module.
const root = "../../.."

// exampleTraces runs the examples that write a trace in their working
// directory and returns their files.
func exampleTraces(t *testing.T) []string {
	t.Helper()
	dir := t.TempDir()
	var paths []string
	for _, ex := range []struct{ name, file string }{
		{"pipeline", "pipeline.json"},
		{"basic", "trace.json"},
	} {
		bin := filepath.Join(dir, ex.name)
		build := exec.Command("go", "build", "-o", bin, "./examples/"+ex.name)
		build.Dir = root
		b, err := build.CombinedOutput()
		require.NoError(t, err, "%s", b)
		cmd := exec.Command(bin)
		cmd.Dir = dir
		b, err = cmd.CombinedOutput()
		require.NoError(t, err, "%s", b)
		paths = append(paths, filepath.Join(dir, ex.file))
	}
	return paths
}

// query runs q over the tables of paths and returns its CSV rows, header
// first.
func query(t *testing.T, paths []string, q string) [][]string {
	t.Helper()
	rows, _ := queryPending(t, paths, 0, q)
	return rows
}

// queryPending is query with DB.MaxPending set to maxPending (0 for the
// default), and the load's report.
func queryPending(t *testing.T, paths []string, maxPending int, q string) ([][]string, tables.Report) {
	t.Helper()
	db, err := Open()
	require.NoError(t, err)
	defer db.Close()
	db.MaxPending = maxPending
	rep, err := db.Load(paths)
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, db.Query(&out, q, FormatCSV))
	rows, err := csv.NewReader(&out).ReadAll()
	require.NoError(t, err)
	return rows, rep
}

// The same SQL runs in trace_processor and in tracer sql: the slices,
// each with its parent (ids differ, so named by name and ts), and the
// totals per name.
const (
	slicesQuery = `SELECT s.ts, s.dur, s.name, s.depth, coalesce(p.name, '') AS parent, coalesce(p.ts, -1) AS parent_ts
FROM slice s LEFT JOIN slice p ON p.id = s.parent_id ORDER BY s.ts, s.dur, s.name, s.depth, parent, parent_ts;`
	totalsQuery = `SELECT name, count(*) AS n, sum(dur) AS total, max(depth) AS depth FROM slice GROUP BY name ORDER BY name;`
)

// TestSQLMatchesTraceProcessor runs the same queries over the example
// traces in trace_processor and in tracer sql: the same slices, with the
// same durations, depths and parents.
func TestSQLMatchesTraceProcessor(t *testing.T) {
	for _, path := range exampleTraces(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			for _, q := range []string{totalsQuery, slicesQuery} {
				want := tracecheck.PerfettoSQL(t, path, q)
				got := query(t, []string{path}, q)
				require.Greater(t, len(want), 1)
				require.Equal(t, want, got)
			}
		})
	}
}

// TestParquetMatchesTables exports the example traces with tracer-export
// (from the parquet module) and reads the Parquet files with DuckDB: the
// same answers as over the tables tracer sql loads.
func TestParquetMatchesTables(t *testing.T) {
	paths := exampleTraces(t)
	out := filepath.Join(t.TempDir(), "tables")
	cmd := exec.Command("go", append([]string{"-C", "../parquet", "run", "./tracer-export", "-o", out}, paths...)...)
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", b)
	for _, table := range []string{"slice", "counter", "flow", "track", "thread", "process"} {
		t.Run(table, func(t *testing.T) {
			loaded := query(t, paths, "SELECT * FROM "+table+" ORDER BY ALL")
			read := query(t, nil, "SELECT * FROM read_parquet('"+filepath.Join(out, table, "*.parquet")+"') ORDER BY ALL")
			require.Greater(t, len(loaded), 1)
			require.Equal(t, loaded, read)
		})
	}
}

// TestQueryFormats checks each output format on one result, NULLs and
// all.
func TestQueryFormats(t *testing.T) {
	db, err := Open()
	require.NoError(t, err)
	defer db.Close()
	const q = `SELECT * FROM (VALUES (1, 'a b', NULL, 1.5), (22, 'c,"d"', 'x', 2.0)) t(n, s, maybe, f) ORDER BY n`
	for _, tc := range []struct {
		format string
		check  func(t *testing.T, out string)
	}{
		{FormatTable, func(t *testing.T, out string) {
			assert.Equal(t, "n   s      maybe  f\n1   a b           1.5\n22  c,\"d\"  x      2\n", out)
		}},
		{FormatCSV, func(t *testing.T, out string) {
			rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
			require.NoError(t, err)
			assert.Equal(t, [][]string{{"n", "s", "maybe", "f"}, {"1", "a b", "", "1.5"}, {"22", `c,"d"`, "x", "2"}}, rows)
		}},
		{FormatJSON, func(t *testing.T, out string) {
			var rows []map[string]any
			require.NoError(t, json.Unmarshal([]byte(out), &rows))
			assert.Equal(t, []map[string]any{
				{"n": 1.0, "s": "a b", "maybe": nil, "f": 1.5},
				{"n": 22.0, "s": `c,"d"`, "maybe": "x", "f": 2.0},
			}, rows)
		}},
	} {
		t.Run(tc.format, func(t *testing.T) {
			var out bytes.Buffer
			require.NoError(t, db.Query(&out, q, tc.format))
			tc.check(t, out.String())
		})
	}
	var out bytes.Buffer
	assert.ErrorContains(t, db.Query(&out, q, "xml"), `unknown format "xml"`)
	assert.Error(t, db.Query(&out, "SELECT * FROM nowhere", FormatCSV))
}
