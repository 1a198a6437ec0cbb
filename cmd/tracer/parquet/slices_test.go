package parquet

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	pq "github.com/parquet-go/parquet-go"
	"github.com/stretchr/testify/require"

	"github.com/gotracer/tracer/cmd/tracer/internal/tables"
)

// rowsOf returns n slice rows whose optional columns are NULL where the
// bits of w are clear, all four alike (pattern 0) or each its own.
func rowsOf(ws [4]uint64, n int) []sliceRow {
	rows := make([]sliceRow, n)
	for i := range rows {
		r := &rows[i]
		r.ID, r.Name = int64(i+1), "s"
		if ws[0]>>i&1 != 0 {
			r.ParentID = int64(i + 100)
		}
		if ws[1]>>i&1 != 0 {
			r.Args = fmt.Sprintf(`{"i":%d}`, i)
		}
		if ws[2]>>i&1 != 0 {
			r.Utid = int64(i + 200)
		}
		if ws[3]>>i&1 != 0 {
			r.Upid = int64(i + 300)
		}
	}
	return rows
}

// TestOptionalBug checks safeChunk's model of parquet-go's bug against
// the library: every chunk that the library writes wrong in one Write
// is one that safeChunk would cut, over every pattern of NULLs of up to
// 12 rows and random ones of up to 64. (Should parquet-go fix the bug,
// this still passes, and sliceTable may write whole chunks.)
func TestOptionalBug(t *testing.T) {
	check := func(w uint64, n int) bool {
		rows := rowsOf([4]uint64{w, w, w, w}, n)
		var buf bytes.Buffer
		pw := pq.NewGenericWriter[sliceRow](&buf, sliceSchema)
		_, err := pw.Write(rows)
		require.NoError(t, err)
		require.NoError(t, pw.Close())
		got, err := pq.Read[tables.Slice](bytes.NewReader(buf.Bytes()), int64(buf.Len()))
		require.NoError(t, err)
		require.Len(t, got, n)
		for i := range got {
			if (got[i].ParentID != nil) != (w>>i&1 != 0) || (got[i].Args != nil) != (w>>i&1 != 0) ||
				(got[i].Utid != nil) != (w>>i&1 != 0) || (got[i].Upid != nil) != (w>>i&1 != 0) {
				return false
			}
		}
		return true
	}
	wrong := 0
	for n := 1; n <= 10; n++ {
		for w := uint64(0); w < 1<<n; w++ {
			if !check(w, n) {
				wrong++
				require.Less(t, badRun(w, n), n, "%0*b (%d rows) is written wrong, and safeChunk would write it whole", n, w, n)
			}
		}
	}
	t.Logf("%d patterns of up to 10 rows written wrong in one chunk", wrong)
	rng := rand.New(rand.NewPCG(5, 6))
	for range 2000 {
		n := 1 + rng.IntN(chunk)
		w := rng.Uint64() & (1<<n - 1)
		if s := 1 + rng.IntN(32); rng.IntN(2) == 0 && 2*s < n {
			// a run of s values at s, NULLs after it: the bug's shape
			w = w&(1<<s-1)&^(1<<(s-1)) | (1<<s-1)<<s
		}
		if !check(w, n) {
			require.Less(t, badRun(w, n), n, "%0*b (%d rows) is written wrong, and safeChunk would write it whole", n, w, n)
		}
	}
}

// TestSliceNulls writes slices whose optional columns are NULL at random
// and in the runs parquet-go writes wrong, in blocks of 64 rows (its
// chunks, when nothing is cut), over several row groups, and reads them
// back.
func TestSliceNulls(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	var want []tables.Slice
	for len(want) < 6400 {
		var ws [4]uint64
		for c := range ws {
			ws[c] = rng.Uint64()
			if s := 1 + rng.IntN(31); rng.IntN(4) != 0 {
				ws[c] = ws[c]&(1<<s-1)&^(1<<(s-1)) | (1<<s-1)<<s
			}
		}
		for _, r := range rowsOf(ws, chunk) {
			s := tables.Slice{ID: int64(len(want) + 1), TS: r.TS, Name: r.Name}
			if r.ParentID != 0 {
				s.ParentID = &r.ParentID
			}
			if r.Args != "" {
				s.Args = &r.Args
			}
			if r.Utid != 0 {
				s.Utid = &r.Utid
			}
			if r.Upid != 0 {
				s.Upid = &r.Upid
			}
			want = append(want, s)
		}
	}
	path := filepath.Join(t.TempDir(), "slice.parquet")
	st, err := newSliceTable(path)
	require.NoError(t, err)
	st.rowGroup = 1000 // several, the last chunk of each cut short
	for i := range want {
		require.NoError(t, st.add(&want[i]))
	}
	require.NoError(t, st.close())
	got, err := pq.ReadFile[tables.Slice](path)
	require.NoError(t, err)
	require.Equal(t, want, got)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	f, err := pq.OpenFile(bytes.NewReader(data), int64(len(data)))
	require.NoError(t, err)
	require.Len(t, f.RowGroups(), (len(want)+999)/1000)
}
