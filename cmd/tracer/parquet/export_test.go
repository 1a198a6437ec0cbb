package parquet

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	pq "github.com/parquet-go/parquet-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gotracer/tracer"
	"github.com/gotracer/tracer/cmd/tracer/internal/tables"
)

// collect is a Sink that keeps the rows, to compare with what was
// written.
type collect struct {
	slices    []tables.Slice
	counters  []tables.Counter
	flows     []tables.Flow
	tracks    []tables.Track
	threads   []tables.Thread
	processes []tables.Process
}

func (c *collect) Slice(r *tables.Slice) error     { c.slices = append(c.slices, *r); return nil }
func (c *collect) Counter(r *tables.Counter) error { c.counters = append(c.counters, *r); return nil }
func (c *collect) Flow(r *tables.Flow) error       { c.flows = append(c.flows, *r); return nil }
func (c *collect) Track(r *tables.Track) error     { c.tracks = append(c.tracks, *r); return nil }
func (c *collect) Thread(r *tables.Thread) error   { c.threads = append(c.threads, *r); return nil }
func (c *collect) Process(r *tables.Process) error { c.processes = append(c.processes, *r); return nil }

// record writes a trace of n requests, each with a child span, a flow,
// a counter and an instant.
func record(t *testing.T, path, process string, n int) {
	tr, err := tracer.New(path, tracer.WithProcessName(process))
	require.NoError(t, err)
	for i := range n {
		end := tr.Span("request", tracer.Int("i", i), tracer.String("route", "/é"))
		f := tr.FlowBegin("job")
		tr.Span("child")()
		tr.Counter("queue", tracer.Int("depth", i))
		tr.Instant("mark")
		f.End()
		end()
	}
	require.NoError(t, tr.Close())
}

// readTable reads every part of a table.
func readTable[T any](t *testing.T, dir, name string) []T {
	parts, err := filepath.Glob(filepath.Join(dir, name, "*.parquet"))
	require.NoError(t, err)
	require.NotEmpty(t, parts)
	var rows []T
	for _, p := range parts {
		r, err := pq.ReadFile[T](p)
		require.NoError(t, err)
		rows = append(rows, r...)
	}
	return rows
}

// TestExportRoundTrip exports two processes' files and reads every
// table back: the rows are those the tables package made, one slice
// part per process, the second process lined up on its anchor.
func TestExportRoundTrip(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	record(t, a, "first", 300)
	record(t, b, "second", 10)
	want := &collect{}
	require.NoError(t, tables.NewBuilder(want).Build([]string{a, b}, nil))

	out := filepath.Join(dir, "out")
	rep, err := Export(out, []string{a, b}, 0)
	require.NoError(t, err)
	assert.Equal(t, int64(len(want.slices)), rep.Slices)

	parts, _ := filepath.Glob(filepath.Join(out, "slice", "*.parquet"))
	assert.Len(t, parts, 2, "one part per process")
	assert.ElementsMatch(t, want.slices, readTable[tables.Slice](t, out, "slice"))
	assert.ElementsMatch(t, want.counters, readTable[tables.Counter](t, out, "counter"))
	assert.ElementsMatch(t, want.flows, readTable[tables.Flow](t, out, "flow"))
	assert.ElementsMatch(t, want.tracks, readTable[tables.Track](t, out, "track"))
	assert.ElementsMatch(t, want.threads, readTable[tables.Thread](t, out, "thread"))
	procs := readTable[tables.Process](t, out, "process")
	assert.ElementsMatch(t, want.processes, procs)
	require.Len(t, procs, 2)
	slices.SortFunc(procs, func(x, y tables.Process) int { return int(x.Upid - y.Upid) })
	require.NotNil(t, procs[0].TS0UnixNS)
	require.NotNil(t, procs[1].TS0UnixNS)
	assert.Equal(t, *procs[1].TS0UnixNS-*procs[0].TS0UnixNS, procs[1].Offset, "b started after a: its ts are shifted by the difference")
	assert.Zero(t, procs[0].Offset)
	assert.Equal(t, []string{"first", "second"}, []string{procs[0].Name, procs[1].Name})
}

// TestExportSchemaSparkReads checks the column types of every table:
// signed integers, doubles and UTF-8 strings, which Spark reads (it
// refuses unsigned 64-bit integers).
func TestExportSchemaSparkReads(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "a.json")
	record(t, in, "p", 3)
	out := filepath.Join(dir, "out")
	_, err := Export(out, []string{in}, 0)
	require.NoError(t, err)
	column := regexp.MustCompile(`(?m)^\s+(required|optional) (\w+) (\w+)(?: \((.*)\))?;$`)
	signed := regexp.MustCompile(`^(INT\((32|64),true\))?$`)
	for _, name := range tableNames {
		f, err := os.Open(filepath.Join(out, name, "part-00000.parquet"))
		require.NoError(t, err)
		st, _ := f.Stat()
		pf, err := pq.OpenFile(f, st.Size())
		require.NoError(t, err)
		schema := pf.Schema().String()
		cols := column.FindAllStringSubmatch(schema, -1)
		require.Len(t, cols, len(pf.Schema().Fields()), schema)
		for _, c := range cols {
			switch c[2] {
			case "int64", "int32":
				assert.Regexp(t, signed, c[4], "%s.%s is not a signed integer", name, c[3])
			case "double":
				assert.Empty(t, c[4], "%s.%s: %s", name, c[3], c[0])
			case "binary":
				assert.Equal(t, "STRING", c[4], "%s.%s is not a UTF-8 string", name, c[3])
			default:
				t.Errorf("%s.%s: type %s", name, c[3], c[2])
			}
		}
		f.Close()
	}
}

// TestExportRefusesTables checks that an export never writes over the
// tables of an earlier one.
func TestExportRefusesTables(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "a.json")
	record(t, in, "p", 1)
	out := filepath.Join(dir, "out")
	_, err := Export(out, []string{in}, 0)
	require.NoError(t, err)
	before, err := os.ReadFile(filepath.Join(out, "slice", "part-00000.parquet"))
	require.NoError(t, err)
	_, err = Export(out, []string{in}, 0)
	require.ErrorContains(t, err, "already holds a slice table")
	after, err := os.ReadFile(filepath.Join(out, "slice", "part-00000.parquet"))
	require.NoError(t, err)
	assert.Equal(t, before, after)
}
