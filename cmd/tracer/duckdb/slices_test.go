package duckdb

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gotracer/tracer/cmd/tracer/internal/tables"
)

// TestLoadSlicesFailing checks that an INSERT of the slices that fails
// (here a CHECK constraint the 5,000th row breaks) is an error of the
// batch written, and of finish, and that nothing waits forever.
func TestLoadSlicesFailing(t *testing.T) {
	db, err := Open()
	require.NoError(t, err)
	defer db.Close()
	create := strings.TrimSuffix(createTable("slice", sliceType), ")") + `, CHECK ("id" <> 5000))`
	_, err = db.Exec(create)
	require.NoError(t, err)
	l, err := loadSlices(db.slices)
	require.NoError(t, err)
	name := "n"
	var writeErr error
	for batch := range 4 {
		rows := make([]tables.Slice, tables.PipeBatch)
		for i := range rows {
			rows[i] = tables.Slice{ID: int64(batch*tables.PipeBatch + i + 1), Name: name}
		}
		if writeErr = l.write(rows); writeErr != nil {
			require.GreaterOrEqual(t, batch, 1, "the 5,000th row is in the second batch")
			break
		}
	}
	require.ErrorContains(t, writeErr, "CHECK constraint")
	require.ErrorContains(t, l.finish(), "CHECK constraint")
	var n int
	require.NoError(t, db.QueryRow("SELECT count(*) FROM slice").Scan(&n))
	require.Zero(t, n, "the INSERT is one statement: none of its rows stay")
}

// TestLoadSlicesCalledAgain checks that the table function the slices
// came through returns nothing when a query calls it after the load.
func TestLoadSlicesCalledAgain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.json")
	var b strings.Builder
	b.WriteString("[\n")
	for i := range 5000 { // more than a batch of the Pipe's, and than a chunk of DuckDB's
		fmt.Fprintf(&b, `{"name":"s","ph":"X","ts":%d,"dur":1,"pid":1,"tid":1},`+"\n", 2*i)
	}
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	db, err := Open()
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Load([]string{path})
	require.NoError(t, err)
	var n, again int
	require.NoError(t, db.QueryRow("SELECT count(*) FROM slice").Scan(&n))
	require.Equal(t, 5000, n)
	require.NoError(t, db.QueryRow("SELECT count(*) FROM "+loadFunction+"()").Scan(&again))
	require.Zero(t, again)
}
