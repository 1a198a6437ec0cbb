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
