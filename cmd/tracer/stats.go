package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gotracer/tracer/cmd/tracer/internal/trace"
	"github.com/gotracer/tracer/internal/tracefile"
)

// Stats is what "tracer stats -json" prints. Durations and times are in
// nanoseconds; times are relative to ts 0 of the trace.
type Stats struct {
	File     string         `json:"file"`
	Events   int64          `json:"events"`
	Problems int            `json:"problems"` // found while reading: run check for the list
	Start    int64          `json:"start_ns"`
	End      int64          `json:"end_ns"`
	Duration int64          `json:"duration_ns"`
	Wall     string         `json:"wall_start,omitempty"` // the wall-clock time of Start, if the trace has an anchor
	Dropped  Float          `json:"dropped"`              // from the tracer.dropped counters
	Spans    []SpanStats    `json:"spans"`
	Tracks   []TrackStats   `json:"tracks"`
	Counters []CounterStats `json:"counters"`
	// Note says what the user should know of the span names: that names
	// which differ only in digits were counted as one.
	Note string `json:"note,omitempty"`
	Open int    `json:"open"` // spans still open at the end, counted to it
	// Deep says that slices are nested deeper than Perfetto keeps, and
	// TooDeep how many of them it drops, which are not counted.
	Deep    string `json:"deep,omitempty"`
	TooDeep int    `json:"too_deep"`
	Cut     string `json:"cut,omitempty"` // the file ends as a crash leaves it, or with spans never ended
	// QuantileError is the relative error of P50, P95 and P99.
	QuantileError float64 `json:"quantile_error"`
}

// SpanStats are the numbers of the slices of one name.
type SpanStats struct {
	Name  string `json:"name"`
	Count int64  `json:"count"`
	Total int64  `json:"total_ns"`
	Self  int64  `json:"self_ns"`
	Mean  int64  `json:"mean_ns"`
	P50   int64  `json:"p50_ns"`
	P95   int64  `json:"p95_ns"`
	P99   int64  `json:"p99_ns"`
	Max   int64  `json:"max_ns"`
	// MaxDepth is the deepest nesting of the name's slices: the greatest
	// depth Perfetto's slice table gives one (0: a top-level slice).
	MaxDepth int32 `json:"max_depth"`
}

// TrackStats are the numbers of one track (a goroutine, for the tracer
// package): Share is Busy over the trace's duration.
type TrackStats struct {
	Pid     string  `json:"pid"`
	Tid     string  `json:"tid"`
	Process string  `json:"process,omitempty"` // the process's name
	Name    string  `json:"name,omitempty"`    // the track's (thread's) name
	Slices  int64   `json:"slices"`
	Busy    int64   `json:"busy_ns"`
	Share   float64 `json:"share"`
}

// CounterStats are the numbers of one series of a counter.
type CounterStats struct {
	Pid     string `json:"pid"`
	Name    string `json:"name"`
	Key     string `json:"key"`
	Samples int64  `json:"samples"`
	Min     Float  `json:"min"`
	Mean    Float  `json:"mean"`
	Max     Float  `json:"max"`
}

// A Float is a number of stats -json: a JSON number, or, for what JSON
// has no number for (a counter's value of "inf", which Perfetto reads as
// strtod does), the string "+Inf", "-Inf" or "NaN".
type Float float64

// MarshalJSON writes f as a number, or the name of an infinity or NaN.
func (f Float) MarshalJSON() ([]byte, error) {
	switch v := float64(f); {
	case math.IsInf(v, 1):
		return []byte(`"+Inf"`), nil
	case math.IsInf(v, -1):
		return []byte(`"-Inf"`), nil
	case math.IsNaN(v):
		return []byte(`"NaN"`), nil
	default:
		return json.Marshal(v)
	}
}

// UnmarshalJSON reads what MarshalJSON writes.
func (f *Float) UnmarshalJSON(b []byte) error {
	var v float64
	switch string(b) {
	case `"+Inf"`:
		v = math.Inf(1)
	case `"-Inf"`:
		v = math.Inf(-1)
	case `"NaN"`:
		v = math.NaN()
	default:
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
	}
	*f = Float(v)
	return nil
}

// spanSorts are the orders -sort takes, each descending but name.
var spanSorts = map[string]func(a, b SpanStats) int{
	"total": func(a, b SpanStats) int { return cmp.Compare(b.Total, a.Total) },
	"self":  func(a, b SpanStats) int { return cmp.Compare(b.Self, a.Self) },
	"count": func(a, b SpanStats) int { return cmp.Compare(b.Count, a.Count) },
	"mean":  func(a, b SpanStats) int { return cmp.Compare(b.Mean, a.Mean) },
	"p50":   func(a, b SpanStats) int { return cmp.Compare(b.P50, a.P50) },
	"p95":   func(a, b SpanStats) int { return cmp.Compare(b.P95, a.P95) },
	"p99":   func(a, b SpanStats) int { return cmp.Compare(b.P99, a.P99) },
	"max":   func(a, b SpanStats) int { return cmp.Compare(b.Max, a.Max) },
	"depth": func(a, b SpanStats) int { return cmp.Compare(b.MaxDepth, a.MaxDepth) },
	"name":  func(a, b SpanStats) int { return strings.Compare(a.Name, b.Name) },
}

// runStats is "tracer stats".
func runStats(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("stats", "[-top N] [-sort KEY] [-json] [-q] FILE", stderr)
	top := fs.Int("top", 20, "show the first `N` span names and tracks (0: all)")
	sortBy := fs.String("sort", "total", "order span names by `KEY`: total, self, count, mean, p50, p95, p99, max, depth or name")
	asJSON := fs.Bool("json", false, "print JSON, every span name, track and counter")
	quiet := fs.Bool("q", false, "no progress bar")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	order, ok := spanSorts[*sortBy]
	switch {
	case fs.NArg() != 1:
		return usageError{"stats takes one file"}
	case !ok:
		return usageError{fmt.Sprintf("-sort %q: want total, self, count, mean, p50, p95, p99, max, depth or name", *sortBy)}
	case *top < 0:
		return usageError{"-top must not be negative"}
	}
	s, err := computeStats(fs.Arg(0), *quiet)
	if err != nil {
		return err
	}
	slices.SortStableFunc(s.Spans, order)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	if s.Problems > 0 {
		fmt.Fprintf(stderr, "tracer stats: %s has %d %s: run tracer check\n", s.File, s.Problems, plural(s.Problems, "problem"))
	}
	if s.Note != "" {
		fmt.Fprintf(stderr, "tracer stats: %s: %s\n", s.File, s.Note)
	}
	return printStats(stdout, s, *top)
}

// computeStats reads the file at path and returns its numbers, spans
// sorted by total time and tracks by busy time.
func computeStats(path string, quiet bool) (*Stats, error) {
	// A track Perfetto nests in ways a stream cannot follow is replayed
	// from what the first reading kept of it, or read again (see
	// readStats).
	file, err := reread(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	p, err := readStats(file, nil, quiet, 0)
	if err != nil {
		return nil, err
	}
	defer func() { p.in.Close() }()
	deep, tooDeep, open := "", 0, 0
	stopped := p.stopped // at a deep track: what came after it is unread
	// The problems found as the file was read, and those its last
	// reading found at the end (among them the depth of the tracks
	// replayed). A track replayed is not checked as it is read: those
	// found as it was read come from the first reading of each event
	// that checked every track, the first up to where it stopped and the
	// second after it.
	first := p
	streamed, read := p.problems, p.problems
	exact := p.a.Deep().Union(p.a.Tangled())
	if !stopped && p.a.Kept(exact) {
		// Tracks tangled by what came before the file's first X (a
		// tie), kept as they came: replayed without reading the file
		// again.
		p.a.ReplayKept(exact)
		tooDeep, open = p.a.FinishExact(p.a.MaxTS)
		p.a.ReplayedFlows(p.a)
		exact = nil
	}
	for readings := 1; exact != nil || replayAll; {
		// Perfetto drops the slices nested deeper than 512 levels, at
		// times takes an E before a B of its ts that the file has
		// before it, and nests slices in the X events it moved to
		// overflow tracks: read the file again, replaying those tracks
		// as it does (see internal/trace/exact.go).
		again, err := readStats(file, exact, quiet || !stopped, first.a.Events)
		if err != nil {
			if stopped {
				return nil, err
			}
			if p.a.Deep() != nil {
				deep = fmt.Sprintf("slices are nested deeper than the 512 levels Perfetto keeps, and counted here, where Perfetto drops them (the file could not be read again: %v)", err)
			}
			break
		}
		p.in.Close()
		p = again
		if readings++; stopped && readings == 2 {
			streamed = first.problems + p.problems - p.atMark
		}
		read = p.problems
		// After a first reading that stopped, the tracks found deep or
		// tangled further on are replayed too, in a third.
		more := p.a.Deep().Union(p.a.Tangled())
		if !stopped || more == nil || readings == 3 {
			tooDeep, open = p.a.FinishExact(p.a.MaxTS)
			p.a.ReplayedFlows(first.a)
			break
		}
		exact = exact.Union(more)
	}
	if tooDeep > 0 {
		verb := "are"
		if tooDeep == 1 {
			verb = "is"
		}
		deep = fmt.Sprintf("%d %s nested deeper than the 512 levels Perfetto keeps %s left out, as Perfetto drops them (slice_max_depth_exceeded; tracer check says where)", tooDeep, plural(tooDeep, "slice"), verb)
	}
	a, in := p.a, p.in
	if a.HasTS {
		// Spans still open at the end lasted at least to it: count them
		// so, as the viewers draw them, rather than leave them out.
		open += a.EndOpen(a.MaxTS)
	}
	a.Finish(in.crashed())
	problems := streamed + p.problems - read
	if a.Events == 0 && problems > 0 {
		return nil, fmt.Errorf("%s: no events read, and %d %s: run tracer check", path, problems, plural(problems, "problem"))
	}

	s := &Stats{File: path, Events: a.Events, Problems: problems, QuantileError: trace.SketchError, Note: a.Note(), Open: open, Deep: deep, TooDeep: tooDeep}
	if in.crashed() {
		s.Cut = fmt.Sprintf("cut: %s, %d %s still open at the end (counted to its last timestamp)", in.cutNote(), open, plural(open, "span"))
	} else if open > 0 {
		s.Cut = fmt.Sprintf("%d %s never ended (counted to the last timestamp)", open, plural(open, "span"))
	}
	if a.HasTS {
		s.Start, s.End, s.Duration = a.MinTS, a.MaxTS, a.MaxTS-a.MinTS
	}
	anchored := false
	var anchor int64
	for _, p := range a.Processes {
		s.Dropped += Float(p.Dropped)
		if p.HasAnchor && (!anchored || p.Anchor < anchor) {
			anchored, anchor = true, p.Anchor
		}
	}
	if anchored {
		s.Wall = time.Unix(0, anchor+s.Start).UTC().Format(time.RFC3339Nano)
	}
	for _, n := range a.Names {
		if n.Count == 0 {
			continue // the name of an E, or of a B never closed
		}
		d := &n.Durations
		s.Spans = append(s.Spans, SpanStats{
			Name: n.Name, Count: n.Count, Total: n.Total, Self: n.Self, Mean: n.Total / n.Count,
			P50: d.Quantile(0.50), P95: d.Quantile(0.95), P99: d.Quantile(0.99), Max: n.Max, MaxDepth: n.MaxDepth,
		})
	}
	slices.SortStableFunc(s.Spans, spanSorts["total"])
	for _, t := range a.Tracks() {
		ts := TrackStats{Pid: t.Pid, Tid: t.Tid, Process: t.Process, Name: t.Name, Slices: t.Slices, Busy: t.Busy}
		if s.Duration > 0 {
			ts.Share = float64(t.Busy) / float64(s.Duration)
		}
		s.Tracks = append(s.Tracks, ts)
	}
	slices.SortStableFunc(s.Tracks, func(a, b TrackStats) int { return cmp.Compare(b.Busy, a.Busy) })
	for _, c := range a.Counters {
		s.Counters = append(s.Counters, CounterStats{Pid: c.Pid, Name: c.Name, Key: c.Key, Samples: c.N, Min: Float(c.Min), Mean: Float(c.Sum / float64(c.N)), Max: Float(c.Max)})
	}
	return s, nil
}

// replayAll makes stats replay every track as Perfetto does, as it does
// those nested too deep (for tests).
var replayAll = false

// keepTracks makes stats and check keep the events of the tracks a tie
// may make replayed, to replay them without reading the file again (see
// internal/trace/keep.go); tests turn it off, to compare.
var keepTracks = true

// A rereadable is an input that can be read twice: a regular file, or a
// temporary copy of a pipe, a FIFO, standard input ("-") or the answer to
// a URL, which Close removes.
type rereadable struct {
	name  string // as the user named it
	path  string // the file to read
	fetch *fetch // the answer to the URL name is, which path holds
	spool bool   // path is a copy of a pipe
}

// reread returns the input name as a file that can be read twice: a
// missing file is reported where it is opened.
func reread(name string) (*rereadable, error) {
	if isURL(name) {
		f, err := download(name)
		if err != nil {
			return nil, err
		}
		return &rereadable{name: name, path: f.path, fetch: f}, nil
	}
	if st, err := os.Stat(name); name != "-" && (err != nil || st.Mode().IsRegular()) {
		return &rereadable{name: name, path: name}, nil
	}
	path, err := spool(name)
	if err != nil {
		return nil, err
	}
	return &rereadable{name: name, path: path, spool: true}, nil
}

// open opens the input for its first reading: named as the user named
// it, and, for a URL, knowing how its answer ended.
func (r *rereadable) open(quiet bool, onProblem func(tracefile.Problem)) (*input, error) {
	return openFetched(r.name, r.path, r.fetch, quiet, onProblem)
}

// Close removes the temporary copy, if there is one.
func (r *rereadable) Close() {
	switch {
	case r.fetch != nil:
		r.fetch.Close()
	case r.spool:
		os.Remove(r.path)
	}
}

// spool copies the input at path (a pipe, a FIFO, "-" for standard
// input) to a temporary file and returns its name.
func spool(path string) (string, error) {
	src := os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return "", err
		}
		defer f.Close()
		src = f
	}
	tmp, err := os.CreateTemp("", "tracer-stats-*")
	if err != nil {
		return "", err
	}
	_, err = io.Copy(tmp, src)
	if err = errors.Join(err, tmp.Close()); err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return tmp.Name(), nil
}

// A statsPass is one reading of a file for stats.
type statsPass struct {
	a        *trace.Analyzer
	in       *input
	problems int  // what the reader and the Analyzer found
	atMark   int  // problems, once the mark-th event was read
	stopped  bool // at the first event that made a track deep: see trace.Analyzer.WentDeep
}

// errDeep stops a first reading at a deep track.
var errDeep = errors.New("a track nested deeper than Perfetto keeps")

// readStats reads the file for stats, its tracks in exact replayed as
// Perfetto does (their ends not done: see trace.Analyzer.FinishExact).
// A first reading (exact nil) stops at the first event that makes a
// track nested deeper than Perfetto keeps: that track is replayed, so
// the file is read again anyway, and from the start. The pass notes how
// many problems were found once the mark-th event was read.
func readStats(file *rereadable, exact trace.TrackSet, quiet bool, mark int64) (*statsPass, error) {
	p := &statsPass{}
	count := func(tracefile.Problem) { p.problems++ }
	in, err := file.open(quiet, count)
	if err != nil {
		return nil, err
	}
	a := trace.NewAnalyzer()
	a.Stats, a.OnProblem = true, count
	a.Exact, a.ExactAll = exact, replayAll
	first := exact == nil && !replayAll
	a.Keep = first && keepTracks
	err = in.each(func(ev *tracefile.Event) error {
		a.Add(ev)
		if a.Events == mark {
			p.atMark = p.problems
		}
		if first && a.WentDeep() {
			return errDeep
		}
		return nil
	})
	if err == errDeep {
		p.stopped, err = true, nil
	}
	if err != nil {
		in.Close()
		return nil, fmt.Errorf("%s: %w", file.name, err)
	}
	p.a, p.in = a, in
	return p, nil
}

// printStats prints s as tables.
func printStats(w io.Writer, s *Stats, top int) error {
	limit := func(n int) int {
		if top == 0 || top > n {
			return n
		}
		return top
	}
	fmt.Fprintf(w, "%s: %d events, %d span names, %d tracks\n", s.File, s.Events, len(s.Spans), len(s.Tracks))
	if absoluteTS(s.Start) {
		// Microseconds since 1970 (the Go toolchain's) or since boot:
		// as durations from ts 0 they would read "1800000000s to
		// 1800000000s"; the ts themselves, as the file has them.
		fmt.Fprintf(w, "time range: %s, ts %s to %s µs", fmtDur(s.Duration), tracefile.AppendMicros(nil, s.Start), tracefile.AppendMicros(nil, s.End))
	} else {
		fmt.Fprintf(w, "time range: %s to %s (%s)", fmtDur(s.Start), fmtDur(s.End), fmtDur(s.Duration))
	}
	if s.Wall != "" {
		fmt.Fprintf(w, ", from %s", s.Wall)
	}
	fmt.Fprintf(w, "\ndropped events: %s\n", strconv.FormatFloat(float64(s.Dropped), 'f', -1, 64))
	if s.Cut != "" {
		fmt.Fprintln(w, s.Cut)
	}
	if s.Deep != "" {
		fmt.Fprintln(w, s.Deep)
	}

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "\nspans (%d of %d; p50/p95/p99 within %.0f%%):\n", limit(len(s.Spans)), len(s.Spans), 100*s.QuantileError)
	fmt.Fprintln(tw, "count\ttotal\tself\tmean\tp50\tp95\tp99\tmax\tdepth\t  name")
	for _, n := range s.Spans[:limit(len(s.Spans))] {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t  %s\n", n.Count, fmtDur(n.Total), fmtDur(n.Self), fmtDur(n.Mean),
			fmtDur(n.P50), fmtDur(n.P95), fmtDur(n.P99), fmtDur(n.Max), n.MaxDepth, n.Name)
	}
	tw.Flush()

	fmt.Fprintf(w, "\ntracks (%d of %d, by busy time):\n", limit(len(s.Tracks)), len(s.Tracks))
	fmt.Fprintln(tw, "pid\ttid\tslices\tbusy\tshare\t  process: name")
	for _, t := range s.Tracks[:limit(len(s.Tracks))] {
		name := t.Name
		if t.Process != "" {
			name = t.Process + ": " + name
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%.1f%%\t  %s\n", t.Pid, t.Tid, t.Slices, fmtDur(t.Busy), 100*t.Share, name)
	}
	tw.Flush()

	if len(s.Counters) > 0 {
		fmt.Fprintf(w, "\ncounters:\n")
		fmt.Fprintln(tw, "pid\tsamples\tmin\tmean\tmax\t  name")
		for _, c := range s.Counters {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t  %s\n", c.Pid, c.Samples, fmtNum(float64(c.Min)), fmtNum(float64(c.Mean)), fmtNum(float64(c.Max)), c.Name+" "+c.Key)
		}
		tw.Flush()
	}
	return nil
}

// absoluteTS reports whether a trace's first ts is too far from 0 to read
// as a duration from it: more than a day (a trace from ts 0, as the tracer
// package writes it, rarely runs that long; a clock since boot or since
// 1970 is there at once).
func absoluteTS(ns int64) bool { return ns > 24*int64(time.Hour) || ns < -24*int64(time.Hour) }

// fmtDur formats nanoseconds with three significant digits.
func fmtDur(ns int64) string {
	neg := ""
	if ns < 0 {
		neg, ns = "-", -ns
	}
	units := []struct {
		name string
		ns   float64
	}{{"s", 1e9}, {"ms", 1e6}, {"µs", 1e3}}
	for _, u := range units {
		if float64(ns) >= u.ns {
			return neg + strconv.FormatFloat(round3(float64(ns)/u.ns), 'f', -1, 64) + u.name
		}
	}
	return neg + strconv.FormatInt(ns, 10) + "ns"
}

// round3 rounds f, at least 1, to three significant digits.
func round3(f float64) float64 {
	scale := math.Pow(10, 2-math.Floor(math.Log10(f)))
	return math.Round(f*scale) / scale
}

func fmtNum(f float64) string { return strconv.FormatFloat(f, 'g', 6, 64) }
