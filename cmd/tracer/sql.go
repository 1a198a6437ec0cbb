package main

import "io"

// sqlTool runs SQL over traces in an embedded DuckDB: it needs cgo and
// github.com/duckdb/duckdb-go (a 570 MB download, a 72 MB binary), so
// its program is in the module cmd/tracer/duckdb.
var sqlTool = external{
	name:    "sql",
	command: "tracer-sql",
	install: "go -C cmd/tracer/duckdb install ./tracer-sql (in a checkout of github.com/gotracer/tracer; cgo: it needs a C++ compiler)",
	stdin:   true,
	what:    "runs SQL over traces with DuckDB",
}

// runSQL is "tracer sql": it runs tracer-sql.
func runSQL(args []string, stdout, stderr io.Writer) error {
	return sqlTool.run(args, stdout, stderr)
}
