package trace

import "math"

// SketchError is the relative error of the quantiles a Sketch returns:
// quantile q of n values is reported as a value within SketchError*v of
// v (plus half a nanosecond, as it is rounded to a whole one), v the
// exact quantile by the nearest-rank method (the value at rank
// ceil(q*n), from 1, in sorted order).
const SketchError = 0.01

// sketchGamma is the ratio of consecutive bucket bounds: a value in
// (gamma^(i-1), gamma^i] is counted in bucket i and reported as
// 2*gamma^i/(gamma+1), which is within SketchError of every value in the
// bucket (the DDSketch construction, Masson et al., VLDB 2019).
var (
	sketchGamma    = (1 + SketchError) / (1 - SketchError)
	sketchLogGamma = math.Log(sketchGamma)
)

// A Sketch summarises a stream of non-negative durations in nanoseconds
// so that any quantile can be had with relative error SketchError. It
// keeps one counter per bucket between the smallest and the largest
// value seen: about 1,400 buckets cover 1 ns to 1,000 s, so a Sketch never
// holds more than about 11 KiB, whatever the number of values.
type Sketch struct {
	zero     uint64   // values of 0 (and below, which durations are not)
	counts   []uint64 // counts[i] is bucket offset+i
	offset   int
	n        uint64
	min, max int64
}

// Add adds a value.
func (s *Sketch) Add(v int64) {
	if s.n == 0 || v < s.min {
		s.min = v
	}
	if s.n == 0 || v > s.max {
		s.max = v
	}
	s.n++
	if v <= 0 {
		s.zero++
		return
	}
	i := int(math.Ceil(math.Log(float64(v)) / sketchLogGamma))
	switch {
	case len(s.counts) == 0:
		s.counts = make([]uint64, 1, 16)
		s.offset = i
	case i < s.offset:
		grow := s.offset - i
		s.counts = append(make([]uint64, grow, grow+len(s.counts)), s.counts...)
		s.offset = i
	case i >= s.offset+len(s.counts):
		s.counts = append(s.counts, make([]uint64, i-s.offset-len(s.counts)+1)...)
	}
	s.counts[i-s.offset]++
}

// Count returns the number of values added.
func (s *Sketch) Count() uint64 { return s.n }

// Quantile returns the value at quantile q in [0, 1], within SketchError
// of the exact one, and exactly the smallest and largest values for q 0
// and 1. It returns 0 for an empty Sketch.
func (s *Sketch) Quantile(q float64) int64 {
	if s.n == 0 {
		return 0
	}
	if q <= 0 {
		return s.min
	}
	if q >= 1 {
		return s.max
	}
	rank := uint64(max(math.Ceil(q*float64(s.n)), 1)) - 1 // from 0
	if rank < s.zero {
		return min(0, s.max)
	}
	seen := s.zero
	for i, c := range s.counts {
		seen += c
		if seen > rank {
			v := int64(math.Round(2 * math.Pow(sketchGamma, float64(s.offset+i)) / (sketchGamma + 1)))
			return max(s.min, min(v, s.max))
		}
	}
	return s.max
}

// Merge adds the values of o to s.
func (s *Sketch) Merge(o *Sketch) {
	if o.n == 0 {
		return
	}
	if s.n == 0 || o.min < s.min {
		s.min = o.min
	}
	if s.n == 0 || o.max > s.max {
		s.max = o.max
	}
	s.n += o.n
	s.zero += o.zero
	if len(o.counts) == 0 {
		return
	}
	if len(s.counts) == 0 {
		s.counts = append([]uint64(nil), o.counts...)
		s.offset = o.offset
		return
	}
	lo := min(s.offset, o.offset)
	hi := max(s.offset+len(s.counts), o.offset+len(o.counts))
	if lo < s.offset || hi > s.offset+len(s.counts) {
		c := make([]uint64, hi-lo)
		copy(c[s.offset-lo:], s.counts)
		s.counts, s.offset = c, lo
	}
	for i, c := range o.counts {
		s.counts[o.offset-s.offset+i] += c
	}
}
