// Package tracervet is a go vet analyzer for code that uses
// github.com/gotracer/tracer. It reports the calls of Span whose result,
// the function that ends the span, is dropped, so that the span never
// ends:
//
//	defer tracer.Span("decode") // starts the span when the function returns
//	tracer.Span("decode")       // starts it now, and nothing can end it
//
// The forms meant are defer tracer.Span("decode")() and, to end it
// elsewhere, end := tracer.Span("decode"). LongSpan, and the methods of
// *tracer.Tracer and *tracer.FlightRecorder, are checked too.
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

// Analyzer reports deferred calls of Span and LongSpan, and calls of them
// as statements, whose result, the function that ends the span, is
// dropped.
var Analyzer = &analysis.Analyzer{
	Name:     "tracerdefer",
	Doc:      "report defer tracer.Span(...) without the final () that ends the span, and tracer.Span(...) as a statement",
	URL:      "https://pkg.go.dev/github.com/gotracer/tracer/tracervet",
	Requires: []*analysis.Analyzer{inspect.Analyzer},
	Run:      run,
}

func run(pass *analysis.Pass) (any, error) {
	ins := pass.ResultOf[inspect.Analyzer].(*inspector.Inspector)
	ins.Preorder([]ast.Node{(*ast.DeferStmt)(nil), (*ast.ExprStmt)(nil)}, func(n ast.Node) {
		switch n := n.(type) {
		case *ast.DeferStmt:
			name := spanCall(pass.TypesInfo, n.Call)
			if name == "" {
				return
			}
			pass.Report(analysis.Diagnostic{
				Pos:     n.Pos(),
				End:     n.End(),
				Message: "defer tracer." + name + "(...) starts the span when the function returns and never ends it: write defer tracer." + name + "(...)()",
				SuggestedFixes: []analysis.SuggestedFix{{
					Message:   "call the function that ends the span",
					TextEdits: []analysis.TextEdit{{Pos: n.Call.End(), End: n.Call.End(), NewText: []byte("()")}},
				}},
			})
		case *ast.ExprStmt:
			call, ok := ast.Unparen(n.X).(*ast.CallExpr)
			if !ok {
				return
			}
			name := spanCall(pass.TypesInfo, call)
			if name == "" {
				return
			}
			// No suggested fix: whether the span was meant to last to the
			// function's return (defer ...()) or to end further on (end :=
			// ...) is the author's to say.
			pass.Report(analysis.Diagnostic{
				Pos:     n.Pos(),
				End:     n.End(),
				Message: "tracer." + name + "(...) drops the function that ends the span, which never ends: write defer tracer." + name + "(...)(), or end := tracer." + name + "(...) and call end()",
			})
		}
	})
	return nil, nil
}

// spanCall returns "Span" or "LongSpan" if call calls that function or
// method of the tracer package, "" otherwise.
func spanCall(info *types.Info, call *ast.CallExpr) string {
	fn, ok := typeutilCallee(info, call).(*types.Func)
	if !ok || fn.Pkg() == nil || fn.Pkg().Path() != tracerPath {
		return ""
	}
	if name := fn.Name(); name == "Span" || name == "LongSpan" {
		return name
	}
	return ""
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
