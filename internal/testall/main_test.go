package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestModules(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{
		"go.mod", "a.go",
		"zeta/go.mod", "zeta/cmd/x/go.mod",
		"alpha/go.mod", "alpha/pkg/p.go",
		"plain/p.go",
		"testdata/go.mod", "alpha/testdata/m/go.mod",
		".git/go.mod", "_old/go.mod",
	} {
		path := filepath.Join(root, filepath.FromSlash(f))
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, nil, 0o644))
	}
	mods, err := modules(root)
	require.NoError(t, err)
	assert.Equal(t, []string{".", "alpha", "zeta", "zeta/cmd/x"}, mods)
}

// TestRepoModules checks that this repository's nested modules are found:
// the reason the command exists.
func TestRepoModules(t *testing.T) {
	root, err := repoRoot()
	require.NoError(t, err)
	mods, err := modules(root)
	require.NoError(t, err)
	assert.Subset(t, mods, []string{".", "benchmarks", "examples/goruntime", "goruntime", "traceotel", "tracervet"})
}
