package tracer

import (
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCounterRefusesWhatViewersCannotDraw records counters with series
// that Perfetto cannot read (it fails the whole file on a string series or
// a counter with none) or reads as another value (a Uint64 above MaxInt64
// shows as -1), and checks what reaches the file, Stats.Refused and the
// error handler.
func TestCounterRefusesWhatViewersCannotDraw(t *testing.T) {
	for _, tt := range []struct {
		name    string
		series  []Arg
		want    map[string]any // the counter's args in the file; nil: no event
		refused uint64
		err     string
	}{
		{"numbers", []Arg{Int("a", -1), Uint64("b", 2), Float64("c", 0.5)}, map[string]any{"a": -1.0, "b": 2.0, "c": 0.5}, 0, ""},
		{"huge uint64 becomes a float", []Arg{Uint64("b", math.MaxUint64)}, map[string]any{"b": float64(math.MaxUint64)}, 0, ""},
		{"MaxInt64 stays an integer", []Arg{Uint64("b", math.MaxInt64)}, map[string]any{"b": float64(math.MaxInt64)}, 0, ""},
		{"string left out", []Arg{Int("a", 1), String("s", "x")}, map[string]any{"a": 1.0}, 1, `series "s" is a string`},
		{"bool left out", []Arg{Bool("ok", true), Int("a", 1)}, map[string]any{"a": 1.0}, 1, `series "ok" is a bool`},
		{"NaN left out", []Arg{Float64("f", math.NaN()), Int("a", 1)}, map[string]any{"a": 1.0}, 1, `series "f" is NaN`},
		{"infinity left out", []Arg{Float64("f", math.Inf(-1)), Int("a", 1)}, map[string]any{"a": 1.0}, 1, `series "f" is -Inf`},
		{"zero Arg ignored", []Arg{{}, Int("a", 1)}, map[string]any{"a": 1.0}, 0, ""},
		{"only the zero Arg", []Arg{{}}, nil, 1, "has no series to draw"},
		{"no series", nil, nil, 1, "has no series to draw"},
		{"only a category", []Arg{Category("c")}, nil, 1, "has no series to draw"},
		{"nothing drawable", []Arg{String("s", "x"), Bool("b", false)}, nil, 3, `series "s" is a string`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var errs []string
			tr, path := newTestTracer(t, WithErrorHandler(func(err error) {
				mu.Lock()
				errs = append(errs, err.Error())
				mu.Unlock()
			}))
			for range 3 {
				tr.Counter("c", tt.series...)
			}
			require.NoError(t, tr.Close())
			var got []event
			for _, e := range byPhase(readClosed(t, path), "C") {
				if e.Name == "c" {
					got = append(got, e)
				}
			}
			assert.Equal(t, 3*tt.refused, tr.Stats().Refused)
			if tt.want == nil {
				assert.Empty(t, got)
			} else {
				require.Len(t, got, 3)
				for _, e := range got {
					assert.Equal(t, tt.want, e.Args)
				}
			}
			if tt.err == "" {
				assert.Empty(t, errs)
				return
			}
			require.Len(t, errs, 1, "one report however often: %q", errs)
			assert.Contains(t, errs[0], tt.err)
			assert.True(t, strings.HasPrefix(errs[0], `tracer: Counter "c"`), errs[0])
		})
	}
}

// TestRefusedCounterAllocatesNothing: misuse in a loop costs no formatting
// after the first report.
func TestRefusedCounterAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	tr, _ := newTestTracer(t, WithErrorHandler(func(error) {}))
	tr.Counter("c", String("s", "x"))
	assert.Zero(t, allocsPerRun(1000, func() {
		tr.Counter("c", String("s", "x"), Int("a", 1))
		tr.Counter("c", Uint64("big", math.MaxUint64))
	}))
}
