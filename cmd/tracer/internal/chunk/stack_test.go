package chunk

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStack checks a stack against a slice, through random pushes and
// removals (mostly of the top, at times of one below it), across the
// sizes of its chunks.
func TestStack(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 5))
	var s Stack[int]
	var want []int
	for step := range 40_000 {
		switch {
		case len(want) == 0 || r.IntN(100) < 55+30*(step/10_000%2):
			s.Push(step)
			want = append(want, step)
		default:
			i := len(want) - 1
			if r.IntN(8) == 0 {
				i = r.IntN(len(want))
			}
			s.Remove(i)
			want = append(want[:i], want[i+1:]...)
		}
		require.Equal(t, len(want), s.Len())
		if s.Len() > 0 {
			k, _ := where(s.Len() - 1)
			require.Len(t, s.chunks, k+1, "no chunk above the top's")
		}
		if step%997 == 0 || len(want) < 20 {
			for i, v := range want {
				require.Equal(t, v, *s.At(i), "step %d, value %d", step, i)
			}
		}
	}
	require.Greater(t, len(s.chunks), smallChunks, "past the small chunks")
	for k, c := range s.chunks {
		require.Len(t, c, min(1<<k, maxChunk), "chunk %d", k)
	}
	var each []int
	s.Each(func(v *int) { each = append(each, *v) })
	require.Equal(t, want, each)
	require.Equal(t, want, s.Slice())
	require.Zero(t, s.Len())
}
