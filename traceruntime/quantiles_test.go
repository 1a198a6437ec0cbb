package traceruntime

import (
	"io"
	"math"
	"testing"

	"github.com/gotracer/tracer"
	"github.com/stretchr/testify/assert"
)

func TestQuantiles(t *testing.T) {
	inf := math.Inf(1)
	tests := []struct {
		name           string
		counts         []uint64
		buckets        []float64
		p50, p99, most float64
	}{
		{"empty", []uint64{0, 0}, []float64{0, 1e-6, 2e-6}, 0, 0, 0},
		{"one bucket", []uint64{0, 5, 0}, []float64{0, 1e-6, 2e-6, 3e-6}, 2, 2, 2},
		{"spread", []uint64{50, 49, 1}, []float64{-inf, 1e-6, 1e-3, 1}, 1, 1000, 1e6},
		{"unbounded last bucket", []uint64{1, 1}, []float64{0, 1e-6, inf}, 1, 1, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p50, p99, most := quantiles(delta{tc.counts, tc.buckets})
			assert.Equal(t, []float64{tc.p50, tc.p99, tc.most}, []float64{p50, p99, most})
		})
	}
}

// BenchmarkSample times one sample: reading the metrics and recording six
// counters.
func BenchmarkSample(b *testing.B) {
	tr, err := tracer.NewWithWriter(io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	defer tr.Close()
	s := newSampler()
	b.ReportAllocs()
	for b.Loop() {
		s.sample(tr)
	}
}
