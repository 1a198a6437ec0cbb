package parquet

import (
	"errors"
	"math/bits"
	"os"

	pq "github.com/parquet-go/parquet-go"

	"github.com/gotracer/tracer/cmd/tracer/internal/tables"
)

// The slice table.
//
// parquet-go writes a pointer column (tables.Slice's optional ones:
// parent_id, args, utid, upid) a row at a time, which took a third of
// the Parquet encoding; a column of values marked optional, NULL where
// zero, it writes in runs. So the slices are written as sliceRows.
//
// But parquet-go v0.32.0's runs have a bug (writeRowsFuncOfOptional):
// it writes rows in chunks of at most 64 (one Write call of at most 64
// rows, within a row group, is one chunk), and in a chunk, a run of
// non-NULL values that begins at row s, after a NULL, and is s rows
// long, with only NULLs after it in the chunk, is taken to go on to the
// chunk's end: the NULLs after it are written as zeros. A sliceTable
// therefore writes a chunk at a time, and ends a chunk before such a
// run, which then begins the next chunk, where it is written right
// (TestOptionalBug checks that model against the library, and
// TestSliceNulls the table's rows).

// A sliceRow is a tables.Slice as written: the same columns, with the
// optional ones held as values, NULL when zero. A zero is never a value
// of those columns: ids count from 1, and args are an object, "{...}",
// when there are any.
type sliceRow struct {
	ID       int64  `parquet:"id"`
	TS       int64  `parquet:"ts"`
	Dur      int64  `parquet:"dur"`
	TrackID  int64  `parquet:"track_id"`
	Category string `parquet:"category,dict"`
	Name     string `parquet:"name,dict"`
	Depth    int32  `parquet:"depth"`
	ParentID int64  `parquet:"parent_id,optional"`
	Args     string `parquet:"args,optional"`
	Utid     int64  `parquet:"utid,optional"`
	Upid     int64  `parquet:"upid,optional"`
}

func sliceRowOf(r *tables.Slice) sliceRow {
	row := sliceRow{
		ID: r.ID, TS: r.TS, Dur: r.Dur, TrackID: r.TrackID,
		Category: r.Category, Name: r.Name, Depth: r.Depth,
	}
	if r.ParentID != nil {
		row.ParentID = *r.ParentID
	}
	if r.Args != nil {
		row.Args = *r.Args
	}
	if r.Utid != nil {
		row.Utid = *r.Utid
	}
	if r.Upid != nil {
		row.Upid = *r.Upid
	}
	return row
}

// chunk is the most rows parquet-go writes at once.
const chunk = 64

// A sliceTable is the slice table's Parquet file.
type sliceTable struct {
	f        *os.File
	w        *pq.GenericWriter[sliceRow]
	pipe     *tables.Pipe[sliceRow]
	rowGroup int // rows per row group
	rows     int // in the row group being written
}

// sliceSchema is the slice table's schema: tables.Slice's, as the other
// tables have their row type's.
var sliceSchema = pq.SchemaOf(new(tables.Slice))

func newSliceTable(path string) (*sliceTable, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	t := &sliceTable{
		f:        f,
		w:        pq.NewGenericWriter[sliceRow](f, sliceSchema, pq.Compression(codec), pq.MaxRowsPerRowGroup(rowGroup)),
		rowGroup: rowGroup,
	}
	t.pipe = tables.NewPipe(t.write)
	return t, nil
}

func (t *sliceTable) add(r *tables.Slice) error {
	row := sliceRowOf(r)
	return t.pipe.Add(&row)
}

// write writes rows a chunk at a time, each within a row group and
// ended before a run of values parquet-go would write wrong.
func (t *sliceTable) write(rows []sliceRow) error {
	for len(rows) > 0 {
		n := safeChunk(rows[:min(len(rows), chunk, t.rowGroup-t.rows)])
		if _, err := t.w.Write(rows[:n]); err != nil {
			return err
		}
		rows = rows[n:]
		if t.rows += n; t.rows == t.rowGroup {
			if err := t.w.Flush(); err != nil {
				return err
			}
			t.rows = 0
		}
	}
	return nil
}

// safeChunk returns how many of rows (at most chunk) parquet-go writes
// right as one chunk: all, or those before the first run of values
// that it would write wrong, in any of the optional columns.
func safeChunk(rows []sliceRow) int {
	var parent, args, utid, upid uint64
	for i := range rows {
		r := &rows[i]
		bit := uint64(1) << i
		if r.ParentID != 0 {
			parent |= bit
		}
		if r.Args != "" {
			args |= bit
		}
		if r.Utid != 0 {
			utid |= bit
		}
		if r.Upid != 0 {
			upid |= bit
		}
	}
	n := len(rows)
	for _, w := range [...]uint64{parent, args, utid, upid} {
		n = min(n, badRun(w, len(rows)))
	}
	return n
}

// badRun returns where the first run of values of a chunk of n rows
// that parquet-go would write wrong begins, or n if there is none:
// w has bit i set for a value at row i, clear for a NULL.
func badRun(w uint64, n int) int {
	starts := w &^ (w << 1) &^ 1 // runs that begin after a NULL
	for starts != 0 {
		s := bits.TrailingZeros64(starts)
		starts &= starts - 1
		if 2*s >= n {
			break // the run would be taken to the end: no NULL after it
		}
		if w>>s == 1<<s-1 {
			return s
		}
	}
	return n
}

func (t *sliceTable) close() error {
	err := t.pipe.Close()
	if err == nil {
		err = t.w.Close()
	}
	return errors.Join(err, t.f.Close())
}
