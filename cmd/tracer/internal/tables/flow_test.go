package tables

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gotracer/tracer/internal/tracecheck"
)

// flowQuery names each arrow of the flow table by its two slices' names
// and times (ids differ).
const flowQuery = `SELECT o.name, o.ts, i.name, i.ts FROM flow f
JOIN slice o ON o.id = f.slice_out JOIN slice i ON i.id = f.slice_in ORDER BY 1, 2, 3, 4;`

func flowKeys(r *rows) [][]string {
	byID := map[int64]Slice{}
	for _, s := range r.slices {
		byID[s.ID] = s
	}
	var out [][]string
	for _, f := range r.flows {
		o, i := byID[f.SliceOut], byID[f.SliceIn]
		out = append(out, []string{o.Name, fmt.Sprint(o.TS), i.Name, fmt.Sprint(i.TS)})
	}
	slices.SortFunc(out, func(a, b []string) int {
		return cmp.Or(strings.Compare(a[0], b[0]), strings.Compare(a[1], b[1]), strings.Compare(a[2], b[2]), strings.Compare(a[3], b[3]))
	})
	return out
}

// TestBindFlowsMatchTraceProcessor checks the arrows of the second form
// of flows (bind_id with flow_in and flow_out on slices) against
// trace_processor's flow table: on a file of every case by hand, and
// on random files of slices of several threads and processes, written
// in no order, with ties in ts.
func TestBindFlowsMatchTraceProcessor(t *testing.T) {
	dir := t.TempDir()
	hand := filepath.Join(dir, "hand.json")
	require.NoError(t, os.WriteFile(hand, []byte(`[
{"name":"server","ph":"X","ts":20,"dur":5,"pid":2,"tid":2,"bind_id":"0x10","flow_in":true},
{"name":"client","ph":"X","ts":10,"dur":30,"pid":1,"tid":1,"bind_id":"0x10","flow_out":true},
{"name":"hop","ph":"B","ts":50,"pid":3,"tid":3,"bind_id":16,"flow_in":true,"flow_out":true},
{"name":"hop","ph":"E","ts":55,"pid":3,"tid":3},
{"name":"last","ph":"X","ts":60,"dur":1,"pid":1,"tid":1,"bind_id":"10","flow_in":true},
{"name":"early","ph":"X","ts":1,"dur":1,"pid":1,"tid":1,"bind_id":"0x20","flow_in":true},
{"name":"step first","ph":"X","ts":2,"dur":0.5,"pid":1,"tid":1,"bind_id":"0x20","flow_in":true,"flow_out":true},
{"name":"late","ph":"X","ts":3,"dur":1,"pid":1,"tid":1,"bind_id":"0x20","flow_out":true},
{"name":"dup","ph":"X","ts":4,"dur":1,"pid":1,"tid":1,"bind_id":"0x20","flow_out":true},
{"name":"in2","ph":"X","ts":6,"dur":1,"pid":1,"tid":1,"bind_id":"0x20","flow_in":true},
{"name":"in3","ph":"X","ts":7,"dur":1,"pid":1,"tid":1,"bind_id":"0x20","flow_in":true},
{"name":"instant","ph":"i","ts":8,"pid":1,"tid":1,"bind_id":"0x20","flow_in":true},
{"name":"neither","ph":"X","ts":9,"dur":0.5,"pid":1,"tid":1,"bind_id":"0x20"},
{"name":"string","ph":"X","ts":70,"dur":1,"pid":1,"tid":1,"bind_id":"0x20","flow_in":"true"},
{"name":"number","ph":"X","ts":71,"dur":1,"pid":1,"tid":1,"bind_id":"0x20","flow_in":1},
{"name":"in args","ph":"X","ts":72,"dur":1,"pid":1,"tid":1,"args":{"bind_id":"0x20","flow_in":true}},
{"name":"op","cat":"c","ph":"b","id":"0x1","ts":73,"pid":1,"tid":1,"bind_id":"0x20","flow_in":true},
{"name":"op","cat":"c","ph":"e","id":"0x1","ts":74,"pid":1,"tid":1},
{"name":"mark","cat":"c","ph":"n","id":"0x1","ts":75,"pid":1,"tid":1,"bind_id":"0x20","flow_in":true},
{"name":"tie short","ph":"X","ts":80,"dur":1,"pid":5,"tid":5,"bind_id":"0x30","flow_out":true},
{"name":"tie long","ph":"X","ts":80,"dur":5,"pid":4,"tid":4,"bind_id":"0x30","flow_in":true},
{"name":"tie B","ph":"B","ts":80,"pid":6,"tid":6,"bind_id":"0x30","flow_in":true},
{"name":"tie B","ph":"E","ts":81,"pid":6,"tid":6}
]`), 0o644))
	paths := []string{hand}
	for seed := range uint64(10) {
		paths = append(paths, writeBindTrace(t, dir, seed))
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			want := tracecheck.PerfettoSQL(t, path, flowQuery)[1:]
			r, _ := build(t, 0, path)
			require.NotEmpty(t, want)
			require.Equal(t, want, flowKeys(r))
		})
	}
}

// writeBindTrace writes a random trace of slices that carry bind ids,
// X events in no order.
func writeBindTrace(t *testing.T, dir string, seed uint64) string {
	r := rand.New(rand.NewPCG(seed, 7))
	var xs, bes []string
	n := 0
	bind := func() string {
		if r.IntN(2) == 0 {
			return ""
		}
		id := fmt.Sprint(1 + r.IntN(5))
		if r.IntN(2) == 0 {
			id = fmt.Sprintf(`"0x%x"`, 1+r.IntN(5))
		}
		dir := []string{`"flow_out":true`, `"flow_in":true`, `"flow_in":true,"flow_out":true`, `"flow_out":false`}[r.IntN(4)]
		return `,"bind_id":` + id + "," + dir
	}
	for pid := 1; pid <= 3; pid++ {
		for tid := 1; tid <= 2; tid++ {
			ts := int64(r.IntN(5))
			for range 10 + r.IntN(10) {
				d := int64(1 + r.IntN(6))
				n++
				if tid == 2 && r.IntN(2) == 0 {
					bes = append(bes,
						fmt.Sprintf(`{"name":"s%d","ph":"B","ts":%d,"pid":%d,"tid":%d%s}`, n, ts, pid, tid, bind()),
						fmt.Sprintf(`{"name":"s%d","ph":"E","ts":%d,"pid":%d,"tid":%d}`, n, ts+d, pid, tid))
					ts += d + 1
					continue
				}
				xs = append(xs, fmt.Sprintf(`{"name":"s%d","ph":"X","ts":%d,"dur":%d,"pid":%d,"tid":%d%s}`, n, ts, d, pid, tid, bind()))
				if r.IntN(3) == 0 {
					// A child, which starts with its parent at times.
					n++
					c := ts + int64(r.IntN(2))
					xs = append(xs, fmt.Sprintf(`{"name":"s%d","ph":"X","ts":%d,"dur":%d,"pid":%d,"tid":%d%s}`, n, c, ts+d-c, pid, tid, bind()))
				}
				ts += d + int64(r.IntN(2))
			}
		}
	}
	r.Shuffle(len(xs), func(i, j int) { xs[i], xs[j] = xs[j], xs[i] })
	path := filepath.Join(dir, fmt.Sprintf("random-%d.json", seed))
	require.NoError(t, os.WriteFile(path, []byte("[\n"+strings.Join(append(xs, bes...), ",\n")+"\n]\n"), 0o644))
	return path
}
