package tracer

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// deferredWithoutCall returns the positions in the Go source src of
// `defer Span(...)` and `defer Begin(...)` whose result, the function that
// ends the span, is dropped: the span starts when the defer statement
// runs and never ends, a B to the end of the trace. The form meant is
// `defer Span(...)()`. Any receiver or package qualifier counts
// (tracer.Span, t.Span, tr.Begin).
func deferredWithoutCall(t *testing.T, name, src string) []string {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, 0)
	require.NoError(t, err)
	var found []string
	ast.Inspect(f, func(n ast.Node) bool {
		d, ok := n.(*ast.DeferStmt)
		if !ok {
			return true
		}
		var fn string
		switch x := d.Call.Fun.(type) {
		case *ast.Ident:
			fn = x.Name
		case *ast.SelectorExpr:
			fn = x.Sel.Name
		}
		if fn == "Span" || fn == "Begin" {
			found = append(found, fset.Position(d.Pos()).String())
		}
		return true
	})
	return found
}

func TestDeferredSpanCheck(t *testing.T) {
	for _, tt := range []struct {
		src  string
		want int
	}{
		{`package p; func f() { defer tracer.Span("x")() }`, 0},
		{`package p; func f() { defer tracer.Span("x") }`, 1},
		{`package p; func f(t *T) { defer t.Begin("x", a) }`, 1},
		{`package p; func f() { defer Span("x") }`, 1},
		{`package p; func f() { end := Span("x"); defer end() }`, 0},
		{`package p; func f(a Async) { defer a.End() }`, 0},
	} {
		assert.Len(t, deferredWithoutCall(t, "x.go", tt.src), tt.want, tt.src)
	}
}

// TestNoDeferredSpanWithoutCall runs the check over every Go file of the
// repository, examples and integrations included: `defer tracer.Span("x")`
// compiles, and leaves a span that never ends (issue 11 item 1).
func TestNoDeferredSpanWithoutCall(t *testing.T) {
	t.Parallel()
	files := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		files++
		src := readFile(t, path)
		assert.Empty(t, deferredWithoutCall(t, path, src), "defer Span(...) without the () that ends the span")
		return nil
	})
	require.NoError(t, err)
	assert.Greater(t, files, 100)
}
