package duckdb

import (
	"context"
	"database/sql"
	"errors"

	duck "github.com/duckdb/duckdb-go/v2"

	"github.com/gotracer/tracer/cmd/tracer/internal/tables"
)

// Loading the slices.
//
// The slices, most of the rows, go in through a table function rather
// than an Appender: "INSERT INTO slice SELECT * FROM tracer_load_slices()"
// runs on a connection and a goroutine of its own, and the function
// copies each batch of the Builder's (tables.Pipe) column by column into
// DuckDB's chunks. An Appender boxes every value in an interface, looks
// up its column's type, and converts the rows it holds when it is
// closed, after the last of them; the INSERT does that as the rows come.
// On the 48 MB Chromium trace of testdata/tools, tracer sql took 0.90 of
// the wall time (farm-bench, the median of 9 pairs, twice), 0.90-0.92 of
// the CPU time and 176 MB at its peak against 200 (docs/analysis.md).

// loadFunction is the table function's name. It stays in the catalog:
// called after the load, it returns no rows.
const loadFunction = "tracer_load_slices"

// A sliceLoader is the table function's source: it hands the Pipe's
// batches, on the goroutine that writes them, to the INSERT, which calls
// FillChunk on a thread of DuckDB's.
type sliceLoader struct {
	batches chan []tables.Slice // to FillChunk; closed after the last
	taken   chan struct{}       // FillChunk copied the whole batch: the Pipe may reuse it
	stopped chan struct{}       // closed once the INSERT has returned, with err
	err     error
	cur     []tables.Slice // what FillChunk has yet to copy of its batch
}

// loadSlices registers the table function on conn and starts the INSERT
// that reads it; finish ends it.
func loadSlices(conn *sql.Conn) (*sliceLoader, error) {
	l := &sliceLoader{
		batches: make(chan []tables.Slice),
		taken:   make(chan struct{}, 1),
		stopped: make(chan struct{}),
	}
	f := duck.ChunkTableFunction{BindArguments: func(map[string]any, ...any) (duck.ChunkTableSource, error) { return l, nil }}
	if err := duck.RegisterTableUDF(conn, loadFunction, f); err != nil {
		return nil, err
	}
	go func() {
		_, l.err = conn.ExecContext(context.Background(), "INSERT INTO slice SELECT * FROM "+loadFunction+"()")
		close(l.stopped)
	}()
	return l, nil
}

// write hands rows to the INSERT and returns once they are copied (the
// write function of a tables.Pipe).
func (l *sliceLoader) write(rows []tables.Slice) error {
	select {
	case l.batches <- rows:
	case <-l.stopped:
		return l.stopErr()
	}
	select {
	case <-l.taken:
		return nil
	case <-l.stopped:
		return l.stopErr()
	}
}

func (l *sliceLoader) stopErr() error {
	if l.err == nil {
		return errors.New("tracer sql: the slices' INSERT ended before the last slice")
	}
	return l.err
}

// finish ends the INSERT after the rows written, and returns its error.
func (l *sliceLoader) finish() error {
	close(l.batches)
	<-l.stopped
	return l.err
}

// ColumnInfos returns the slice table's columns (duck.ChunkTableSource).
func (l *sliceLoader) ColumnInfos() []duck.ColumnInfo {
	var infos []duck.ColumnInfo
	for _, c := range columnsOf(sliceType) {
		t, err := duck.NewTypeInfo(c.duckType)
		if err != nil {
			panic(err) // the types of columnsOf are DuckDB's plain types
		}
		infos = append(infos, duck.ColumnInfo{Name: c.name, T: t})
	}
	return infos
}

// Cardinality is unknown (duck.ChunkTableSource).
func (l *sliceLoader) Cardinality() *duck.CardinalityInfo { return nil }

// Init does nothing (duck.ChunkTableSource).
func (l *sliceLoader) Init() {}

// FillChunk copies the next rows of the current batch into c, taking
// the next batch when it is done; it sets no rows after the last
// (duck.ChunkTableSource).
func (l *sliceLoader) FillChunk(c duck.DataChunk) error {
	if len(l.cur) == 0 {
		rows, ok := <-l.batches
		if !ok {
			return c.SetSize(0)
		}
		l.cur = rows
	}
	n := min(len(l.cur), duck.GetDataChunkCapacity())
	for i := range n {
		if err := setRow(c, i, &l.cur[i]); err != nil {
			return err
		}
	}
	if l.cur = l.cur[n:]; len(l.cur) == 0 {
		l.taken <- struct{}{}
	}
	return c.SetSize(n)
}

// setRow sets row i of c to r, in the order of tables.Slice's fields,
// the table's columns.
func setRow(c duck.DataChunk, i int, r *tables.Slice) error {
	if err := duck.SetChunkValue(c, 0, i, r.ID); err != nil {
		return err
	}
	if err := duck.SetChunkValue(c, 1, i, r.TS); err != nil {
		return err
	}
	if err := duck.SetChunkValue(c, 2, i, r.Dur); err != nil {
		return err
	}
	if err := duck.SetChunkValue(c, 3, i, r.TrackID); err != nil {
		return err
	}
	if err := duck.SetChunkValue(c, 4, i, r.Category); err != nil {
		return err
	}
	if err := duck.SetChunkValue(c, 5, i, r.Name); err != nil {
		return err
	}
	if err := duck.SetChunkValue(c, 6, i, r.Depth); err != nil {
		return err
	}
	if err := setOrNull(c, 7, i, r.ParentID); err != nil {
		return err
	}
	if err := setOrNull(c, 8, i, r.Args); err != nil {
		return err
	}
	if err := setOrNull(c, 9, i, r.Utid); err != nil {
		return err
	}
	return setOrNull(c, 10, i, r.Upid)
}

// setOrNull sets *p, or NULL for a nil p.
func setOrNull[T any](c duck.DataChunk, col, row int, p *T) error {
	if p == nil {
		return duck.SetChunkValue[any](c, col, row, nil)
	}
	return duck.SetChunkValue(c, col, row, *p)
}
