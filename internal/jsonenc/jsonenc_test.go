package jsonenc

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestAppenders checks each appender against what it must write; the
// tracer's differential and fuzz tests check them through the encoder.
func TestAppenders(t *testing.T) {
	for _, tc := range []struct {
		got, want string
	}{
		{string(Micros(nil, 1234567)), "1234.567"},
		{string(Micros(nil, -5)), "-0.005"},
		{string(Micros(nil, 0)), "0.000"},
		{string(Uint(nil, math.MaxUint64)), "18446744073709551615"},
		{string(Int(nil, math.MinInt64)), "-9223372036854775808"},
		{string(Float(nil, math.NaN())), `"NaN"`},
		{string(Float(nil, 0.5)), "0.5"},
		{string(Duration(nil, 1500*time.Microsecond)), `"1.5ms"`},
		{string(String(nil, "a\"\\\n\x00\xff")), `"a\"\\\n\u0000\ufffd"`},
	} {
		assert.Equal(t, tc.want, tc.got)
	}
	long := String(nil, strings.Repeat("é", MaxStringLen))
	var s string
	assert.NoError(t, json.Unmarshal(long, &s))
	assert.Contains(t, s, "…[truncated ")
}

// TestTimestamps checks Timestamps against Micros on runs of nearby times,
// across millisecond and digit-count boundaries, and on times that jump
// back and forth.
func TestTimestamps(t *testing.T) {
	var ts Timestamps
	check := func(ns int64) {
		t.Helper()
		if got, want := string(ts.Append([]byte("x"), ns)), "x"+string(Micros(nil, ns)); got != want {
			t.Fatalf("Append(%d) = %q, want %q", ns, got, want)
		}
	}
	for _, start := range []int64{-2000, 0, 999_000, 9_999_000, 99_999_999_000, math.MaxInt64 - 5e6} {
		for ns := start; ns < start+3e6 && ns >= start; ns += 977 {
			check(ns)
		}
	}
	for _, ns := range []int64{5e9, 1e6, 5e9 + 1, 999_999, 1e6 - 1, 1e6, 1_000_000_000_000, 7} {
		check(ns)
	}
}

// FuzzTimestamps checks Timestamps against Micros on any two times in a
// row.
func FuzzTimestamps(f *testing.F) {
	f.Add(int64(1_234_567), int64(1_234_999))
	f.Add(int64(999_999), int64(1_000_000))
	f.Fuzz(func(t *testing.T, a, b int64) {
		if a == math.MinInt64 || b == math.MinInt64 {
			return // not a time the tracer can take
		}
		var ts Timestamps
		for _, ns := range []int64{a, b, a} {
			if got, want := string(ts.Append(nil, ns)), string(Micros(nil, ns)); got != want {
				t.Fatalf("Append(%d) = %q, want %q", ns, got, want)
			}
		}
	})
}

// TestShort checks that a Short holds what fits, refuses what does not,
// and writes exactly what it holds.
func TestShort(t *testing.T) {
	var s Short
	assert.True(t, s.Set([]byte(`"key":`)))
	assert.False(t, s.Set([]byte(strings.Repeat("x", ShortMax+1))), "longer than ShortMax")
	assert.Equal(t, `"key":`, string(s.Append(nil)), "unchanged by a Set that does not fit")
	assert.True(t, s.Set([]byte(strings.Repeat("y", ShortMax))))
	assert.Equal(t, "a"+strings.Repeat("y", ShortMax), string(s.Append([]byte("a"))))
	b := make([]byte, 1+ShortMax)
	assert.Equal(t, 1+ShortMax, s.Put(b, 1))
	assert.Panics(t, func() { s.Put(b, 2) }, "less than ShortMax bytes of room")
}

// TestTimestampsPut checks that Put writes only a time in the millisecond
// of the last one Append wrote, and writes it as Append does.
func TestTimestampsPut(t *testing.T) {
	var ts Timestamps
	b := make([]byte, ShortMax+7)
	_, ok := ts.Put(b, 0, 5_000_123)
	assert.False(t, ok, "nothing written yet")
	ts.Append(nil, 5_000_000)
	n, ok := ts.Put(b, 0, 5_999_999)
	assert.True(t, ok)
	assert.Equal(t, string(Micros(nil, 5_999_999)), string(b[:n]))
	for _, ns := range []int64{6_000_000, 4_999_999, 999_999, -1} {
		_, ok := ts.Put(b, 0, ns)
		assert.False(t, ok, "%d: outside the millisecond", ns)
	}
}
