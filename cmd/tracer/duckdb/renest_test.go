package duckdb

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gotracer/tracer/internal/tracecheck"
)

// TestRenestMatchesTraceProcessor loads files whose slices are written
// before a slice that encloses them comes, far past MaxPending (here
// 64), and checks that the slice table is trace_processor's all the
// same, every slice with its depth and parent: the tracks are nested
// again once the rows are in (renest.go).
func TestRenestMatchesTraceProcessor(t *testing.T) {
	t.Parallel()
	x := func(b *strings.Builder, name string, ts, dur int) {
		fmt.Fprintf(b, `{"name":%q,"ph":"X","ts":%d,"dur":%d,"pid":1,"tid":1},`+"\n", name, ts, dur)
	}
	be := func(b *strings.Builder, ph, name string, ts int) {
		fmt.Fprintf(b, `{"name":%q,"ph":%q,"ts":%d,"pid":1,"tid":1},`+"\n", name, ph, ts)
	}
	files := map[string]func(b *strings.Builder){
		// A program's main span, whose B the tracer package writes at
		// its first flush, after the spans recorded before it, each
		// with a child.
		"late B": func(b *strings.Builder) {
			for i := range 3000 {
				x(b, "leaf", 10+4*i+1, 1)
				x(b, "request", 10+4*i, 3)
			}
			be(b, "B", "main", 0)
			be(b, "E", "main", 20+4*3000)
		},
		// The same main span never ended (the program was killed),
		// written first.
		"open B": func(b *strings.Builder) {
			be(b, "B", "main", 0)
			for i := range 3000 {
				x(b, "request", 10+4*i, 3)
			}
		},
		// B/E pairs in start order, then X events in no order that
		// enclose them, one inside another.
		"X after B and E": func(b *strings.Builder) {
			for i := range 1000 {
				be(b, "B", "step", 100+10*i)
				be(b, "E", "step", 100+10*i+5)
			}
			x(b, "phase", 50, 6000)
			x(b, "run", 0, 20000)
			x(b, "half", 2000, 3000)
		},
		// A chain 512 levels deep in start order, then a span around
		// it: the innermost slice is now deeper than trace_processor
		// keeps, and is dropped, as it drops it.
		"too deep": func(b *strings.Builder) {
			for i := range 512 {
				x(b, "r", 10+i, 2*(600-i))
			}
			for i := range 200 {
				x(b, "after", 2000+2*i, 1)
			}
			x(b, "around", 0, 5000)
		},
	}
	dir := t.TempDir()
	for name, write := range files {
		t.Run(name, func(t *testing.T) {
			var b strings.Builder
			b.WriteString("[\n")
			write(&b)
			path := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".json")
			require.NoError(t, os.WriteFile(path, []byte(strings.TrimSuffix(b.String(), ",\n")+"\n]\n"), 0o644))

			got, rep := queryPending(t, []string{path}, 64, slicesQuery)
			if name == "open B" {
				// Written as children of the B still open, at once
				// (tables.Builder.InOpen): nothing to nest again.
				assert.Empty(t, rep.Late)
			} else {
				assert.NotEmpty(t, rep.Late, "the premise: slices written before the one that encloses them")
			}
			assert.Zero(t, rep.Unsure, "nested again: none short")
			if name == "too deep" {
				assert.Equal(t, int64(1), rep.TooDeep)
			} else {
				assert.Empty(t, rep.Warnings())
			}
			want := tracecheck.PerfettoSQL(t, path, slicesQuery)
			require.Greater(t, len(want), 1)
			require.Equal(t, want, got)
		})
	}
}

// TestRenestAsTheBuilderNests checks renest against the Builder's own
// nesting on random traces of nested spans on a few threads, written as
// the tracer package writes them (an X when a span ends; a B when a span
// outlives a flush, its E when it ends), some spans never ended: the
// slice table with at most 16 slices waiting, nested again, is the one
// the Builder makes with every slice waiting to the end.
func TestRenestAsTheBuilderNests(t *testing.T) {
	t.Parallel()
	seed := rand.Uint64()
	if s := os.Getenv("RENEST_SEED"); s != "" {
		fmt.Sscan(s, &seed)
	}
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 3))
	dir := t.TempDir()
	if d := os.Getenv("RENEST_DIR"); d != "" {
		dir = d
	}
	compared := 0
	defer func() {
		t.Logf("%d rounds compared", compared)
		assert.GreaterOrEqual(t, compared, 10, "rounds with every slice waiting to the end")
	}()
	for round := range 20 {
		type ev struct {
			at   int64 // when it is written
			text string
		}
		var evs []ev
		var grow func(tid int, start, end int64, depth int)
		grow = func(tid int, start, end int64, depth int) {
			name := fmt.Sprintf("s%d", r.IntN(5))
			switch {
			case r.IntN(6) == 0:
				// Outlived a flush: its B is written then (with those
				// of the spans around it, in the order they began), its
				// E when it ends.
				evs = append(evs, ev{start, fmt.Sprintf(`{"name":%q,"ph":"B","ts":%d,"pid":1,"tid":%d}`, name, start, tid)})
				evs = append(evs, ev{end, fmt.Sprintf(`{"name":%q,"ph":"E","ts":%d,"pid":1,"tid":%d}`, name, end, tid)})
			case start == end:
				evs = append(evs, ev{end, fmt.Sprintf(`{"name":%q,"ph":"i","ts":%d,"pid":1,"tid":%d}`, name, start, tid)})
			default:
				evs = append(evs, ev{end, fmt.Sprintf(`{"name":%q,"ph":"X","ts":%d,"dur":%d,"pid":1,"tid":%d}`, name, start, end-start, tid)})
			}
			for at := start + 1; depth < 6 && at < end-1; {
				cs := at + r.Int64N(max(1, (end-at)/3))
				ce := cs + r.Int64N(max(1, end-cs-1))
				if ce >= end {
					break
				}
				grow(tid, cs, ce, depth+1)
				at = ce + 1
			}
		}
		for tid := 1; tid <= 3; tid++ {
			var gaps []int64 // between the thread's top-level spans
			for at := int64(1); at < 5_000; {
				end := at + 1 + r.Int64N(2_000)
				grow(tid, at, end, 0)
				at = end + 1 + r.Int64N(100)
				gaps = append(gaps, at)
			}
			if r.IntN(2) == 0 {
				// A span around the thread's whole life, its B written
				// at some flush between two top-level spans (after them
				// all, when they are written at once), ended or never
				// (a kill).
				const life = 8_000 // after every top-level span
				evs = append(evs, ev{gaps[r.IntN(len(gaps))], fmt.Sprintf(`{"name":"life","ph":"B","ts":0,"pid":1,"tid":%d}`, tid)})
				if r.IntN(2) == 0 {
					evs = append(evs, ev{life, fmt.Sprintf(`{"name":"life","ph":"E","ts":%d,"pid":1,"tid":%d}`, life, tid)})
				}
			}
		}
		slices.SortStableFunc(evs, func(a, b ev) int { return cmp.Compare(a.at, b.at) })
		var b strings.Builder
		b.WriteString("[\n")
		for i, e := range evs {
			if i > 0 {
				b.WriteString(",\n")
			}
			b.WriteString(e.text)
		}
		b.WriteString("\n]\n")
		path := filepath.Join(dir, fmt.Sprintf("r%d.json", round))
		require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
		// Every slice by its thread, ts, dur and name, with its depth
		// and parent (ids are the same in both).
		const q = `SELECT utid, ts, dur, name, depth, parent_id FROM slice ORDER BY ALL`
		whole, rep := queryPending(t, []string{path}, 1<<20, q)
		if len(rep.Late) > 0 {
			// A thread whose first slices were B/E pairs, in start
			// order, written as they came: no reference to compare with.
			continue
		}
		compared++
		renested, rep := queryPending(t, []string{path}, 16, q)
		require.NotEmpty(t, rep.Late, "round %d: the premise", round)
		require.Len(t, renested, len(whole), "round %d", round)
		for i := range whole {
			require.Equal(t, whole[i], renested[i], "round %d (%d events), row %d of %s", round, len(evs), i, path)
		}
	}
}

// TestRenestTiesDifferFromTraceProcessor holds the difference renest.go
// states: a B and an X of one extent, the B written first, on a track
// nested again. trace_processor's sort takes the X first, its outer, as
// the Builder nests them when nothing is nested again; renest, which
// cannot tell an X row from a B row, makes the first written the outer.
func TestRenestTiesDifferFromTraceProcessor(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("[\n")
	for i := range 3000 {
		fmt.Fprintf(&b, `{"name":"request","ph":"X","ts":%d,"dur":3,"pid":1,"tid":1},`+"\n", 10+4*i)
	}
	// The tie, then main's B, written late.
	b.WriteString(`{"name":"p","ph":"B","ts":20000,"pid":1,"tid":1},` + "\n")
	b.WriteString(`{"name":"c","ph":"X","ts":20000,"dur":10,"pid":1,"tid":1},` + "\n")
	b.WriteString(`{"name":"p","ph":"E","ts":20010,"pid":1,"tid":1},` + "\n")
	b.WriteString(`{"name":"main","ph":"B","ts":0,"pid":1,"tid":1},` + "\n")
	b.WriteString(`{"name":"main","ph":"E","ts":30000,"pid":1,"tid":1}` + "\n]\n")
	path := filepath.Join(t.TempDir(), "tie.json")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	want := tracecheck.PerfettoSQL(t, path, slicesQuery)

	got, rep := queryPending(t, []string{path}, 0, slicesQuery)
	require.Empty(t, rep.Late, "the premise: every slice waits for main")
	require.Equal(t, want, got, "the Builder nests the tie as trace_processor")

	got, rep = queryPending(t, []string{path}, 64, slicesQuery)
	require.NotEmpty(t, rep.Late, "the premise: main comes after the slices it holds were written")
	require.Len(t, got, len(want))
	var differ []string
	for i := range want {
		if !slices.Equal(want[i], got[i]) {
			differ = append(differ, fmt.Sprintf("%v, not %v", got[i], want[i]))
		}
	}
	// The X's name is c, the B's p: both at ts 20000 for 10 µs.
	require.Equal(t, []string{
		"[20000000 10000 c 2 p 20000000], not [20000000 10000 c 1 main 0]",
		"[20000000 10000 p 1 main 0], not [20000000 10000 p 2 c 20000000]",
	}, differ)
}
