// Package doccode checks that the Go code blocks of the repository's
// documentation compile, so that what a reader copies works. Its test
// reads every ```go block of README.md and docs/*.md, makes each one a
// package of a throwaway module whose go.mod replaces this repository's
// modules (the tracer, goruntime, traceotel, tracehttp/routers) by the
// checkout, and runs go vet over them all at once. A problem is reported
// at its line in the Markdown file, through //line directives.
//
// A block is one of three kinds, told from its text:
//
//   - A file: its first line of code is a package clause. It is compiled
//     as it is.
//   - Declarations: with a package clause put before it, it parses as a
//     file (imports, funcs, types, vars). It is compiled in a package of
//     its own.
//   - Statements: anything else. It is compiled as the body of a function
//     without parameters or results; the variables it declares at its top
//     level count as used, since the reader's code goes on after it.
//
// Imports: a block that has an import declaration lists all of its
// imports, and none is added (a reader who copies it gets exactly those).
// A block without one is compiled with the imports its package names ask
// for (tracer, tracetest, http, slog, require, chi...: see [imports]), as
// if it sat in a file whose imports are right.
//
// What a fragment takes from around it (a mux, a channel of jobs, a
// function it calls) is declared in an HTML comment right before the
// block, which Markdown does not show. The comment's text after
// "doccode" is Go declarations, put in the block's package:
//
//	<!-- doccode
//	var mux = http.NewServeMux()
//	func process(j job) {}
//	-->
//
// A block that is deliberately not Go that compiles (a signature, output
// with elisions) says so, with the reason:
//
//	<!-- doccode: skip the grammar of a call, not code -->
//
// Blocks fenced as anything other than go (sh, json, text) are not read.
package doccode
