package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gotracer/tracer/cmd/tracer/internal/trace"
	"github.com/gotracer/tracer/internal/tracefile"
)

// runRepair is "tracer repair".
func runRepair(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("repair", "[-o OUT | -i] [-close-open] [-q] FILE", stderr)
	out := fs.String("o", "", "write to `OUT` (default FILE.repaired.json, or .json.gz; - for standard output)")
	inPlace := fs.Bool("i", false, "replace FILE, atomically")
	closeOpen := fs.Bool("close-open", false, "end spans and async slices still open (B without E, b without e) at the last timestamp")
	quiet := fs.Bool("q", false, "no progress bar and no report")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() != 1:
		return usageError{"repair takes one file"}
	case *inPlace && *out != "":
		return usageError{"-i and -o exclude each other"}
	case isURL(fs.Arg(0)) && *inPlace:
		return usageError{"-i replaces a file, not a URL: -o OUT says where the repair goes"}
	case isURL(fs.Arg(0)) && *out == "":
		return usageError{"repair of a URL needs -o OUT"}
	}
	if err := noURL("-o", *out); err != nil {
		return err
	}
	path := fs.Arg(0)
	dst := *out
	if *inPlace {
		dst = path
	} else if dst == "" {
		dst = repairedName(path)
	}
	report := io.Discard
	if !*quiet {
		report = stderr
	}
	return repair(path, dst, *closeOpen, *inPlace, *quiet, stdout, report)
}

// repairedName returns where the repair of path goes by default:
// trace.json becomes trace.repaired.json, trace.json.gz
// trace.repaired.json.gz.
func repairedName(path string) string {
	dir, base := filepath.Split(path)
	gz := strings.HasSuffix(base, ".gz")
	base = strings.TrimSuffix(base, ".gz")
	ext := filepath.Ext(base)
	name := strings.TrimSuffix(base, ext) + ".repaired" + ext
	if ext == "" {
		name += ".json"
	}
	if gz {
		name += ".gz"
	}
	return filepath.Join(dir, name)
}

// repair writes the events of the file at path that the viewers can read
// to dst as a strict-JSON trace, and says on report what it changed.
func repair(path, dst string, closeOpen, inPlace, quiet bool, stdout, report io.Writer) error {
	var dropped, fixed, rewritten, problems int
	asObject := false // the tracer package's bare array, written as the object
	notJSON := ""
	in, err := openInput(path, quiet, func(p tracefile.Problem) {
		problems++
		switch p.Kind {
		case tracefile.KindNotJSON:
			notJSON = p.Msg
		case tracefile.KindSyntax, tracefile.KindTorn:
			dropped++
			fmt.Fprintf(report, "%s:%d: dropped: %s\n", path, p.Line, p.Msg)
		case tracefile.KindGzip:
			fmt.Fprintf(report, "%s: %s\n", path, p.Msg)
		case tracefile.KindFraming:
			// The output is framed anew: commas, brackets, nothing after.
			fmt.Fprintf(report, "%s:%d: fixed: %s\n", path, p.Line, p.Msg)
		case tracefile.KindUTF8:
			fixed++
		case tracefile.KindStrict:
			// The event is kept, rewritten as JSON.
			rewritten++
			fmt.Fprintf(report, "%s:%d: fixed: %s\n", path, p.Line, p.Msg)
		}
	})
	if err != nil {
		return err
	}
	defer in.Close()
	gz := isGzipName(dst) || inPlace && in.src.Gzip
	o, err := createOutput(dst, gz, stdout)
	if err != nil {
		return err
	}
	// The members of the object form beside the events (Chromium's
	// systemTraceEvents, which Perfetto and chrome://tracing both read,
	// its metadata) are kept: the output is then an object too.
	r := in.reader()
	r.OnMember = o.member
	a := trace.NewAnalyzer()
	err = in.each(func(ev *tracefile.Event) error {
		switch {
		case o.started:
		case r.Object():
			o.object()
		case tracerHead(ev):
			asObject = true
			// The bare array of the tracer package's file cut by a
			// crash (or gzipped, or streamed): written as the object a
			// clean Close of a plain file writes, so that
			// chrome://tracing reads its times to the nanosecond.
			o.object()
			o.member([]byte("displayTimeUnit"), []byte(`"ns"`))
		}
		a.Add(ev)
		raw := ev.Raw
		if ev.BadUTF8 >= 0 {
			// Invalid UTF-8 can only be inside strings (anywhere else it
			// is a syntax error), where an escaped U+FFFD is valid.
			raw = bytes.ToValidUTF8(raw, []byte(`\ufffd`))
		}
		o.event(raw)
		return o.err
	})
	if err != nil {
		o.Abort()
		return fmt.Errorf("%s: %w", path, err)
	}
	if notJSON != "" {
		// Never replace a file with less than it held: what is not a
		// trace is not repaired into an empty one.
		o.Abort()
		return fmt.Errorf("%s: %s: left as it is", path, notJSON)
	}
	if r.Object() && !o.started {
		o.object()
	}
	crashed := in.crashed()
	if inPlace && problems == 0 && !crashed && (!closeOpen || len(a.Open())+len(a.OpenAsyncs()) == 0) {
		o.Abort() // the file is left byte for byte as it was
		fmt.Fprintf(report, "%s: nothing to repair; left as it is\n", path)
		return nil
	}
	closed := 0
	lastEnd := a.MaxTS
	if closeOpen {
		// Innermost first on each track: an E ends the innermost B, and
		// one that ends an outer B comes no earlier.
		var track string
		end := a.MaxTS
		for _, s := range a.Open() {
			if k := string(s.Pid.Raw) + "\x00" + string(s.Tid.Raw); k != track {
				track, end = k, a.MaxTS
			}
			if end <= s.TS {
				// Perfetto sorts an E before a B of its ts, and the B
				// would stay open: end it at the next time it tells apart.
				end = perfettoAfter(s.TS)
			}
			o.event(endEvent(s, end))
			lastEnd = max(lastEnd, end)
			closed++
		}
		for _, s := range a.OpenAsyncs() {
			o.event(asyncEndEvent(s, a.MaxTS))
			closed++
		}
	}
	if err := o.Close(); err != nil {
		return err
	}
	var did []string
	if in.fetch != nil && in.fetch.wasCut() {
		did = append(did, in.fetch.cutNote())
	}
	switch {
	case crashed && !in.src.Cut && dropped == 0 && asObject:
		did = append(did, `closed the array a crash left open, as the object a clean Close writes ({"displayTimeUnit":"ns","traceEvents":[...]})`)
	case crashed && !in.src.Cut && dropped == 0:
		did = append(did, "closed the array a crash left open")
	case asObject:
		did = append(did, `wrote the tracer's array as the object a clean Close writes ({"displayTimeUnit":"ns","traceEvents":[...]})`)
	}
	if dropped > 0 {
		did = append(did, fmt.Sprintf("dropped %d broken events", dropped))
	}
	if rewritten > 0 {
		did = append(did, fmt.Sprintf("rewrote %d events as JSON", rewritten))
	}
	if fixed > 0 {
		did = append(did, fmt.Sprintf("replaced invalid UTF-8 in %d events", fixed))
	}
	if closed > 0 {
		at := fmt.Sprintf("at ts %s", tracefile.AppendMicros(nil, a.MaxTS))
		if lastEnd != a.MaxTS {
			at += fmt.Sprintf(" (those that begin there just after it, by ts %s)", tracefile.AppendMicros(nil, lastEnd))
		}
		did = append(did, fmt.Sprintf("closed %d open spans %s", closed, at))
	} else if open := len(a.Open()) + len(a.OpenAsyncs()); open > 0 {
		did = append(did, fmt.Sprintf("left %d spans open (-close-open ends them)", open))
	}
	if len(did) == 0 {
		did = append(did, "nothing to repair")
	}
	if dst == "-" {
		dst = "standard output"
	}
	fmt.Fprintf(report, "%s: %s; wrote %d events to %s\n", path, strings.Join(did, ", "), o.events, dst)
	return nil
}

// tracerHead reports whether ev is the first event of a file the tracer
// package wrote: its process_name metadata, with the wall-clock anchor of
// ts 0 (ts0_unix_ns), which no other producer writes. Its times are
// microseconds with nanoseconds in their fraction.
func tracerHead(ev *tracefile.Event) bool {
	if ev.Phase() != 'M' || ev.Name.Escaped || string(ev.Name.Raw) != "process_name" {
		return false
	}
	a := ev.Arg("ts0_unix_ns")
	return a != nil && a.IsNum
}

// perfettoAfter returns the first time after ts, in nanoseconds, that
// Perfetto reads as later than ts once both are written as microseconds:
// it takes ts*1000 as a double, so past 2^53 ns (104 days) the next
// distinct time is more than a nanosecond away.
func perfettoAfter(ts int64) int64 {
	at := perfettoNS(ts)
	for step := int64(1); ; step *= 2 {
		if next := ts + step; perfettoNS(next) > at {
			return next
		}
	}
}

// perfettoNS returns the nanoseconds Perfetto reads from ts written as
// microseconds (tracefile.AppendMicros): llround(µs * 1000).
func perfettoNS(ts int64) int64 {
	us, _ := strconv.ParseFloat(string(tracefile.AppendMicros(nil, ts)), 64)
	return int64(math.Round(us * 1000))
}

// asyncEndEvent returns the e event that ends the open async slice s at
// ts: same name, category, scope and id, so both viewers pair them.
func asyncEndEvent(s trace.OpenAsync, ts int64) []byte {
	name := s.Name
	if name == nil {
		name = []byte(`""`)
	}
	b := append([]byte(`{"name":`), name...)
	if s.Cat != nil {
		b = append(append(b, `,"cat":`...), s.Cat...)
	}
	b = append(b, `,"ph":"e","ts":`...)
	b = tracefile.AppendMicros(b, ts)
	for _, f := range []struct {
		key string
		val []byte
	}{{`,"pid":`, s.Pid}, {`,"tid":`, s.Tid}, {`,"scope":`, s.Scope}} {
		if f.val != nil {
			b = append(append(b, f.key...), f.val...)
		}
	}
	if s.IDLocal {
		b = append(append(append(b, `,"id2":{"local":`...), s.ID...), '}')
	} else {
		b = append(append(b, `,"id":`...), s.ID...)
	}
	return append(b, `,"args":{"closed_by":"tracer repair"}}`...)
}

// endEvent returns the E event that ends the open span s at ts.
func endEvent(s trace.OpenSpan, ts int64) []byte {
	name, _ := json.Marshal(s.Name) // a string marshals
	b := append([]byte(`{"name":`), name...)
	b = append(b, `,"ph":"E","ts":`...)
	b = tracefile.AppendMicros(b, ts)
	if s.Pid.Raw != nil {
		b = append(b, `,"pid":`...)
		b = append(b, s.Pid.Raw...)
	}
	if s.Tid.Raw != nil {
		b = append(b, `,"tid":`...)
		b = append(b, s.Tid.Raw...)
	}
	b = append(b, `,"args":{"closed_by":"tracer repair"}}`...)
	return b
}
