// Command tracer checks, repairs, merges and summarises Chrome Trace Event
// Format files: the JSON files the tracer package writes, and those of any
// other producer (one event per line, the whole array on one line, or the
// {"traceEvents":[...]} object form; plain or gzip).
//
// Usage:
//
//	tracer check [-q] FILE...
//	tracer repair [-o OUT | -i] [-close-open] [-q] FILE
//	tracer merge -o OUT [-offset FILE=DURATION]... [-f] [-q] FILE...
//	tracer stats [-top N] [-sort KEY] [-json] [-q] FILE
//	tracer cut [-from D] [-to D] [-pid N] [-tid N] [-name NAME] [-cat CAT] -o OUT [-q] FILE
//	tracer view [-no-browser] [-port N] [-idle D] FILE
//	tracer import-go [-align SPANS] [-min-state D] [-pid N] [-o OUT] [-f] TRACE
//	tracer export -format parquet -o DIR [-max-pending N] FILE...
//	tracer sql [-format table|csv|json] [-max-pending N] FILE... 'QUERY'
//	tracer version
//
// view serves FILE on 127.0.0.1:9001 to the Perfetto UI and opens it there
// in the browser, as Perfetto documents for local files.
//
// cut writes the events of a time window (and of a process, a thread, a
// name or a category), spans that cross its edges clipped to it, with the
// metadata that names the tracks and each counter's value at its start.
//
// Flags may come before or after the file names.
//
// Wherever a command reads a trace, FILE may be "-" (standard input), a
// pipe or a FIFO, or an http:// or https:// URL, such as a running
// program's /debug/tracer/trace?seconds=5: its answer is fetched once and
// read as a pipe is. Outputs are files.
//
// check reads each file the way Perfetto and chrome://tracing do and
// prints every problem they would trip on, as FILE:LINE: explanation. It
// exits 0 when every file is clean, 1 when there are problems.
//
// repair writes a strict-JSON, terminated copy of FILE: it cuts a torn
// last line or a cut gzip member, drops events that are not valid JSON,
// and, with -close-open, ends the spans still open (B without E) at the
// last timestamp of the file. The output goes to -o (FILE.repaired.json
// by default; "-" for standard output), gzipped as one member if its name
// ends in .gz; with -i it atomically replaces FILE.
//
// merge writes the files of several processes as one trace: clocks
// aligned on each file's wall-clock anchor (ts0_unix_ns in the
// process_name metadata the tracer package writes; -offset shifts a file
// by a duration such as 1.5ms or -2s besides, which files without an
// anchor need), pids kept distinct, the files of a rotated set joined in
// order.
//
// stats prints per span name its count, total, self time, mean, p50, p95,
// p99 and max; per track its busy time and share of the trace; counters'
// min, mean and max; dropped events; and the time range covered.
//
// import-go converts a Go execution trace to a trace file by running
// tracer-import-go, from the goruntime module (see docs/goruntime.md).
//
// export writes the files' events as tables (slice, thread, process,
// track, counter, flow) of Parquet files, and sql runs SQL over those
// tables in an embedded DuckDB, by running tracer-export and tracer-sql
// from their own modules (see docs/analysis.md).
//
// Every subcommand reads its input in one pass, in memory bounded by the
// number of tracks, span names and open spans, never by the number of
// events, and shows a progress bar on standard error when that is a
// terminal and the input is larger than 8 MiB (-q silences it).
//
// Exit status: 0 on success, 1 on problems (check) or failures, 2 on
// usage errors.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
)

// errUsage marks errors in the command line: exit status 2.
var errUsage = errors.New("usage")

// A usageError is a command-line mistake, reported with the usage line.
type usageError struct{ msg string }

func (e usageError) Error() string        { return e.msg }
func (e usageError) Is(target error) bool { return target == errUsage }

// errProblems is returned by check when a file has problems: exit status 1
// without a message of its own.
var errProblems = errors.New("problems found")

const usage = `usage:
  tracer check [-q] FILE...
  tracer repair [-o OUT | -i] [-close-open] [-q] FILE
  tracer merge -o OUT [-offset FILE=DURATION]... [-f] [-q] FILE...
  tracer stats [-top N] [-sort KEY] [-json] [-q] FILE
  tracer cut [-from D] [-to D] [-pid N] [-tid N] [-name NAME] [-cat CAT] -o OUT [-q] FILE
  tracer view [-no-browser] [-port N] [-idle D] FILE   (opens it in ui.perfetto.dev)
  tracer import-go [-align SPANS] [-min-state D] [-pid N] [-o OUT] [-f] TRACE   (runs tracer-import-go)
  tracer export -format parquet -o DIR [-max-pending N] FILE...   (runs tracer-export)
  tracer sql [-format table|csv|json] [-max-pending N] FILE... 'QUERY'   (runs tracer-sql)
  tracer version
FILE may be - (standard input), a pipe, a FIFO, or an http:// or https:// URL
(quote it: tracer view 'http://localhost:6060/debug/tracer/trace?seconds=5');
OUT may be - (standard output).
Run 'tracer COMMAND -h' for a command's options; flags may follow file names.`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the command line args and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	cmds := map[string]func([]string, io.Writer, io.Writer) error{
		"check":  runCheck,
		"repair": runRepair,
		"merge":  runMerge,
		"stats":  runStats,

		"import-go": runImportGo,
		"export":    runExport,
		"sql":       runSQL,
		"version":   runVersion,
		"view":      runView,
		"cut":       runCut,
	}
	cmd, ok := cmds[args[0]]
	switch {
	case args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help":
		fmt.Fprintln(stdout, usage)
		return 0
	case !ok:
		fmt.Fprintf(stderr, "tracer: unknown command %q\n%s\n", args[0], usage)
		return 2
	}
	err := cmd(args[1:], stdout, stderr)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "tracer %s: %v\n", args[0], err)
		return 2
	case errors.Is(err, errProblems):
		return 1
	default:
		fmt.Fprintf(stderr, "tracer %s: %v\n", args[0], err)
		return 1
	}
}

// newFlags returns the flag set of a subcommand, which reports its own
// errors as usage errors rather than exiting.
func newFlags(name, args string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: tracer %s %s\n", name, args)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args, turning a bad flag into a usage error (the flag
// package has already printed it, with the usage). Flags may come after
// file names, as with go test (tracer stats t.json -top 5); "--" ends the
// flags, for a file whose name starts with "-".
func parseFlags(fs *flag.FlagSet, args []string) error {
	var files, rest []string
	if i := slices.Index(args, "--"); i >= 0 {
		args, rest = args[:i], args[i+1:]
	}
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return err
			}
			return usageError{"bad arguments"}
		}
		args = fs.Args()
		i := 0
		for i < len(args) && (len(args[i]) < 2 || args[i][0] != '-') {
			i++ // a file name, or "-" for standard input
		}
		files = append(files, args[:i]...)
		if i == len(args) {
			break
		}
		args = args[i:]
	}
	files = append(files, rest...)
	return fs.Parse(append([]string{"--"}, files...)) // fs.Args() is files
}

// runVersion is "tracer version": the module's version (or "(devel)" for
// a build from a checkout, with its commit), and the Go version it was
// built with.
func runVersion(args []string, stdout, _ io.Writer) error {
	if len(args) > 0 {
		return usageError{"version takes no arguments"}
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return errors.New("no build information in this binary")
	}
	version := info.Main.Version
	if version == "" {
		version = "(devel)"
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" {
			version += " " + s.Value
		}
		if s.Key == "vcs.modified" && s.Value == "true" {
			version += " (modified)"
		}
	}
	fmt.Fprintf(stdout, "tracer %s %s, built with %s\n", info.Main.Path, version, info.GoVersion)
	return nil
}
