package tracetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMicros(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		err  bool
	}{
		{in: "", want: 0},
		{in: "0.000", want: 0},
		{in: "1523.042", want: 1523042 * time.Nanosecond},
		{in: "7", want: 7 * time.Microsecond},
		{in: "7.5", want: 7500 * time.Nanosecond},
		{in: "9223372036.854", want: 9223372036854 * time.Nanosecond},
		{in: "1.2345", err: true},
		{in: "1e3", err: true},
		{in: "1.x", err: true},
	}
	for _, tc := range tests {
		got, err := micros(json.Number(tc.in))
		if tc.err {
			assert.Error(t, err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
	}
}

const sample = `[
{"name":"process_name","ph":"M","pid":1,"tid":0,"args":{"name":"p","ts0_unix_ns":1000000000}},
{"name":"thread_name","ph":"M","pid":1,"tid":7,"args":{"name":"main"}},
{"name":"inner","ph":"X","ts":2.000,"dur":1.000,"pid":1,"tid":7,"args":{"f":2.5}},
{"name":"outer","cat":"db","ph":"B","ts":1.000,"pid":1,"tid":7,"args":{"n":5}},
{"name":"outer","cat":"db","ph":"E","ts":10.000,"pid":1,"tid":7,"args":{"ok":true}},
{"name":"other","ph":"X","ts":3.000,"dur":0.500,"pid":1,"tid":8},
`

func TestParseSpans(t *testing.T) {
	spans, err := parseSpans([]byte(sample), 0)
	require.NoError(t, err)
	require.Len(t, spans, 3)
	outer, inner, other := spans[0], spans[1], spans[2]
	assert.Equal(t, "outer", outer.Name)
	assert.Equal(t, time.Unix(1, 1000), outer.Start)
	assert.Equal(t, 9*time.Microsecond, outer.Duration)
	assert.Equal(t, map[string]any{"n": int64(5), "ok": true}, outer.Args)
	assert.Equal(t, "main", outer.GoroutineName)
	require.NotNil(t, inner.Parent)
	assert.Equal(t, "outer", inner.Parent.Name)
	assert.Equal(t, map[string]any{"f": 2.5}, inner.Args)
	assert.Nil(t, other.Parent, "another goroutine")
	assert.Equal(t, uint64(8), other.Goroutine)

	// From the offset of the E line on, the B is outside the window: the
	// E alone is no span, and the metadata before still counts.
	idx := len(sample) - len(`{"name":"outer","cat":"db","ph":"E","ts":10.000,"pid":1,"tid":7,"args":{"ok":true}},
{"name":"other","ph":"X","ts":3.000,"dur":0.500,"pid":1,"tid":8},
`)
	spans, err = parseSpans([]byte(sample), idx)
	require.NoError(t, err)
	require.Len(t, spans, 1)
	assert.Equal(t, "other", spans[0].Name)
	assert.Equal(t, time.Unix(1, 3000), spans[0].Start)
}

// FuzzParseSpans checks that no input makes the parser panic, and that
// whatever it returns nests: a parent encloses its child on its goroutine.
func FuzzParseSpans(f *testing.F) {
	f.Add([]byte(sample), 0)
	f.Add([]byte(sample), 40)
	f.Add([]byte("[\n{\"ph\":\"E\",\"tid\":1},\n"), 0)
	f.Fuzz(func(t *testing.T, data []byte, offset int) {
		spans, err := parseSpans(data, offset)
		if err != nil {
			return
		}
		for _, s := range spans {
			if p := s.Parent; p != nil {
				assert.Equal(t, p.Goroutine, s.Goroutine)
				assert.False(t, s.Start.Before(p.Start))
			}
		}
	})
}
