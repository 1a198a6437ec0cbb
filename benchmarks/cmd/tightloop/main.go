//go:build unix

// Command tightloop measures issue 9's tight-loop target end to end: how
// long it takes to record spans as fast as a loop can and have them all in
// a file, per span, for the tracer and the peers that write a file.
//
// Every peer records the same shape, a call to a function that defers the
// end of its span,
//
//	for i := 0; i < n; i++ { func() { defer X("x")() }() }
//
// on 1 goroutine × 2M spans (-n) and on 8 goroutines × 250k (-n / 8 each).
// The clock starts when the goroutines are released, all at once, and
// stops when the file is written and closed. Setting up (creating the
// file, starting the tracer) is before the clock for every peer.
//
//   - tracer:          tracer.New(path) with default settings ... Close.
//   - tracer-lossless: the same with tracer.WithLossless().
//   - rtrace-region:   runtime/trace regions, trace.Start on a
//     bufio.Writer over an os.File; after the loop trace.Stop, Flush,
//     Close. The execution tracer also records the scheduler's events.
//   - mutex:           the baseline of internal/mutextrace (one global
//     mutex, one slice); after the loop WriteTrace encodes its JSON
//     through a bufio.Writer to an os.File, then Flush, Close. Its slice
//     is reserved for all the spans before the clock (as the mutex peer
//     of the benchmarks does), so it appends into warm memory: the
//     baseline at its best.
//
// After each tracer run the file is parsed and the spans named "x" counted
// (X events and B/E pairs); a run with a span missing or Stats().Dropped
// above 0 fails. Each round runs every peer once per goroutine count, in
// turn; -rounds rounds, and the report is the median of each.
//
// It builds on Unix only (getrusage).
package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/trace"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gotracer/tracer"
	"github.com/gotracer/tracer/benchmarks/internal/mutextrace"
	"github.com/gotracer/tracer/benchmarks/internal/spancount"
)

// The peers, in the order the table shows them.
const (
	peerTracer   = "tracer"
	peerLossless = "tracer-lossless"
	peerRegion   = "rtrace-region"
	peerMutex    = "mutex"
)

var peers = []string{peerTracer, peerLossless, peerRegion, peerMutex}

// A run is one peer's measurement at one goroutine count.
type run struct {
	Peer       string        `json:"peer"`
	Goroutines int           `json:"goroutines"`
	Spans      int           `json:"spans"`     // recorded
	Wall       time.Duration `json:"wall"`      // first span to the file closed
	CPU        time.Duration `json:"cpu"`       // process CPU time (user + system) over Wall
	Finish     time.Duration `json:"finish"`    // of which after the last span: closing, encoding, writing
	InFile     int           `json:"in_file"`   // tracer peers: spans counted in the file
	Dropped    uint64        `json:"dropped"`   // tracer peers: Stats().Dropped
	FileSize   int64         `json:"file_size"` // bytes
	Problem    string        `json:"problem,omitempty"`
}

func (r run) nsPerSpan() float64 { return float64(r.Wall.Nanoseconds()) / float64(r.Spans) }

func (r run) cpuPerSpan() float64 { return float64(r.CPU.Nanoseconds()) / float64(r.Spans) }

func main() {
	n := flag.Int("n", 2_000_000, "spans per run: 1 goroutine × n, and 8 goroutines × n/8")
	rounds := flag.Int("rounds", 3, "rounds; the report shows each run's median")
	dir := flag.String("dir", "", "directory for the trace files (default: a temporary one)")
	asJSON := flag.Bool("json", false, "print every run as JSON before the markdown summary")
	quick := flag.Bool("quick", false, "one round, for a smoke test")
	flag.Parse()
	if *quick {
		*rounds = 1
	}
	if *dir == "" {
		d, err := os.MkdirTemp("", "tracer-tightloop-")
		if err != nil {
			fatal(err)
		}
		defer os.RemoveAll(d)
		*dir = d
	}
	var all []run
	for round := 0; round < *rounds; round++ {
		for _, g := range []int{1, 8} {
			for _, p := range peers {
				r := measure(p, g, *n/g, *dir)
				fmt.Fprintf(os.Stderr, "tightloop: round %d %s g=%d: %.1f ns/span (closing %v), %.1f CPU ns/span, %d in file, %d dropped %s\n",
					round+1, p, g, r.nsPerSpan(), r.Finish.Round(time.Millisecond), r.cpuPerSpan(), r.InFile, r.Dropped, r.Problem)
				all = append(all, r)
			}
		}
	}
	ok := report(os.Stdout, all, *rounds, *asJSON)
	if !ok {
		os.Exit(1)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "tightloop:", err)
	os.Exit(1)
}

// measure runs peer p on g goroutines recording per spans each.
func measure(p string, g, per int, dir string) run {
	r := run{Peer: p, Goroutines: g, Spans: g * per}
	path := filepath.Join(dir, fmt.Sprintf("%s-g%d.json", p, g))
	defer os.Remove(path)
	runtime.GC()
	var loop func()
	var finish func() error
	switch p {
	case peerTracer, peerLossless:
		var opts []tracer.Option
		if p == peerLossless {
			opts = append(opts, tracer.WithLossless())
		}
		t, err := tracer.New(path, opts...)
		if err != nil {
			fatal(err)
		}
		loop = func() {
			for i := 0; i < per; i++ {
				func() { defer t.Span("x")() }()
			}
		}
		finish = func() error {
			err := t.Close()
			r.Dropped = t.Stats().Dropped
			return err
		}
	case peerRegion:
		f, w := create(path)
		if err := trace.Start(w); err != nil {
			fatal(err)
		}
		ctx := context.Background()
		loop = func() {
			for i := 0; i < per; i++ {
				func() { defer trace.StartRegion(ctx, "x").End() }()
			}
		}
		finish = func() error {
			trace.Stop()
			return flushClose(f, w)
		}
	case peerMutex:
		mutextrace.Reset()
		mutextrace.Reserve(r.Spans, 0)
		f, w := create(path)
		loop = func() {
			for i := 0; i < per; i++ {
				func() {
					t := mutextrace.Start("x")
					defer t.Stop()
				}()
			}
		}
		finish = func() error {
			if err := mutextrace.WriteTrace(w); err != nil {
				return err
			}
			return flushClose(f, w)
		}
	}

	var ready, done sync.WaitGroup
	begin := make(chan struct{})
	for i := 0; i < g; i++ {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-begin
			loop()
		}()
	}
	ready.Wait()
	cpu0 := cpuTime()
	start := time.Now()
	close(begin)
	done.Wait()
	last := time.Now()
	err := finish()
	r.Wall = time.Since(start)
	r.Finish = time.Since(last)
	r.CPU = cpuTime() - cpu0
	if err != nil {
		r.Problem = err.Error()
	}
	if fi, err := os.Stat(path); err == nil {
		r.FileSize = fi.Size()
	}
	switch p {
	case peerTracer, peerLossless:
		c, err := spancount.Count(path, "x")
		r.InFile = c.Spans
		switch {
		case err != nil:
			r.Problem = "reading the file: " + err.Error()
		case c.Spans != r.Spans:
			r.Problem = fmt.Sprintf("%d of %d spans in the file", c.Spans, r.Spans)
		case r.Dropped > 0:
			r.Problem = fmt.Sprintf("%d dropped", r.Dropped)
		}
	case peerMutex:
		r.InFile = mutextrace.Len()
		mutextrace.Reset()
	}
	return r
}

// cpuTime returns the CPU time of the process so far, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// create creates the file at path and a buffered writer over it.
func create(path string) (*os.File, *bufio.Writer) {
	f, err := os.Create(path)
	if err != nil {
		fatal(err)
	}
	return f, bufio.NewWriterSize(f, 256<<10)
}

func flushClose(f *os.File, w *bufio.Writer) error {
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// A summary is the median run of one peer at one goroutine count, and
// what its rounds had wrong.
type summary struct {
	median   run
	problems []string
	rounds   int
}

// report prints the medians, the ratios and the targets as markdown, after
// every run as JSON if asJSON, and returns whether every tracer run was
// complete.
func report(w *os.File, all []run, rounds int, asJSON bool) bool {
	sums := map[string]*summary{}
	var keys []string
	for _, g := range []int{1, 8} {
		for _, p := range peers {
			var rs []run
			s := &summary{}
			for _, r := range all {
				if r.Peer == p && r.Goroutines == g {
					rs = append(rs, r)
					if r.Problem != "" {
						s.problems = append(s.problems, r.Problem)
					}
				}
			}
			slices.SortFunc(rs, func(a, b run) int { return cmp.Compare(a.Wall, b.Wall) })
			s.median, s.rounds = rs[len(rs)/2], len(rs)
			k := fmt.Sprint(p, g)
			sums[k] = s
			keys = append(keys, k)
		}
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(all)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Each peer records `func() { defer X(\"x\")() }()` in a loop: 1 goroutine × %d spans, and 8 goroutines × %d. Time from the first span to the file written and closed, per span; GOMAXPROCS %d; median of %d rounds, the peers interleaved. Spans in the file: parsed and counted after every tracer run (X events named \"x\" and B/E pairs). CPU ns/span is the process's CPU time (getrusage, user + system, every thread: recording, encoding, writing, GC) over the same interval, of the same median run: on a loaded machine it moves less than the wall time, which waits for CPU. See the doc comment of cmd/tightloop.\n\n",
		sums[fmt.Sprint(peerTracer, 1)].median.Spans, sums[fmt.Sprint(peerTracer, 8)].median.Spans/8, runtime.GOMAXPROCS(0), rounds)
	b.WriteString("| peer | goroutines | ns/span | vs tracer | CPU ns/span | vs tracer | spans in the file | dropped | file size | problems in any round |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, k := range keys {
		s := sums[k]
		m := s.median
		t := sums[fmt.Sprint(peerTracer, m.Goroutines)].median
		inFile, dropped := "not counted", "n/a"
		switch m.Peer {
		case peerTracer, peerLossless:
			inFile, dropped = fmt.Sprintf("%d of %d", m.InFile, m.Spans), fmt.Sprint(m.Dropped)
		case peerMutex:
			inFile = fmt.Sprintf("%d of %d (records)", m.InFile, m.Spans)
		}
		probs := "none"
		if len(s.problems) > 0 {
			probs = "**" + strings.Join(s.problems, "; ") + "**"
		}
		fmt.Fprintf(&b, "| %s | %d | %.1f | %.2fx | %.1f | %.2fx | %s | %s | %.0f MiB | %s |\n",
			m.Peer, m.Goroutines, m.nsPerSpan(), m.nsPerSpan()/t.nsPerSpan(), m.cpuPerSpan(), m.cpuPerSpan()/t.cpuPerSpan(), inFile, dropped, float64(m.FileSize)/(1<<20), probs)
	}
	b.WriteString("\nTargets (issue 9): every span in the file and 0 dropped, and per span at least 2x faster than runtime/trace regions and than the mutex baseline, for the tracer at defaults and with WithLossless:\n\n")
	b.WriteString("| target | goroutines | wanted | measured | result |\n|---|---|---|---|---|\n")
	ok := true
	for _, g := range []int{1, 8} {
		for _, p := range []string{peerTracer, peerLossless} {
			s := sums[fmt.Sprint(p, g)]
			complete := len(s.problems) == 0
			ok = ok && complete
			got := fmt.Sprintf("every span in the file, 0 dropped, in all %d rounds", s.rounds)
			if !complete {
				got = strings.Join(s.problems, "; ")
			}
			fmt.Fprintf(&b, "| %s: every span in the file, 0 dropped | %d | all | %s | %s |\n", p, g, got, verdict(complete))
			for _, q := range []string{peerRegion, peerMutex} {
				x := sums[fmt.Sprint(q, g)].median.nsPerSpan() / s.median.nsPerSpan()
				fmt.Fprintf(&b, "| %s at least 2x faster than %s | %d | >= 2.00x | %.1f vs %.1f ns/span: %.2fx | %s |\n",
					p, q, g, s.median.nsPerSpan(), sums[fmt.Sprint(q, g)].median.nsPerSpan(), x, verdict(x >= 2))
			}
		}
	}
	fmt.Fprint(w, b.String())
	return ok
}

func verdict(met bool) string {
	if met {
		return "met"
	}
	return "**missed**"
}
