package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGoTestWithTracerFile is the workflow docs/guarantees.md gives for
// tracing a module's tests: TRACER_FILE='trace-{pid}.json' go test ./...
// runs one test binary per package, each writing a file of its own (none
// writes into another's), and tracer merge joins them into one trace with
// a process per package.
func TestGoTestWithTracerFile(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs go test on a module of two packages")
	}
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	mod := t.TempDir()
	write := func(name, text string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(mod, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(mod, name), []byte(text), 0o644))
	}
	goMod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	require.NoError(t, err)
	requires := goMod[strings.Index(string(goMod), "require"):]
	write("go.mod", "module example.com/two\n\ngo 1.24\n\nrequire github.com/gotracer/tracer v0.0.0\n\nreplace github.com/gotracer/tracer => "+root+"\n\n"+string(requires))
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	require.NoError(t, err)
	write("go.sum", string(sum))
	for _, pkg := range []string{"alpha", "beta"} {
		write(pkg+"/"+pkg+"_test.go", `package `+pkg+`

import (
	"testing"

	"github.com/gotracer/tracer"
)

func TestWork(t *testing.T) {
	t.Parallel()
	defer tracer.Stop()
	for range 10 {
		tracer.Span("`+pkg+` work")()
	}
}
`)
	}
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "test", "-count=1", "./...")
	cmd.Dir = mod
	cmd.Env = append(os.Environ(), "TRACER_FILE="+filepath.Join(mod, "trace-{pid}.json"), "GOFLAGS=-mod=mod")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.NotContains(t, string(out), "is being written by another process", "each binary has its own file")

	files, err := filepath.Glob(filepath.Join(mod, "trace-*.json"))
	require.NoError(t, err)
	require.Len(t, files, 2, "one file per test binary")
	for _, f := range files {
		strictEvents(t, f)
	}
	merged := filepath.Join(mod, "all.json")
	code, _, stderr := runCmd(append([]string{"merge", "-o", merged}, files...)...)
	require.Equal(t, 0, code, stderr)
	evs := strictEvents(t, merged)
	pids := map[any]bool{}
	for _, pkg := range []string{"alpha", "beta"} {
		n := 0
		for _, e := range evs {
			if e["name"] == pkg+" work" {
				n++
				pids[e["pid"]] = true
			}
		}
		assert.Equal(t, 10, n, pkg)
	}
	assert.Len(t, pids, 2, "a process per test binary")
}
