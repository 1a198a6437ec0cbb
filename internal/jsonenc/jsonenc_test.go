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
