package tables

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gotracer/tracer"
)

// deepRow is a slice row with what its pointers pointed to when the
// Sink had it.
type deepRow struct {
	row                Slice
	parent, utid, upid int64
	args               string
}

func deepOf(s *Slice) deepRow {
	d := deepRow{row: *s}
	d.row.ParentID, d.row.Args, d.row.Utid, d.row.Upid = nil, nil, nil, nil
	if s.ParentID != nil {
		d.parent = *s.ParentID
	}
	if s.Args != nil {
		d.args = "=" + *s.Args
	}
	if s.Utid != nil {
		d.utid = *s.Utid
	}
	if s.Upid != nil {
		d.upid = *s.Upid
	}
	return d
}

// keeper is a Sink that keeps each slice row as given, its pointers
// and strings as they are (a Sink may), and a deep copy made when it
// came; it checks that the parent of each is one level up, on its track
// and around it, and came before it, or (with Builder.InOpen: a B still
// open) comes later; done reports what it found wrong.
type keeper struct {
	rows
	t       *testing.T
	deep    []deepRow
	byID    map[int64]deepRow
	orphans map[int64][]deepRow // by the parent they wait for
	inOpen  bool                // Builder.InOpen: a child may end after its B (see anchorOf)
	wrong   map[int64][]string  // by track
}

func (k *keeper) Slice(s *Slice) error {
	d := deepOf(s)
	if s.ParentID != nil {
		if p, ok := k.byID[*s.ParentID]; ok {
			k.checkChild(p, d)
		} else {
			if k.orphans == nil {
				k.orphans = map[int64][]deepRow{}
			}
			k.orphans[*s.ParentID] = append(k.orphans[*s.ParentID], d)
		}
	} else if s.Depth != 0 {
		k.problem(d, "slice %d: depth %d, no parent", s.ID, s.Depth)
	}
	for _, c := range k.orphans[s.ID] {
		k.checkChild(d, c)
	}
	delete(k.orphans, s.ID)
	_, dup := k.byID[s.ID]
	assert.False(k.t, dup, "slice %d written twice", s.ID)
	k.byID[s.ID] = d
	k.deep = append(k.deep, d)
	return k.rows.Slice(s)
}

func (k *keeper) problem(d deepRow, format string, args ...any) {
	if k.wrong == nil {
		k.wrong = map[int64][]string{}
	}
	k.wrong[d.row.TrackID] = append(k.wrong[d.row.TrackID], fmt.Sprintf(format, args...))
}

// checkChild checks the slice c against its parent p.
func (k *keeper) checkChild(p, c deepRow) {
	id := c.row.ID
	switch {
	case p.row.Depth+1 != c.row.Depth:
		k.problem(c, "slice %d: depth %d, its parent's %d", id, c.row.Depth, p.row.Depth)
	case p.row.TrackID != c.row.TrackID:
		k.problem(c, "slice %d: parent on track %d", id, p.row.TrackID)
	case p.row.TS > c.row.TS:
		k.problem(c, "slice %d: begins before its parent", id)
	case p.row.Dur >= 0 && c.row.Dur >= 0 && !k.inOpen && c.row.TS+c.row.Dur > p.row.TS+p.row.Dur:
		k.problem(c, "slice %d: ends after its parent", id)
	}
}

// done checks that the parent of every slice came, and that no slice
// was found wrong, but on the tracks of late with InOpen: a track found
// out of order after slices were written in its B events (see seeStart).
func (k *keeper) done(late []int64) {
	for id, cs := range k.orphans {
		assert.Fail(k.t, "parent never written", "slice %d: parent %d never written", cs[0].row.ID, id)
	}
	for track, w := range k.wrong {
		if !k.inOpen || !slices.Contains(late, track) {
			assert.Fail(k.t, "rows against their parents", "track %d: %d rows, as %s", track, len(w), w[0])
		}
	}
}

// TestNodeReuse checks that reusing the nodes of written slices changes
// no row: the same files, with few slices allowed to wait (so that
// roots are written, and their nodes reused, while others wait, and
// B events stay open across a rotated set's files), give the same rows
// as with no node ever reused, and each row's pointers still point to
// what they did when the Sink had the row.
func TestNodeReuse(t *testing.T) {
	dir := t.TempDir()
	recorded, hand := writeSamples(t, dir)
	base := filepath.Join(dir, "rot.json")
	tr, err := tracer.New(base, tracer.WithMaxFileSize(16<<10))
	require.NoError(t, err)
	end := tr.LongSpan("whole run")
	for i := range 500 {
		inner := tr.LongSpan("outer", tracer.Int("i", i))
		tr.Span("step", tracer.Int("i", i))()
		inner()
		if i%50 == 0 {
			require.NoError(t, tr.Flush())
		}
	}
	end()
	require.NoError(t, tr.Close())
	rotated, err := filepath.Glob(filepath.Join(dir, "rot.*json"))
	require.NoError(t, err)
	require.Greater(t, len(rotated), 2, "rotated")

	// A rotated set whose second file ends the B the first left open
	// before it repeats it: the B is written, and its node reused, by
	// then.
	meta := `{"ph":"M","name":"process_name","pid":1,"tid":1,"args":{"name":"p","ts0_unix_ns":1000}},` + "\n"
	cut := []string{filepath.Join(dir, "cut.000001.json"), filepath.Join(dir, "cut.000002.json")}
	require.NoError(t, os.WriteFile(cut[0], []byte("[\n"+meta+`{"ph":"B","name":"a","pid":1,"tid":1,"ts":1},`+"\n"), 0o644))
	require.NoError(t, os.WriteFile(cut[1], []byte("[\n"+meta+`{"ph":"E","pid":1,"tid":1,"ts":5},
{"ph":"X","name":"b","pid":1,"tid":1,"ts":6,"dur":1},
{"ph":"X","name":"c","pid":1,"tid":1,"ts":8,"dur":1},
{"ph":"B","name":"a","pid":1,"tid":1,"ts":1},
{"ph":"X","name":"d","pid":1,"tid":1,"ts":12,"dur":1}
]
`), 0o644))

	for _, files := range [][]string{{recorded}, {hand}, rotated, cut, {recorded, hand}} {
		for _, maxPending := range []int{1, 3, 10, 100, 0} {
			inOpen := maxPending%10 == 0 // with and without: rows written in a B open hold nodes too
			run := func(keep bool) (*keeper, Report) {
				k := &keeper{t: t, byID: map[int64]deepRow{}, inOpen: inOpen}
				b := NewBuilder(k)
				b.MaxPending = maxPending
				b.InOpen = inOpen
				b.nodes.keep = keep
				require.NoError(t, b.Build(files, nil))
				k.done(b.Report.Late)
				return k, b.Report
			}
			want, wantRep := run(true)
			got, gotRep := run(false)
			name := filepath.Base(files[0])
			require.NotEmpty(t, want.deep, name)
			require.Equal(t, wantRep, gotRep, "%s, MaxPending %d: report", name, maxPending)
			require.Equal(t, want.deep, got.deep, "%s, MaxPending %d: rows", name, maxPending)
			for i := range got.slices {
				require.Equal(t, got.deep[i], deepOf(&got.slices[i]), "%s, MaxPending %d: slice %d changed after the Sink had it", name, maxPending, got.slices[i].ID)
			}
		}
	}
}
