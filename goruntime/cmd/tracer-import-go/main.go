// Command tracer-import-go converts a Go execution trace (from go test
// -trace, /debug/pprof/trace, runtime/trace or trace.FlightRecorder) into
// a Chrome Trace Event Format file that Perfetto and chrome://tracing open,
// with the same events goruntime.Start records: goroutine states, GC
// cycles and stop-the-world pauses, heap and goroutine counters, regions,
// tasks and logs.
//
//	tracer-import-go [-align SPANS.json] [-min-state 10us] [-o OUT.json] [-f] TRACE
//
// With -align, the output takes the pid and the clocks of ts 0 of a span
// trace written by the same process, so that "tracer merge SPANS.json
// OUT.json" puts the runtime's view under the spans, to the nanosecond.
// "tracer import-go" runs this command when it is installed:
//
//	go install github.com/gotracer/tracer/goruntime/cmd/tracer-import-go@latest
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gotracer/tracer/goruntime"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "tracer import-go:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("import-go", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "", "write the trace to `FILE` (default: TRACE with .out replaced by, or else followed by, .json)")
	align := fs.String("align", "", "take pid and ts 0 from the span trace `FILE` of the same process")
	minState := fs.Duration("min-state", goruntime.DefaultMinState, "leave out goroutine states shorter than this")
	pid := fs.Int("pid", 0, "the pid to write (default: the aligned trace's, or 1)")
	force := fs.Bool("f", false, "write over OUT if it exists")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: tracer import-go [flags] TRACE")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return errors.New("one execution trace to convert")
	}
	in := fs.Arg(0)
	if *out == "" {
		*out = strings.TrimSuffix(in, ".out") + ".json"
	}
	var cfg goruntime.ConvertConfig
	if *align != "" {
		var err error
		if cfg, err = readAnchor(*align); err != nil {
			return err
		}
	}
	if *pid != 0 {
		cfg.PID = *pid
	}
	r, err := os.Open(in)
	if err != nil {
		return err
	}
	defer r.Close()
	if _, err := os.Stat(*out); err == nil && !*force {
		return fmt.Errorf("%s exists: -f writes over it, -o names another file", *out)
	}
	// Written beside OUT and renamed into place: OUT is never left half
	// written, and a trace that converts to nothing leaves nothing.
	w, err := os.CreateTemp(filepath.Dir(*out), "."+filepath.Base(*out)+".*.tmp")
	if err != nil {
		return err
	}
	n, err := goruntime.Convert(w, bufio.NewReaderSize(r, 1<<20), cfg, goruntime.WithMinState(*minState))
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil && n == 0 {
		os.Remove(w.Name())
		return fmt.Errorf("%s: %w (nothing written)", in, err)
	}
	if rerr := os.Chmod(w.Name(), 0o644); rerr != nil {
		os.Remove(w.Name())
		return rerr
	}
	if rerr := os.Rename(w.Name(), *out); rerr != nil {
		os.Remove(w.Name())
		return rerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w (the %d events before the damage are in %s)", in, err, n, *out)
	}
	fmt.Fprintf(stdout, "%s: %d events\n", *out, n)
	return nil
}

// readAnchor reads the process_name event at the top of a span trace: its
// pid, and the monotonic and wall-clock readings of its ts 0.
func readAnchor(path string) (goruntime.ConvertConfig, error) {
	f, err := os.Open(path)
	if err != nil {
		return goruntime.ConvertConfig{}, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for i := 0; i < 8 && sc.Scan(); i++ {
		line := strings.TrimSuffix(strings.TrimSpace(sc.Text()), ",")
		if !strings.Contains(line, `"process_name"`) {
			continue
		}
		var ev struct {
			Pid  int `json:"pid"`
			Args struct {
				Name   string `json:"name"`
				Mono   int64  `json:"ts0_mono_ns"`
				UnixNs int64  `json:"ts0_unix_ns"`
			} `json:"args"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			return goruntime.ConvertConfig{}, fmt.Errorf("%s: %w", path, err)
		}
		if ev.Args.Mono == 0 {
			return goruntime.ConvertConfig{}, fmt.Errorf("%s: no ts0_mono_ns in its header (written by a tracer older than goruntime)", path)
		}
		return goruntime.ConvertConfig{PID: ev.Pid, Base: ev.Args.Mono, Wall: time.Unix(0, ev.Args.UnixNs), ProcessName: ev.Args.Name}, nil
	}
	return goruntime.ConvertConfig{}, fmt.Errorf("%s: no process_name event at its top: not a tracer file", path)
}
