// Command tracer-export writes the tables of trace files (slice, thread,
// process, track, counter, flow: see docs/analysis.md) as Parquet files,
// for DuckDB, Spark or pandas. "tracer export" runs it.
//
// Usage:
//
//	tracer-export -format parquet -o DIR FILE...
//
// It reads each file once, in bounded memory, and lines up the clocks of
// the processes on their wall-clock anchors, as "tracer merge" does.
//
// Install it with
//
//	go install github.com/gotracer/tracer/cmd/tracer/parquet/tracer-export@latest
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/gotracer/tracer/cmd/tracer/internal/tables"
	"github.com/gotracer/tracer/cmd/tracer/parquet"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("tracer export", flag.ContinueOnError)
	fs.SetOutput(stderr)
	format := fs.String("format", "parquet", "the output `format`: parquet")
	out := fs.String("o", "", "write the tables to the directory `DIR` (created; it must not hold tables already)")
	pending := fs.Int("max-pending", tables.DefaultMaxPending, "the most slices kept waiting for their enclosing slice (memory: about 250 bytes each)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: tracer export -format parquet -o DIR FILE...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	switch {
	case *format != "parquet":
		fmt.Fprintf(stderr, "tracer export: unknown format %q (parquet is the one)\n", *format)
		return 2
	case *out == "":
		fmt.Fprintln(stderr, "tracer export: -o DIR is required")
		return 2
	case fs.NArg() == 0:
		fmt.Fprintln(stderr, "tracer export: no file to export")
		return 2
	}
	rep, err := parquet.Export(*out, fs.Args(), *pending)
	if err != nil {
		fmt.Fprintf(stderr, "tracer export: %v\n", err)
		return 1
	}
	fmt.Fprintf(stderr, "exported %d events of %d files to %s: %d slices\n", rep.Events, fs.NArg(), *out, rep.Slices)
	warn(stderr, rep)
	return 0
}

// warn says what the export could not place exactly.
func warn(w io.Writer, rep tables.Report) {
	for _, m := range rep.Warnings() {
		fmt.Fprintf(w, "warning: %s\n", m)
	}
}
