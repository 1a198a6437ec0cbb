// Package duckdb loads the tables of trace files (see docs/analysis.md)
// into an embedded DuckDB database and runs SQL over them: the library of
// the tracer-sql command, in a module of its own because DuckDB needs
// cgo, a C++ build and a large download that "tracer check" should not.
package duckdb
