//go:build linux

// Command throughput finds the highest rate at which the tracer records
// spans without losing any, with default settings unless told otherwise,
// writing to a real file.
//
// N goroutines (-goroutines) record spans at a controlled total rate for
// -trial each: every goroutine owes rate/N spans a second, catches up on
// what it owes in a batch, then sleeps briefly, so the load is spread over
// time as a server's would be and not one tight loop. A trial passes when
// the tracer dropped nothing (Stats: Dropped, Late, Lost and SinkErrors all
// 0, and every span written) and the goroutines achieved at least 98% of
// the rate asked (so a rate the machine cannot produce is not counted as a
// tracer success). A trial that fails is run once more, and the rate fails
// only if both do, so one burst of load from another process on a shared
// machine does not end the search. The search doubles the rate from -start
// until a rate fails, then bisects between the last pass and the first
// failure.
//
// CPU: at the highest passing rate the same load runs once more with
// tracing off (a nil *tracer.Tracer, whose Span is a no-op). The process
// CPU time (getrusage: user + system, including the final flush in Close)
// of the traced trial minus that of the untraced one is the tracer's cost.
// Each goroutine reads its thread's CPU clock (CLOCK_THREAD_CPUTIME_ID)
// around every batch of recording calls (a batch during which it moved to
// another thread is left out, and the total scaled up from the others);
// the batches' CPU, traced minus untraced, is the cost of the recording
// calls themselves, and what is left is the flusher's (encoding, writing,
// and its polling). Both are reported per million events. CPU time taken
// by other processes does not count, but on a loaded machine the tracer's
// own costs grow (cache misses, preemption). Peak RSS is the process's
// ru_maxrss.
//
// -sweep runs the search once per setting in a child process each (so each
// has its own peak RSS): defaults, then a larger buffer limit and a shorter
// flush interval, to show which settings raise the lossless rate.
//
// -mode cpu runs the CPU-bound scenario instead of the search (cpu.go):
// 2×GOMAXPROCS goroutines each record one span around ~1.5 µs of
// calibrated CPU work, with no pacing and no sleeping, for -trial; it
// reports spans/s traced and untraced, the drops, and the spans counted in
// the file.
//
// It builds on Linux only (thread CPU clocks, getrusage, /proc).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gotracer/tracer"
	"golang.org/x/sys/unix"
)

type config struct {
	Goroutines int           `json:"goroutines"`
	Trial      time.Duration `json:"trial"`
	Limit      int           `json:"limit"` // tracer.WithBufferLimit, bytes; 0: default
	Lossless   bool          `json:"lossless"`
	Flush      time.Duration `json:"flush"` // 0: default
	Start      float64       `json:"start"`
	Max        float64       `json:"max"`
	Bisect     int           `json:"bisect"`
	Args       int           `json:"args"`
	Dir        string        `json:"dir"`
}

// A trial is one run at one rate.
type trial struct {
	Rate       float64       `json:"rate"`     // spans/s asked
	Achieved   float64       `json:"achieved"` // spans/s recorded
	Emitted    uint64        `json:"emitted"`
	Stats      tracer.Stats  `json:"stats"`
	CPU        time.Duration `json:"cpu"`       // process user+system during the trial
	Producers  time.Duration `json:"producers"` // CPU of the recording batches
	Retried    bool          `json:"retried"`   // failed once, then run again
	Traced     bool          `json:"traced"`
	Pass       bool          `json:"pass"`
	Short      bool          `json:"short"` // failed only because the goroutines did not reach the rate
	WhyFailed  string        `json:"why_failed,omitempty"`
	WallPerRun time.Duration `json:"wall"`
}

// A result is what one search found.
type result struct {
	Config       config  `json:"config"`
	Label        string  `json:"label"`
	MaxRate      float64 `json:"max_rate"` // 0: even -start failed
	FirstFail    trial   `json:"first_fail"`
	Best         trial   `json:"best"`
	Untraced     trial   `json:"untraced"`
	FailUntraced trial   `json:"fail_untraced"`              // untraced at the first failing rate, if it failed short
	TracerCPUPM  float64 `json:"tracer_cpu_ms_per_million"`  // ms of CPU per million events
	RecordCPUPM  float64 `json:"record_cpu_ms_per_million"`  // of which recording calls
	FlusherCPUPM float64 `json:"flusher_cpu_ms_per_million"` // of which the flusher
	PeakRSSMiB   float64 `json:"peak_rss_mib"`
	StartRSSMiB  float64 `json:"start_rss_mib"`
	BytesPerEvt  float64 `json:"bytes_per_event"`
	Trials       int     `json:"trials"`
}

func main() {
	var c config
	flag.IntVar(&c.Goroutines, "goroutines", 4, "recording goroutines")
	flag.DurationVar(&c.Trial, "trial", 2*time.Second, "duration of each trial")
	flag.IntVar(&c.Limit, "limit", 0, "tracer.WithBufferLimit, bytes (0: the default)")
	flag.BoolVar(&c.Lossless, "lossless", false, "tracer.WithLossless")
	flag.DurationVar(&c.Flush, "flush", 0, "tracer.WithFlushInterval (0: the default)")
	flag.Float64Var(&c.Start, "start", 50_000, "first rate tried, spans/s")
	flag.Float64Var(&c.Max, "max", 256_000_000, "highest rate tried, spans/s")
	flag.IntVar(&c.Bisect, "bisect", 5, "bisection steps after the doubling phase")
	flag.IntVar(&c.Args, "args", 0, "args per span (0, 1 or 2: an int, then a string)")
	flag.StringVar(&c.Dir, "dir", "", "directory for the trace files (default: a temporary one)")
	mode := flag.String("mode", "paced", "paced: search the highest lossless paced rate; cpu: the CPU-bound scenario")
	work := flag.Duration("work", 1500*time.Nanosecond, "-mode cpu: CPU work per span")
	quick := flag.Bool("quick", false, "short trials and search, for a smoke test")
	sweep := flag.Bool("sweep", false, "search with several settings, each in a child process")
	markdown := flag.Bool("markdown", false, "print the summary as markdown")
	asJSON := flag.Bool("json", false, "print the result as JSON (used by -sweep)")
	flag.Parse()
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *quick {
		c.Trial, c.Bisect = 500*time.Millisecond, 2
	}
	if *mode == "cpu" {
		if !set["goroutines"] {
			c.Goroutines = 2 * runtime.GOMAXPROCS(0)
		}
		if !set["trial"] {
			c.Trial = 5 * time.Second
			if *quick {
				c.Trial = 2 * time.Second
			}
		}
	} else if *mode != "paced" {
		fatal(fmt.Errorf("unknown -mode %q", *mode))
	}
	if c.Dir == "" {
		dir, err := os.MkdirTemp("", "tracer-throughput-")
		if err != nil {
			fatal(err)
		}
		defer os.RemoveAll(dir)
		c.Dir = dir
	}

	if *mode == "cpu" {
		r := cpuBound(c, *work)
		if *asJSON {
			json.NewEncoder(os.Stdout).Encode(r)
			return
		}
		printCPU(r, *markdown)
		if !r.Pass {
			os.Exit(1)
		}
		return
	}
	if *sweep {
		results := runSweep(c, *quick)
		printResults(results, *markdown)
		return
	}
	r := search(c)
	r.Label = label(c)
	if *asJSON {
		json.NewEncoder(os.Stdout).Encode(r)
		return
	}
	printResults([]result{r}, *markdown)
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "throughput:", err)
	os.Exit(1)
}

func label(c config) string {
	var parts []string
	if c.Limit == 0 {
		parts = append(parts, fmt.Sprintf("buffer limit %d MiB (default)", tracer.DefaultBufferLimit>>20))
	} else {
		parts = append(parts, fmt.Sprintf("buffer limit %d MiB", c.Limit>>20))
	}
	if c.Flush == 0 {
		parts = append(parts, fmt.Sprintf("flush %v (default)", tracer.DefaultFlushInterval))
	} else {
		parts = append(parts, fmt.Sprintf("flush %v", c.Flush))
	}
	if c.Lossless {
		parts = append(parts, "WithLossless")
	}
	return strings.Join(parts, ", ")
}

// runSweep runs the search once per setting, each in a child process.
func runSweep(c config, quick bool) []result {
	type setting struct {
		limit int
		flush time.Duration
	}
	settings := []setting{
		{0, 0},
		{4 * tracer.DefaultBufferLimit, 0},
		{0, 10 * time.Millisecond},
	}
	if quick {
		settings = settings[:2]
	}
	exe, err := os.Executable()
	if err != nil {
		fatal(err)
	}
	var out []result
	for _, s := range settings {
		args := []string{"-json",
			"-goroutines", fmt.Sprint(c.Goroutines), "-trial", c.Trial.String(),
			"-limit", fmt.Sprint(s.limit), "-flush", s.flush.String(), "-lossless=" + fmt.Sprint(c.Lossless),
			"-start", fmt.Sprint(c.Start), "-max", fmt.Sprint(c.Max),
			"-bisect", fmt.Sprint(c.Bisect), "-args", fmt.Sprint(c.Args), "-dir", c.Dir}
		cmd := exec.Command(exe, args...)
		cmd.Stderr = os.Stderr
		data, err := cmd.Output()
		if err != nil {
			fatal(fmt.Errorf("child %v: %w", args, err))
		}
		var r result
		if err := json.Unmarshal(data, &r); err != nil {
			fatal(fmt.Errorf("child output: %w", err))
		}
		out = append(out, r)
	}
	return out
}

// search finds the highest lossless rate for c.
func search(c config) result {
	r := result{Config: c, StartRSSMiB: peakRSSMiB()}
	var best, fail trial
	for rate := c.Start; rate <= c.Max; rate *= 2 {
		t := runTwice(c, rate)
		r.Trials++
		if !t.Pass {
			fail = t
			break
		}
		best = t
	}
	if best.Pass && fail.Rate > 0 {
		lo, hi := best.Rate, fail.Rate
		for i := 0; i < c.Bisect; i++ {
			mid := (lo + hi) / 2
			t := runTwice(c, mid)
			r.Trials++
			if t.Pass {
				lo, best = mid, t
			} else {
				hi, fail = mid, t
			}
		}
	}
	r.Best, r.FirstFail = best, fail
	if fail.Short {
		// Tell a machine that cannot produce the rate from a tracer that
		// makes the goroutines wait for its encoder.
		r.FailUntraced = run(c, fail.Rate, false)
	}
	if !best.Pass {
		r.PeakRSSMiB = peakRSSMiB()
		return r
	}
	r.MaxRate = best.Rate
	r.Untraced = run(c, best.Rate, false)
	million := float64(best.Emitted) / 1e6
	total := best.CPU - r.Untraced.CPU
	record := best.Producers - r.Untraced.Producers
	r.TracerCPUPM = ms(total) / million
	r.RecordCPUPM = ms(record) / million
	r.FlusherCPUPM = ms(total-record) / million
	if best.Stats.Events > 0 {
		r.BytesPerEvt = float64(best.Stats.Bytes) / float64(best.Stats.Events)
	}
	r.PeakRSSMiB = peakRSSMiB()
	return r
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// runTwice runs a traced trial and, if it fails, runs it once more: a rate
// fails only when both trials fail. On a shared machine a moment of load
// from another process can starve the flusher once; a rate that fails
// twice in a row is beyond what the tracer sustains.
func runTwice(c config, rate float64) trial {
	t := run(c, rate, true)
	if t.Pass {
		return t
	}
	again := run(c, rate, true)
	again.Retried = true
	if !again.Pass {
		again.WhyFailed = t.WhyFailed + "; again: " + again.WhyFailed
		again.Short = t.Short && again.Short
	}
	return again
}

// run records spans at rate for c.Trial, into a tracer when traced.
func run(c config, rate float64, traced bool) trial {
	t := trial{Rate: rate, Traced: traced}
	var tr *tracer.Tracer // nil: Span is a no-op
	path := filepath.Join(c.Dir, "throughput.json")
	if traced {
		tr = newTracer(c, path)
	}
	runtime.GC() // start every trial from the same heap
	per := rate / float64(c.Goroutines)
	emitted := make([]uint64, c.Goroutines)
	threadCPU := make([]time.Duration, c.Goroutines)
	cpu0 := cpuTime()
	start := time.Now()
	var wg sync.WaitGroup
	for g := 0; g < c.Goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var n, measured uint64 // spans; spans whose batch CPU was measured
			var cpu time.Duration
			for {
				el := time.Since(start)
				if el >= c.Trial {
					break
				}
				due := uint64(el.Seconds() * per)
				if n >= due {
					time.Sleep(500 * time.Microsecond)
					continue
				}
				batch := min(due-n, 1024)
				// The thread's CPU clock around the batch is the batch's
				// CPU time, unless the goroutine moved to another thread
				// in between (it was preempted); such batches are left
				// out and the total scaled up from the others.
				tid, c0 := unix.Gettid(), threadCPUTime()
				for i := uint64(0); i < batch; i++ {
					record(tr, c.Args, int(n+i))
				}
				if unix.Gettid() == tid {
					cpu += threadCPUTime() - c0
					measured += batch
				}
				n += batch
			}
			if measured > 0 {
				cpu = time.Duration(float64(cpu) * float64(n) / float64(measured))
			}
			emitted[g], threadCPU[g] = n, cpu
		}()
	}
	wg.Wait()
	t.WallPerRun = time.Since(start)
	if traced {
		if err := tr.Close(); err != nil {
			fatal(err)
		}
		t.Stats = tr.Stats()
	}
	t.CPU = cpuTime() - cpu0
	for g := range emitted {
		t.Emitted += emitted[g]
		t.Producers += threadCPU[g]
	}
	t.Achieved = float64(t.Emitted) / t.WallPerRun.Seconds()
	os.Remove(path)

	s := t.Stats
	switch {
	case t.Achieved < 0.98*rate:
		t.WhyFailed = fmt.Sprintf("goroutines reached only %s spans/s", human(t.Achieved))
		t.Short = true
	case traced && (s.Dropped > 0 || s.Late > 0 || s.Lost > 0 || s.SinkErrors > 0):
		t.WhyFailed = fmt.Sprintf("dropped %d (late %d, lost %d, sink errors %d) of %d", s.Dropped, s.Late, s.Lost, s.SinkErrors, t.Emitted)
	case traced && s.Events < t.Emitted:
		t.WhyFailed = fmt.Sprintf("wrote %d events of %d", s.Events, t.Emitted)
	}
	t.Pass = t.WhyFailed == ""
	what := "traced"
	if !traced {
		what = "untraced"
	}
	verdict := "lossless"
	if !t.Pass {
		verdict = "FAIL: " + t.WhyFailed
	}
	if !traced {
		verdict = fmt.Sprintf("achieved %s/s", human(t.Achieved))
	}
	fmt.Fprintf(os.Stderr, "throughput [%s]: %s spans/s %s: %s, cpu %v\n", label(c), human(rate), what, verdict, t.CPU.Round(time.Millisecond))
	return t
}

// newTracer starts a tracer writing to path with c's settings.
func newTracer(c config, path string) *tracer.Tracer {
	var opts []tracer.Option
	if c.Limit > 0 {
		opts = append(opts, tracer.WithBufferLimit(c.Limit))
	}
	if c.Flush > 0 {
		opts = append(opts, tracer.WithFlushInterval(c.Flush))
	}
	if c.Lossless {
		opts = append(opts, tracer.WithLossless())
	}
	tr, err := tracer.New(path, opts...)
	if err != nil {
		fatal(err)
	}
	return tr
}

// record records one span with the configured number of args.
func record(t *tracer.Tracer, args, i int) {
	switch args {
	case 0:
		t.Span("work")()
	case 1:
		t.Span("work", tracer.Int("i", i))()
	default:
		t.Span("work", tracer.Int("i", i), tracer.String("kind", "request"))()
	}
}

// threadCPUTime returns the calling thread's CPU time.
func threadCPUTime() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		fatal(err)
	}
	return time.Duration(ts.Nano())
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func peakRSSMiB() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		fatal(err)
	}
	return float64(ru.Maxrss) / 1024 // Linux reports KiB
}

func human(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.0fk", v/1e3)
	default:
		return fmt.Sprintf("%.0f", v)
	}
}

func printResults(rs []result, markdown bool) {
	if len(rs) == 0 {
		return
	}
	c := rs[0].Config
	var b strings.Builder
	fmt.Fprintf(&b, "%d goroutines recording %s at a paced rate, %v per trial, GOMAXPROCS %d, into a file; rate doubled from %s spans/s until a trial lost events, then %d bisection steps. CPU is process CPU (getrusage) of the traced trial at the highest lossless rate minus an untraced trial at the same rate; \"recording calls\" is the CPU time of the recording batches (thread CPU clock; traced minus untraced), \"flusher\" the rest. A failed trial is run once more and a rate fails only if both trials do. See the doc comment of cmd/throughput.\n\n",
		c.Goroutines, spanKind(c.Args), c.Trial, runtime.GOMAXPROCS(0), human(c.Start), c.Bisect)
	if markdown {
		b.WriteString("| settings | highest lossless rate (spans/s) | first failure | tracer CPU per 1M events | of which recording calls | of which flusher | bytes/event | peak RSS |\n")
		b.WriteString("|---|---|---|---|---|---|---|---|\n")
	}
	for _, r := range rs {
		rate := human(r.MaxRate)
		if r.MaxRate == 0 {
			rate = "< " + human(r.Config.Start)
		}
		fail := "none up to -max"
		if r.FirstFail.Rate > 0 {
			fail = fmt.Sprintf("%s: %s", human(r.FirstFail.Rate), r.FirstFail.WhyFailed)
		}
		cpu, rec, fl := "n/a", "n/a", "n/a"
		if r.MaxRate > 0 {
			cpu = fmt.Sprintf("%.0f ms", r.TracerCPUPM)
			rec = fmt.Sprintf("%.0f ms", r.RecordCPUPM)
			fl = fmt.Sprintf("%.0f ms", r.FlusherCPUPM)
			if r.TracerCPUPM < 0 || r.RecordCPUPM < 0 || r.FlusherCPUPM < 0 {
				// The untraced run used more CPU than the traced one: load
				// from other processes swamped the difference.
				cpu = fmt.Sprintf("n/a (noise: %.0f ms)", r.TracerCPUPM)
				rec, fl = "n/a", "n/a"
			}
		}
		rss := fmt.Sprintf("%.0f MiB (%.0f MiB at start)", r.PeakRSSMiB, r.StartRSSMiB)
		if markdown {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %.0f | %s |\n", r.Label, rate, fail, cpu, rec, fl, r.BytesPerEvt, rss)
		} else {
			fmt.Fprintf(&b, "%s:\n  highest lossless rate: %s spans/s\n  first failure: %s\n  tracer CPU per 1M events: %s (recording calls %s, flusher %s)\n  bytes/event: %.0f\n  peak RSS: %s\n",
				r.Label, rate, fail, cpu, rec, fl, r.BytesPerEvt, rss)
		}
	}
	if markdown {
		for _, r := range rs {
			if r.Config.Limit == 0 && r.Config.Flush == 0 && !r.Config.Lossless {
				why := ""
				if r.MaxRate < targetRate && r.FirstFail.Short {
					why = fmt.Sprintf(" (no event was lost: the search stopped because the recording goroutines fell short of %s spans/s, a rate they reached at %s spans/s with tracing off)",
						human(r.FirstFail.Rate), human(r.FailUntraced.Achieved))
				}
				fmt.Fprintf(&b, "\nTarget (issue 9): the highest lossless rate at default settings at least %s spans/s: %s spans/s: %s%s\n",
					human(targetRate), human(r.MaxRate), verdict(r.MaxRate >= targetRate), why)
			}
		}
	}
	fmt.Print(b.String())
}

// targetRate is issue 9's target for the highest lossless rate at default
// settings, spans/s.
const targetRate = 2e6

func verdict(met bool) string {
	if met {
		return "met"
	}
	return "**missed**"
}

func spanKind(args int) string {
	switch args {
	case 0:
		return "bare spans"
	case 1:
		return "spans with one int arg"
	default:
		return "spans with an int and a string arg"
	}
}
