package trace

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestSketchError checks the documented bound on distributions a span's
// durations may have: every quantile within SketchError of the exact
// value of the same rank.
func TestSketchError(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	dists := map[string]func() int64{
		"uniform":     func() int64 { return rng.Int64N(1_000_000) },
		"exponential": func() int64 { return int64(rng.ExpFloat64() * 50_000) },
		"lognormal":   func() int64 { return int64(math.Exp(rng.NormFloat64()*2 + 10)) },
		"bimodal": func() int64 {
			if rng.IntN(10) == 0 {
				return 5_000_000_000 + rng.Int64N(1000)
			}
			return 100 + rng.Int64N(10)
		},
		"tiny":     func() int64 { return rng.Int64N(3) },
		"constant": func() int64 { return 1234 },
	}
	for name, next := range dists {
		t.Run(name, func(t *testing.T) {
			var s Sketch
			vals := make([]int64, 100_000)
			for i := range vals {
				vals[i] = next()
				s.Add(vals[i])
			}
			slices.Sort(vals)
			for _, q := range []float64{0, 0.01, 0.25, 0.5, 0.9, 0.95, 0.99, 0.999, 1} {
				exact := vals[max(int(math.Ceil(q*float64(len(vals)))), 1)-1]
				got := s.Quantile(q)
				assert.InDelta(t, float64(exact), float64(got), SketchError*float64(exact)+0.5, "q=%v", q)
			}
			assert.Equal(t, uint64(len(vals)), s.Count())
			assert.Less(t, len(s.counts), 1500, "buckets")
		})
	}
	var empty Sketch
	assert.Zero(t, empty.Quantile(0.5))
}
