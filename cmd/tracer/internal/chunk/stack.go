// Package chunk holds values in chunks that grow: a slice grown by
// append copies what it holds at each growth, into fresh memory, which
// for the large stacks and logs of the tracer command's readers cost
// more than the rest of their work (a third of cut's CPU on a track of
// B events nested 200,000 deep; ten times the time of chunks for stats'
// 225,000 events of a track it replays), while most of them, in files
// with thousands of tracks, hold a few values.
package chunk

import "math/bits"

// A Stack holds values in chunks of 1, then twice as many as the chunk
// before, up to 1024 a chunk. Its zero value is empty and ready.
type Stack[T any] struct {
	chunks [][]T
	n      int
}

// maxChunk is the most values in a chunk; the chunks before the first
// of that size hold 1, 2, 4 ... values, smallChunks of them.
const (
	maxChunk    = 1024
	smallChunks = 10 // 1<<smallChunks == maxChunk
	inSmall     = 1<<smallChunks - 1
)

// where returns the chunk and the place in it of the i-th value: the
// k-th of the small chunks holds values 2^k-1 to 2^(k+1)-2.
func where(i int) (k, j int) {
	if i < inSmall {
		k = bits.Len(uint(i+1)) - 1
		return k, i - (1<<k - 1)
	}
	i -= inSmall
	return smallChunks + i/maxChunk, i % maxChunk
}

// Len returns the number of values.
func (s *Stack[T]) Len() int { return s.n }

// At returns the i-th value, from the bottom.
func (s *Stack[T]) At(i int) *T {
	k, j := where(i)
	return &s.chunks[k][j]
}

// Push puts v on top.
func (s *Stack[T]) Push(v T) {
	k, j := where(s.n)
	if k == len(s.chunks) {
		s.chunks = append(s.chunks, make([]T, 1<<min(k, smallChunks)))
	}
	s.chunks[k][j] = v
	s.n++
}

// Each calls f with each value, from the bottom.
func (s *Stack[T]) Each(f func(*T)) {
	left := s.n
	for _, c := range s.chunks {
		c = c[:min(len(c), left)]
		for i := range c {
			f(&c[i])
		}
		left -= len(c)
	}
}

// Slice returns the values in one slice, from the bottom, and empties s.
func (s *Stack[T]) Slice() []T {
	out := make([]T, 0, s.n)
	s.Each(func(v *T) { out = append(out, *v) })
	*s = Stack[T]{}
	return out
}

// Remove takes out the i-th value, moving those above it down (the
// top, the usual case, moves none).
func (s *Stack[T]) Remove(i int) {
	for ; i < s.n-1; i++ {
		*s.At(i) = *s.At(i + 1)
	}
	s.n--
	var zero T
	*s.At(s.n) = zero // for the garbage collector
	if k, j := where(s.n); j == 0 && k == len(s.chunks)-1 && k > 0 {
		s.chunks = s.chunks[:k] // an empty top chunk
	}
}
