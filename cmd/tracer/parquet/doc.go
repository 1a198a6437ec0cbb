// Package parquet writes the tables of a trace (see docs/analysis.md) as
// Parquet files: the library of the tracer-export command, in a module
// of its own so that the tracer module keeps its dependencies.
package parquet
