package trace

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gotracer/tracer/internal/tracefile"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGroupNames checks that names that differ only in digits are
// counted as one past groupAfter names, with the numbers of all of them,
// and that a B still open keeps its own name.
func TestGroupNames(t *testing.T) {
	const n = groupAfter + 500
	var b strings.Builder
	b.WriteString("[\n" + `{"name":"request 7","ph":"B","ts":0,"pid":1,"tid":2},` + "\n")
	var total int64
	for i := range n {
		// Each request [10i, 10i+d) holds a "db 3" child of 1 us.
		d := 2 + i%7
		total += int64(d) * 1000
		b.WriteString(x("db "+itoa(i%5), 10*i+1, 1))
		b.WriteString(x("request "+itoa(i), 10*i, d))
	}
	a, problems := analyze(t, b.String())
	require.Empty(t, problems)
	got := names(a)
	require.Len(t, got, 2, "request <n> and db <n>")
	r := got["request <n>"]
	assert.Equal(t, int64(n), r.Count)
	assert.Equal(t, total, r.Total)
	assert.Equal(t, total-n*1000, r.Self)
	assert.Equal(t, int64(8000), r.Max)
	assert.Equal(t, uint64(n), r.Durations.Count())
	assert.Equal(t, int64(8000), r.Durations.Quantile(1))
	assert.Equal(t, int64(n), got["db <n>"].Count)
	assert.Equal(t, int64(n*1000), got["db <n>"].Self)
	assert.Contains(t, a.Note(), `"request <n>"`)
	open := a.Open()
	require.Len(t, open, 1)
	assert.Equal(t, "request 7", open[0].Name, "the E that closes it must name it")

	small, _ := analyze(t, "[\n"+x("request 1", 0, 1)+x("request 2", 2, 1))
	assert.Len(t, small.Names, 2, "a few names are kept apart")
	assert.Empty(t, small.Note())
}

// TestMaxNames checks that names that no digit groups stop at maxNames
// groups, the rest counted in one.
func TestMaxNames(t *testing.T) {
	a := NewAnalyzer()
	const n = maxNames + 10
	letters := func(i int) []byte { // a name without digits
		b := []byte("x")
		for ; i > 0; i /= 26 {
			b = append(b, byte('a'+i%26))
		}
		return b
	}
	for i := range n {
		a.Add(&tracefile.Event{Ph: []byte("X"), Name: tracefile.Str{Raw: letters(i), Set: true},
			TS: int64(i) * 10, HasTS: true, Dur: 1, HasDur: true, Pid: tracefile.Num{Kind: tracefile.NumInt, Int: 1}, Tid: tracefile.Num{Kind: tracefile.NumInt, Int: 1}})
	}
	assert.LessOrEqual(t, len(a.Names), maxNames+1)
	var count int64
	for _, s := range a.Names {
		count += s.Count
	}
	assert.Equal(t, int64(n), count, "every span counted")
	assert.Contains(t, a.Note(), otherNames)
}

// TestSketchMerge checks that a merged sketch answers as one that saw
// every value.
func TestSketchMerge(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var all, a, b Sketch
	for i := range 10000 {
		v := int64(rng.ExpFloat64() * 1e6)
		if i%3 == 0 {
			v = int64(rng.IntN(100)) // another range, to grow both ways
		}
		all.Add(v)
		if i%2 == 0 {
			a.Add(v)
		} else {
			b.Add(v)
		}
	}
	var m Sketch
	m.Merge(&a)
	m.Merge(&b)
	m.Merge(&Sketch{})
	for _, q := range []float64{0, 0.01, 0.5, 0.9, 0.99, 1} {
		assert.Equal(t, all.Quantile(q), m.Quantile(q), "q %v", q)
	}
	assert.Equal(t, all.Count(), m.Count())
}
