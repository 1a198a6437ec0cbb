// Command tracer-sql runs SQL over trace files, in an embedded DuckDB
// database holding their tables (slice, thread, process, track,
// counter, flow: see docs/analysis.md). "tracer sql" runs it.
//
// Usage:
//
//	tracer-sql [-format table|csv|json] FILE... 'QUERY'
//
// The files are read as a stream, their clocks lined up as "tracer
// merge" does, and their rows appended to the tables before the query
// runs. With no file, the tables are empty and the query may read the
// Parquet files of "tracer export" with DuckDB's read_parquet.
//
// Install it with (cgo and a C++ compiler: the first build takes a
// minute)
//
//	go install github.com/gotracer/tracer/cmd/tracer/duckdb/tracer-sql@latest
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/gotracer/tracer/cmd/tracer/duckdb"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tracer sql", flag.ContinueOnError)
	fs.SetOutput(stderr)
	format := fs.String("format", duckdb.FormatTable, "the output `format`: table, csv or json")
	pending := fs.Int("max-pending", duckdb.DefaultMaxPending, "the most slices kept waiting for their enclosing slice (memory: about 250 bytes each; those written before it are nested again at the end)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: tracer sql [-format table|csv|json] [-max-pending N] FILE... 'QUERY'")
		fs.PrintDefaults()
	}
	if err := parseInterleaved(fs, args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	switch *format {
	case duckdb.FormatTable, duckdb.FormatCSV, duckdb.FormatJSON:
	default:
		fmt.Fprintf(stderr, "tracer sql: unknown format %q: table, csv or json\n", *format)
		return 2
	}
	if fs.NArg() == 0 {
		// No file is fine: DuckDB reads Parquet and CSV files itself.
		fmt.Fprintln(stderr, "tracer sql: want the trace files, then the query")
		return 2
	}
	files, query := fs.Args()[:fs.NArg()-1], fs.Arg(fs.NArg()-1)
	if err := sql(stdout, stderr, files, query, *format, *pending); err != nil {
		fmt.Fprintf(stderr, "tracer sql: %v\n", err)
		return 1
	}
	return 0
}

// parseInterleaved parses args, flags before or after the file names and
// the query (tracer sql FILE 'QUERY' -format csv), as the tracer command
// takes them; "--" ends the flags. The positional arguments are left in
// fs.Args(), in order.
func parseInterleaved(fs *flag.FlagSet, args []string) error {
	var pos, rest []string
	for i, a := range args {
		if a == "--" {
			args, rest = args[:i], args[i+1:]
			break
		}
	}
	for {
		if err := fs.Parse(args); err != nil {
			return err
		}
		args = fs.Args()
		i := 0
		for i < len(args) && (len(args[i]) < 2 || args[i][0] != '-') {
			i++
		}
		pos = append(pos, args[:i]...)
		if i == len(args) {
			break
		}
		args = args[i:]
	}
	return fs.Parse(append([]string{"--"}, append(pos, rest...)...))
}

func sql(stdout, stderr io.Writer, files []string, query, format string, maxPending int) error {
	db, err := duckdb.Open()
	if err != nil {
		return err
	}
	defer db.Close()
	db.MaxPending = maxPending
	rep, err := db.Load(files)
	if err != nil {
		return err
	}
	for _, m := range rep.Warnings() {
		fmt.Fprintf(stderr, "warning: %s\n", m)
	}
	return db.Query(stdout, query, format)
}
