//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package filelock

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHeld takes the lock through one open file, as a tracer does, and
// checks that Held and Lock see it through another, and not once it is
// closed.
func TestHeld(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.json")
	w, err := os.Create(path)
	require.NoError(t, err)
	require.NoError(t, Lock(w))

	held, err := Held(path)
	require.NoError(t, err)
	assert.True(t, held)
	r, err := os.Open(path)
	require.NoError(t, err)
	assert.ErrorIs(t, Lock(r), ErrHeld)
	require.NoError(t, r.Close())

	require.NoError(t, w.Close())
	held, err = Held(path)
	require.NoError(t, err)
	assert.False(t, held, "closing the file releases the lock")

	held, err = Held(filepath.Join(t.TempDir(), "missing.json"))
	require.NoError(t, err)
	assert.False(t, held)
	held, err = Held(t.TempDir())
	require.NoError(t, err)
	assert.False(t, held, "a directory is not a trace a tracer writes")
}
