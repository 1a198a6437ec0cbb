package trace

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCollapseEndOrder checks that summing up the finished trees of a
// file in end order (see collapse) changes no number: random small trees
// with every tie (zero-length slices, slices that begin or end with
// their parent, identical ones), written children first, give the self
// time they give when nothing is summed up.
func TestCollapseEndOrder(t *testing.T) {
	defer func(n int64) { orderedAfter = n }(orderedAfter)
	for seed := range uint64(3000) {
		r := rand.New(rand.NewPCG(seed, 9))
		type sp struct {
			s, e, d int
			be      bool
		}
		var spans []sp
		var grow func(s, e, d int)
		grow = func(s, e, d int) {
			if d > 3 {
				return
			}
			at := s
			for range r.IntN(3) {
				if at > e {
					break
				}
				cs := at + r.IntN(2)
				ce := cs + r.IntN(3)
				if r.IntN(3) == 0 {
					ce = e
				}
				if cs > e || ce > e {
					break
				}
				spans = append(spans, sp{cs, ce, d, r.IntN(4) == 0})
				grow(cs, ce, d+1)
				at = ce
			}
		}
		spans = append(spans, sp{0, 6, 0, false})
		grow(0, 6, 1)
		idx := make([]int, len(spans))
		for i := range idx {
			idx[i] = i
		}
		slices.SortStableFunc(idx, func(a, b int) int {
			x, y := spans[a], spans[b]
			if x.e != y.e {
				return x.e - y.e
			}
			return y.d - x.d
		})
		var b strings.Builder
		b.WriteString("[\n")
		for _, i := range idx {
			b.WriteString(x(fmt.Sprintf("n%d", i), spans[i].s, spans[i].e-spans[i].s))
		}
		run := func(after int64) map[string]NameStats {
			orderedAfter = after
			a, _ := analyze(t, b.String())
			return names(a)
		}
		require.Equal(t, run(1<<40), run(0), "seed %d:\n%s", seed, b.String())
	}
}
