package trace

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// depths returns each name's deepest depth.
func depths(a *Analyzer) map[string]int32 {
	m := map[string]int32{}
	for _, n := range a.Names {
		if n.Count > 0 {
			m[n.Name] = n.MaxDepth
		}
	}
	return m
}

// TestDepthRandom checks each name's deepest depth on random trees of
// slices, a few names repeated at every level, written in end order
// (the tracer package's: children first, so that every slice is taken
// one level down by each parent that comes after it, after the track's
// tree summed its subtree up), in start order and as B/E pairs.
func TestDepthRandom(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 5))
	type span struct {
		s, e, depth int
		name        string
	}
	for round := range 100 {
		var tree []span
		var grow func(s, e, depth int)
		grow = func(s, e, depth int) {
			tree = append(tree, span{s, e, depth, fmt.Sprintf("n%d", rng.IntN(8))})
			for at := s; depth < 2+rng.IntN(8) && at < e-2; {
				cs := at + rng.IntN(max(1, (e-at)/3))
				ce := cs + 1 + rng.IntN(max(1, e-cs-1))
				if ce > e || cs >= ce {
					break
				}
				grow(cs, ce, depth+1)
				at = ce
			}
		}
		for at := 0; at < 20000; at += 1 + rng.IntN(50) {
			e := at + 1 + rng.IntN(2000)
			grow(at, e, 0)
			at = e
		}
		want := map[string]int32{}
		for _, s := range tree {
			want[s.name] = max(want[s.name], int32(s.depth))
		}
		for _, order := range []string{"end", "start", "BE"} {
			idx := make([]int, len(tree))
			for i := range idx {
				idx[i] = i
			}
			slices.SortStableFunc(idx, func(a, b int) int {
				x, y := tree[a], tree[b]
				if order == "end" {
					return cmp.Or(cmp.Compare(x.e, y.e), cmp.Compare(y.s, x.s))
				}
				return cmp.Or(cmp.Compare(x.s, y.s), cmp.Compare(y.e, x.e))
			})
			var b strings.Builder
			b.WriteString("[\n")
			if order == "BE" {
				type ev struct {
					ts, depth int
					end       bool
					name      string
				}
				var evs []ev
				for _, s := range tree {
					evs = append(evs, ev{s.s, s.depth, false, s.name}, ev{s.e, s.depth, true, s.name})
				}
				// By time; at one time the ends first, the innermost
				// first, then the beginnings, the outermost first.
				slices.SortStableFunc(evs, func(x, y ev) int {
					switch {
					case x.ts != y.ts:
						return cmp.Compare(x.ts, y.ts)
					case x.end != y.end:
						if x.end {
							return -1
						}
						return 1
					case x.end:
						return cmp.Compare(y.depth, x.depth)
					}
					return cmp.Compare(x.depth, y.depth)
				})
				for _, e := range evs {
					ph := "B"
					if e.end {
						ph = "E"
					}
					fmt.Fprintf(&b, `{"name":%q,"ph":%q,"ts":%d,"pid":1,"tid":1},`+"\n", e.name, ph, e.ts)
				}
			} else {
				for _, i := range idx {
					b.WriteString(x(tree[i].name, tree[i].s, tree[i].e-tree[i].s))
				}
			}
			a, problems := analyze(t, b.String())
			require.Empty(t, problems, "round %d, %s order", round, order)
			require.Equal(t, want, depths(a), "round %d, %s order", round, order)
		}
	}
}

// TestDepthFolded checks the deepest depths where a track holds more
// top-level slices than it keeps apart (the children of a B whose E
// comes last): they are folded into summaries, which keep the depths of
// what they hold, and go one level down with them when the E comes.
func TestDepthFolded(t *testing.T) {
	var b strings.Builder
	b.WriteString("[\n" + `{"name":"life","ph":"B","ts":0,"pid":1,"tid":1},` + "\n")
	const n = 3*maxStack + 7
	for i := range n {
		// job { step { leaf } }, the leaf named by i, written children
		// first; every 100th job holds one more level.
		ts := 10 + 10*i
		if i%100 == 0 {
			b.WriteString(x("deeper", ts+3, 1))
		}
		b.WriteString(x(fmt.Sprintf("leaf%d", i%40), ts+2, 3))
		b.WriteString(x("step", ts+1, 5))
		b.WriteString(x("job", ts, 8))
	}
	b.WriteString(`{"name":"life","ph":"E","ts":` + itoa(20+10*n) + `,"pid":1,"tid":1},` + "\n")
	for name, top := range map[string]int{"kept apart": maxTop, "folded": maxStack} {
		t.Run(name, func(t *testing.T) {
			defer func(n int) { maxTop = n }(maxTop)
			maxTop = top
			a, problems := analyze(t, b.String())
			require.Empty(t, problems)
			want := map[string]int32{"life": 0, "job": 1, "step": 2, "deeper": 4}
			for i := range 40 {
				want[fmt.Sprintf("leaf%d", i)] = 3
			}
			assert.Equal(t, want, depths(a))
			assert.LessOrEqual(t, len(a.trackList[0].stack), top)
		})
	}
}

// TestDepthGrouped checks that the depths summed up below top slices
// follow their names when names are grouped (see names.go), and go one
// level down when a slice written last encloses them all.
func TestDepthGrouped(t *testing.T) {
	const n = groupAfter + 500
	var b strings.Builder
	b.WriteString("[\n")
	for i := range n {
		b.WriteString(x("db "+itoa(i%5), 10*i+1, 1))
		b.WriteString(x("request "+itoa(i), 10*i, 5))
	}
	b.WriteString(x("main", 0, 10*n))
	a, problems := analyze(t, b.String())
	require.Empty(t, problems)
	assert.Equal(t, map[string]int32{"main": 0, "request <n>": 1, "db <n>": 2}, depths(a))
}

// TestDepthChainLinear nests slices of distinct names tens of thousands
// of levels deep, children first (X events, and B/E pairs), and counts
// the work on the tree beyond one step per slice, the names moved from
// set to set included (see depth.go): it grows with the slices, not
// with their square.
func TestDepthChainLinear(t *testing.T) {
	for _, n := range []int{5000, 20000} {
		for _, be := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d/be=%v", n, be), func(t *testing.T) {
				var b strings.Builder
				b.WriteString("[\n")
				for i := range n {
					if be {
						fmt.Fprintf(&b, `{"name":"r%c%d","ph":"B","ts":%d,"pid":1,"tid":1},`+"\n", 'a'+i%26, i/26, i)
					}
				}
				for i := n - 1; i >= 0; i-- {
					if be {
						fmt.Fprintf(&b, `{"name":"r%c%d","ph":"E","ts":%d,"pid":1,"tid":1},`+"\n", 'a'+i%26, i/26, 2*n-i)
					} else {
						b.WriteString(x(fmt.Sprintf("r%c%d", 'a'+i%26, i/26), i, 2*(n-i)))
					}
				}
				a, _ := analyze(t, b.String())
				want := map[string]int32{}
				for i := range n {
					name := fmt.Sprintf("r%c%d", 'a'+i%26, i/26)
					if n > groupAfter {
						name = fmt.Sprintf("r%c<n>", 'a'+i%26) // grouped
					}
					want[name] = int32(i)
				}
				require.Equal(t, want, depths(a))
				perSlice := float64(a.steps) / float64(n)
				t.Logf("%.2f steps a slice", perSlice)
				assert.Less(t, perSlice, 4.0)
			})
		}
	}
}
