// Package tracervet is a go vet analyzer for code that uses
// github.com/gotracer/tracer. It reports
//
//	defer tracer.Span("decode")
//
// which compiles, but starts the span when the function returns and never
// ends it: the function Span returns, the one that ends the span, is
// dropped. The form meant is defer tracer.Span("decode")(). LongSpan, and the
// methods of *tracer.Tracer and *tracer.FlightRecorder, are checked too.
//
// Run it with go vet:
//
//	go install github.com/gotracer/tracer/tracervet/cmd/tracervet@latest
//	go vet -vettool=$(which tracervet) ./...
//
// It lives in a module of its own so that the tracer's users do not
// download golang.org/x/tools.
package tracervet

import (
	"go/ast"
	"go/types"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/passes/inspect"
	"golang.org/x/tools/go/ast/inspector"
)

// tracerPath is the import path of the package whose calls are checked.
const tracerPath = "github.com/gotracer/tracer"

// Analyzer reports deferred calls of Span and LongSpan whose result, the
// function that ends the span, is dropped.
var Analyzer = &analysis.Analyzer{
	Name:     "tracerdefer",
	Doc:      "report defer tracer.Span(...) without the final () that ends the span",
	URL:      "https://pkg.go.dev/github.com/gotracer/tracer/tracervet",
	Requires: []*analysis.Analyzer{inspect.Analyzer},
	Run:      run,
}

func run(pass *analysis.Pass) (any, error) {
	ins := pass.ResultOf[inspect.Analyzer].(*inspector.Inspector)
	ins.Preorder([]ast.Node{(*ast.DeferStmt)(nil)}, func(n ast.Node) {
		d := n.(*ast.DeferStmt)
		fn, ok := typeutilCallee(pass.TypesInfo, d.Call).(*types.Func)
		if !ok || fn.Pkg() == nil || fn.Pkg().Path() != tracerPath {
			return
		}
		if name := fn.Name(); name == "Span" || name == "LongSpan" {
			pass.Report(analysis.Diagnostic{
				Pos:     d.Pos(),
				End:     d.End(),
				Message: "defer tracer." + name + "(...) starts the span when the function returns and never ends it: write defer tracer." + name + "(...)()",
				SuggestedFixes: []analysis.SuggestedFix{{
					Message:   "call the function that ends the span",
					TextEdits: []analysis.TextEdit{{Pos: d.Call.End(), End: d.Call.End(), NewText: []byte("()")}},
				}},
			})
		}
	})
	return nil, nil
}

// typeutilCallee returns the function or method a call calls, if static.
func typeutilCallee(info *types.Info, call *ast.CallExpr) types.Object {
	switch fun := ast.Unparen(call.Fun).(type) {
	case *ast.Ident:
		return info.Uses[fun]
	case *ast.SelectorExpr:
		if sel, ok := info.Selections[fun]; ok {
			return sel.Obj()
		}
		return info.Uses[fun.Sel]
	}
	return nil
}
