package tracer

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEnabled(t *testing.T) {
	var nilTracer *Tracer
	assert.False(t, nilTracer.Enabled())
	assert.False(t, nilTracer.CategoryEnabled(Category("db")))

	sql, http := Category("sql"), Category("http")
	tr, _ := newTestTracer(t, WithCategories("sql"))
	for _, tt := range []struct {
		name string
		arg  Arg
		want bool
	}{
		{"enabled category", sql, true},
		{"disabled category", http, false},
		{"not a category", Int("n", 1), true},
		{"zero Arg", Arg{}, true},
	} {
		assert.Equal(t, tt.want, tr.CategoryEnabled(tt.arg), tt.name)
	}
	assert.True(t, tr.Enabled())
	require.NoError(t, tr.SetCategories())
	assert.True(t, tr.CategoryEnabled(http), "all categories once the filter is off")
	require.NoError(t, tr.Close())
	assert.False(t, tr.Enabled(), "closed")
	assert.False(t, tr.CategoryEnabled(sql))

	require.Nil(t, Default())
	assert.False(t, Enabled())
	assert.False(t, CategoryEnabled(sql))
	require.NoError(t, Start(filepath.Join(t.TempDir(), "t.json")))
	assert.True(t, Enabled())
	assert.True(t, CategoryEnabled(sql))
	require.NoError(t, Stop())
	assert.False(t, Enabled())
}

func TestEnabledAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	c := Category("x")
	assert.Zero(t, allocsPerRun(100, func() { _ = Enabled() && CategoryEnabled(c) }))
}

func ExampleEnabled() {
	// Tracing is off: the expensive name is never built.
	if Enabled() {
		Instant("built only when tracing: " + expensiveDescription())
	}
	// Output:
}

func expensiveDescription() string { return "..." }
