package main

import "io"

// exportTool writes the tables of traces as Parquet: it needs
// github.com/parquet-go/parquet-go, so its program is in the module
// cmd/tracer/parquet.
var exportTool = external{
	name:    "export",
	command: "tracer-export",
	install: "go -C cmd/tracer/parquet install ./tracer-export (in a checkout of github.com/gotracer/tracer)",
	stdin:   true,
	what:    "writes traces as Parquet tables",
}

// runExport is "tracer export": it runs tracer-export.
func runExport(args []string, stdout, stderr io.Writer) error {
	return exportTool.run(args, stdout, stderr)
}
