package traceparent

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const example = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

func TestParse(t *testing.T) {
	tests := []struct {
		name, in, canonical string
		parent              uint64
	}{
		{name: "spec example", in: example, canonical: example, parent: 0x00f067aa0ba902b7},
		{name: "not sampled", in: strings.TrimSuffix(example, "01") + "00", canonical: strings.TrimSuffix(example, "01") + "00", parent: 0x00f067aa0ba902b7},
		{name: "later version, more fields", in: "01" + example[2:] + "-what-comes-next", canonical: "01" + example[2:], parent: 0x00f067aa0ba902b7},
		{name: "later version, same length", in: "cc" + example[2:], canonical: "cc" + example[2:], parent: 0x00f067aa0ba902b7},
		{name: "version 00 longer", in: example + "-x"},
		{name: "later version, no dash after", in: "01" + example[2:] + "x"},
		{name: "version ff", in: "ff" + example[2:]},
		{name: "uppercase", in: strings.ToUpper(example)},
		{name: "zero trace id", in: "00-00000000000000000000000000000000-00f067aa0ba902b7-01"},
		{name: "zero parent id", in: "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"},
		{name: "short", in: example[:54]},
		{name: "empty", in: ""},
		{name: "bad separator", in: strings.Replace(example, "-", "_", 1)},
		{name: "not hex", in: "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			canonical, parent, ok := Parse(tc.in)
			assert.Equal(t, tc.canonical != "", ok)
			assert.Equal(t, tc.canonical, canonical)
			assert.Equal(t, tc.parent, parent)
		})
	}
}

func TestNew(t *testing.T) {
	seen, traces := map[uint64]bool{}, map[string]bool{}
	for range 100 {
		v, parent := New()
		canonical, p, ok := Parse(v)
		require.True(t, ok, v)
		assert.Equal(t, v, canonical)
		assert.Equal(t, parent, p)
		assert.True(t, strings.HasSuffix(v, "-01"), "sampled: this process records it")
		assert.False(t, seen[parent])
		seen[parent] = true
		assert.False(t, traces[TraceID(v)], "a new trace each time")
		traces[TraceID(v)] = true
	}
	assert.Equal(t, "0xf067aa0ba902b7", BindID(0x00f067aa0ba902b7))
}

// FuzzParse checks that Parse never panics, and that what it accepts
// reads back the same from its canonical form.
func FuzzParse(f *testing.F) {
	f.Add(example)
	f.Add("01" + example[2:] + "-x")
	f.Add("")
	f.Fuzz(func(t *testing.T, v string) {
		canonical, parent, ok := Parse(v)
		if !ok {
			return
		}
		c2, p2, ok2 := Parse(canonical)
		require.True(t, ok2, "%q", v)
		assert.Equal(t, canonical, c2)
		assert.Equal(t, parent, p2)
		assert.Len(t, canonical, Len)
		assert.NotZero(t, parent)
	})
}

// TestChild checks the traceparent of a call made on behalf of a request:
// version 00, the same trace id and flags, a new parent id each call.
func TestChild(t *testing.T) {
	for _, in := range []string{
		example,
		strings.TrimSuffix(example, "01") + "00", // not sampled: passed on as it is
		strings.TrimSuffix(example, "01") + "03", // flags this version does not know: the same
		"cc" + example[2:],                       // a later version: written as 00
	} {
		seen := map[uint64]bool{}
		for range 50 {
			v, parent := Child(in)
			canonical, p, ok := Parse(v)
			require.True(t, ok, v)
			assert.Equal(t, v, canonical)
			assert.Equal(t, parent, p)
			assert.Equal(t, "00", v[:2])
			assert.Equal(t, TraceID(in), TraceID(v))
			assert.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", TraceID(v))
			assert.Equal(t, in[53:55], v[53:55], "flags as they were")
			assert.NotEqual(t, uint64(0x00f067aa0ba902b7), parent)
			assert.False(t, seen[parent], "a new parent id each call")
			seen[parent] = true
		}
	}
}

// BenchmarkNew and BenchmarkChild measure what a request served without
// and with a traceparent pays for its ids (crypto/rand, hex, the string).
func BenchmarkNew(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		New()
	}
}

func BenchmarkChild(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		Child(example)
	}
}
