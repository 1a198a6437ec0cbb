package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/gotracer/tracer/cmd/tracer/internal/trace"
	"github.com/gotracer/tracer/internal/tracefile"
)

// runCheck is "tracer check": it reads each file as the viewers do and
// prints every problem as FILE:LINE: explanation, then one summary line
// per file.
func runCheck(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("check", "[-q] FILE...", stderr)
	quiet := fs.Bool("q", false, "no progress bar")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usageError{"no file to check"}
	}
	bad := false
	for _, path := range fs.Args() {
		var note string
		problems, events, err := checkFile(path, *quiet, func(p tracefile.Problem) {
			fmt.Fprintf(stdout, "%s:%d: %s\n", path, p.Line, p.Msg)
		}, &note)
		if err != nil {
			// Go on with the other files; the status says it failed.
			fmt.Fprintf(stderr, "tracer check: %v\n", err)
			bad = true
			continue
		}
		if note != "" {
			// Not a problem for the viewers: the file is still ok.
			fmt.Fprintf(stdout, "%s: note: %s\n", path, note)
		}
		if len(problems) == 0 {
			fmt.Fprintf(stdout, "%s: ok, %d events\n", path, events)
			continue
		}
		bad = true
		n := total(problems)
		fmt.Fprintf(stdout, "%s: %d %s (%s) in %d events\n", path, n, plural(n, "problem"), summary(problems), events)
	}
	if bad {
		return errProblems
	}
	return nil
}

// checkFile checks the file at path, passing each problem to report, and
// returns the number of problems of each kind and the number of events;
// note, if not nil, gets what the user should know that is no problem.
func checkFile(path string, quiet bool, report func(tracefile.Problem), note ...*string) (map[tracefile.Kind]int, int64, error) {
	problems := map[tracefile.Kind]int{}
	misplaced := 0 // Perfetto's misplaced_end_event, as reported
	onProblem := func(p tracefile.Problem) {
		problems[p.Kind]++
		if p.Perfetto == "misplaced_end_event" {
			misplaced++
		}
		report(p)
	}
	// A track with flow events Perfetto may bind to no slice is read
	// again (see trace.Analyzer.FlowTracks).
	file, err := reread(path)
	if err != nil {
		return nil, 0, err
	}
	defer file.Close()
	in, err := file.open(quiet, onProblem)
	if err != nil {
		return nil, 0, err
	}
	defer in.Close()
	a := trace.NewAnalyzer()
	a.OnProblem, a.Keep = onProblem, keepTracks
	err = in.each(func(ev *tracefile.Event) error {
		a.Add(ev)
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", path, err)
	}
	// Replayed as Perfetto's importer takes them: which flow events it
	// binds to no slice, and where it cuts B events left open (unless
	// the first reading found such cuts, which it reports at the E
	// events that make them).
	replayReport := func(p tracefile.Problem) {
		if p.Perfetto == "misplaced_end_event" && misplaced == 0 {
			onProblem(p)
		}
	}
	if tracks := a.FlowTracks().Union(a.Tangled()); a.Kept(tracks) {
		// Tangled by what came before the file's first X (a tie), kept
		// as they came: replayed without reading the file again.
		a.ReplayKept(tracks)
		a.ReplayReports, a.OnProblem = true, replayReport
		a.FinishExact(a.MaxTS)
		a.ReplayReports, a.OnProblem = false, onProblem
		a.PerfettoFlows(a)
	} else if tracks != nil {
		again, err := openInput(file.path, true, nil)
		if err != nil {
			return nil, 0, err
		}
		defer again.Close()
		b := trace.NewAnalyzer()
		b.Exact, b.ReplayReports = tracks, true
		b.OnProblem = replayReport
		if err := again.each(func(ev *tracefile.Event) error { b.Add(ev); return nil }); err != nil {
			return nil, 0, fmt.Errorf("%s: %w", path, err)
		}
		b.FinishExact(b.MaxTS)
		a.PerfettoFlows(b)
	}
	cut := ""
	if in.crashed() {
		open := len(a.Open())
		cut = fmt.Sprintf("cut: %s, %d %s still open at the end (in the bare [ form, cut on an event's end, both viewers load it; tracer repair makes it strict JSON)", in.cutNote(), open, plural(open, "span"))
	}
	a.Finish(in.crashed())
	for _, n := range note {
		*n = strings.TrimPrefix(a.Note()+"; "+cut, "; ")
		*n = strings.TrimSuffix(*n, "; ")
	}
	return problems, a.Events, nil
}

// plural returns word, with an s unless n is 1.
func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

func total(m map[tracefile.Kind]int) int {
	n := 0
	for _, c := range m {
		n += c
	}
	return n
}

// summary lists the kinds of problems found, most frequent first.
func summary(m map[tracefile.Kind]int) string {
	kinds := make([]tracefile.Kind, 0, len(m))
	for k := range m {
		kinds = append(kinds, k)
	}
	slices.SortFunc(kinds, func(a, b tracefile.Kind) int {
		if m[a] != m[b] {
			return m[b] - m[a]
		}
		return strings.Compare(string(a), string(b))
	})
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%d %s", m[k], k)
	}
	return strings.Join(parts, ", ")
}
