package tracer

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNamesAndCategoriesOutliveTheDefault is issue 11 item 5: goroutine
// names and categories set before Start, or before a Stop and Start,
// reach every later file.
func TestNamesAndCategoriesOutliveTheDefault(t *testing.T) {
	require.Nil(t, Default())
	t.Cleanup(func() { noteCategories(nil) })
	dir := t.TempDir()
	SetGoroutineName("main before start")
	SetGoroutineSortIndex(-5)
	require.NoError(t, SetCategories("db"))
	named := make(chan uint64)
	go func() {
		SetGoroutineName("worker")
		named <- goroutineID()
	}()
	worker := <-named

	for i, name := range []string{"first.json", "second.json"} {
		path := filepath.Join(dir, name)
		require.NoError(t, Start(path))
		Span("recorded", Category("db"))()
		Span("filtered out", Category("http"))()
		require.NoError(t, Stop())

		evs := readClosed(t, path)
		names := map[uint64]string{}
		for _, e := range byName(evs, "thread_name") {
			names[e.Tid] = e.Args["name"].(string)
		}
		assert.Equal(t, "main before start", names[goroutineID()], "file %d", i)
		assert.Equal(t, "worker", names[worker], "file %d", i)
		sorts := byName(evs, "thread_sort_index")
		require.NotEmpty(t, sorts, "file %d", i)
		find(t, evs, "X", "recorded")
		assert.Empty(t, byName(evs, "filtered out"), "the categories set before Start apply, file %d", i)
	}

	// A tracer given WithCategories keeps its own choice.
	path := filepath.Join(dir, "own.json")
	require.NoError(t, Start(path, WithCategories("http")))
	Span("own choice", Category("http"))()
	require.NoError(t, Stop())
	find(t, readClosed(t, path), "X", "own choice")
}
