package tables

import (
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSearch checks search, which gallops back from the end, against
// sort.Search over random lists sorted by start (ties and equal nodes
// included).
func TestSearch(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	mk := func() *node {
		ts := rng.Int64N(50)
		return &node{row: Slice{TS: ts}, end: ts + rng.Int64N(20)}
	}
	for range 20000 {
		list := make([]*node, rng.IntN(70))
		for i := range list {
			list[i] = mk()
		}
		slices.SortFunc(list, func(a, b *node) int {
			switch {
			case before(a, b):
				return -1
			case before(b, a):
				return 1
			}
			return 0
		})
		n := mk()
		if len(list) > 0 && rng.IntN(4) == 0 {
			c := *list[rng.IntN(len(list))]
			n = &c
		}
		want := sort.Search(len(list), func(i int) bool { return before(n, list[i]) })
		require.Equal(t, want, search(list, n), "%d nodes", len(list))
	}
}

// TestOldestEnd checks oldestEnd's merge of the tracks' roots against
// the sort of them all, over random tracks of disjoint roots (sorted by
// start and by end) and some whose roots overlap (not sorted by end).
func TestOldestEnd(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 3000 {
		b := NewBuilder(nil)
		overlap := rng.IntN(4) == 0
		for range rng.IntN(6) + 1 {
			tr := newTrack(0)
			ts := rng.Int64N(10)
			for range rng.IntN(30) {
				end := ts + rng.Int64N(10)
				if overlap {
					end += rng.Int64N(30)
				}
				tr.roots = append(tr.roots, &node{row: Slice{TS: ts}, end: end, size: 1 + rng.IntN(5)})
				b.pending += tr.roots[len(tr.roots)-1].size
				ts = end - rng.Int64N(2)
				if overlap {
					ts = tr.roots[len(tr.roots)-1].row.TS + rng.Int64N(5)
				}
			}
			b.waiting = append(b.waiting, tr)
		}
		for _, keep := range []int{0, 1, b.pending / 3, b.pending / 2, b.pending - 1, b.pending} {
			require.Equal(t, b.oldestEndSorted(keep), b.oldestEnd(keep), "keep %d of %d", keep, b.pending)
		}
	}
}
