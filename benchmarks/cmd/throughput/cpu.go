//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gotracer/tracer"
	"github.com/gotracer/tracer/benchmarks/internal/spancount"
)

// cpuResult is what the CPU-bound scenario measured.
type cpuResult struct {
	Config       config        `json:"config"`
	Label        string        `json:"label"`
	Work         time.Duration `json:"work"`       // CPU work per span asked
	SpinIters    int           `json:"spin_iters"` // spin iterations calibrated to Work
	Emitted      uint64        `json:"emitted"`    // spans recorded, traced run
	Rate         float64       `json:"rate"`       // spans/s, traced run (first span to Close returning)
	UntracedRate float64       `json:"untraced"`   // spans/s, the same loop with a nil tracer
	InFile       int           `json:"in_file"`    // spans counted in the file
	Stats        tracer.Stats  `json:"stats"`      // of the traced run
	Wall         time.Duration `json:"wall"`       // traced run, first span to Close returning
	CloseTime    time.Duration `json:"close"`      // of which Close
	Pass         bool          `json:"pass"`       // 0 dropped, every span in the file
	WhyFailed    string        `json:"why,omitempty"`
}

// spinSink keeps the spin loops' results alive.
var spinSink atomic.Uint64

// spin runs n rounds of a xorshift generator: CPU work with no memory
// traffic, whose time is proportional to n.
//
//go:noinline
func spin(n int) uint64 {
	x := uint64(88172645463325252)
	for i := 0; i < n; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	return x
}

// calibrate returns the number of spin rounds that take d: the fastest of
// several timings, so that preemption by other processes while calibrating
// does not inflate it.
func calibrate(d time.Duration) int {
	const rounds = 1 << 20
	best := time.Duration(1 << 62)
	for i := 0; i < 15; i++ {
		t0 := time.Now()
		spinSink.Add(spin(rounds))
		best = min(best, time.Since(t0))
	}
	return max(1, int(float64(rounds)*float64(d)/float64(best)))
}

// cpuBound runs the CPU-bound scenario: c.Goroutines goroutines (2 ×
// GOMAXPROCS by default), each recording one span around work of CPU time
// in a loop, for c.Trial, first untraced (a nil tracer) and then into a
// tracer with c's settings. The traced run is timed from the first span
// to Close returning; then the spans in the file are counted.
func cpuBound(c config, work time.Duration) cpuResult {
	r := cpuResult{Config: c, Label: label(c), Work: work, SpinIters: calibrate(work)}
	fmt.Fprintf(os.Stderr, "throughput -mode cpu: %d goroutines, %v of work per span = %d spin rounds, %v per run\n",
		c.Goroutines, work, r.SpinIters, c.Trial)

	n, wall, _ := cpuRun(c, nil, r.SpinIters)
	r.UntracedRate = float64(n) / wall.Seconds()
	fmt.Fprintf(os.Stderr, "throughput -mode cpu: untraced %s spans/s\n", human(r.UntracedRate))

	path := filepath.Join(c.Dir, "cpu.json")
	defer os.Remove(path)
	tr := newTracer(c, path)
	r.Emitted, r.Wall, r.CloseTime = cpuRun(c, tr, r.SpinIters)
	r.Rate = float64(r.Emitted) / r.Wall.Seconds()
	r.Stats = tr.Stats()
	counts, err := spancount.Count(path, "work")
	r.InFile = counts.Spans
	s := r.Stats
	switch {
	case err != nil:
		r.WhyFailed = "reading the file: " + err.Error()
	case s.Dropped > 0 || s.Late > 0 || s.Lost > 0 || s.SinkErrors > 0:
		r.WhyFailed = fmt.Sprintf("dropped %d (late %d, lost %d, sink errors %d) of %d", s.Dropped, s.Late, s.Lost, s.SinkErrors, r.Emitted)
	case uint64(r.InFile) != r.Emitted:
		r.WhyFailed = fmt.Sprintf("%d spans in the file of %d recorded", r.InFile, r.Emitted)
	}
	r.Pass = r.WhyFailed == ""
	fmt.Fprintf(os.Stderr, "throughput -mode cpu: traced %s spans/s, dropped %d, %d of %d spans in the file\n",
		human(r.Rate), s.Dropped, r.InFile, r.Emitted)
	return r
}

// cpuRun runs the CPU-bound loop for c.Trial and returns the spans
// recorded, the time from the first span to the end (Close returning, if
// tr is not nil) and the time Close took.
func cpuRun(c config, tr *tracer.Tracer, iters int) (uint64, time.Duration, time.Duration) {
	runtime.GC()
	var stop atomic.Bool
	var total atomic.Uint64
	var ready, wg sync.WaitGroup
	begin := make(chan struct{})
	for g := 0; g < c.Goroutines; g++ {
		ready.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var n, acc uint64
			ready.Done()
			<-begin
			for !stop.Load() {
				func() {
					defer tr.Span("work")()
					acc += spin(iters)
				}()
				n++
			}
			spinSink.Add(acc)
			total.Add(n)
		}()
	}
	ready.Wait()
	start := time.Now()
	close(begin)
	time.Sleep(c.Trial)
	stop.Store(true)
	wg.Wait()
	var closing time.Duration
	if tr != nil {
		t0 := time.Now()
		if err := tr.Close(); err != nil {
			fatal(err)
		}
		closing = time.Since(t0)
	}
	return total.Load(), time.Since(start), closing
}

func printCPU(r cpuResult, markdown bool) {
	var b strings.Builder
	fmt.Fprintf(&b, "CPU-bound: %d goroutines (GOMAXPROCS %d), each recording a bare span around %v of calibrated CPU work (%d xorshift rounds, no sleeping), for %v, into a file (%s). Traced spans/s counts from the first span to Close returning; the spans are then counted in the file.\n\n",
		r.Config.Goroutines, runtime.GOMAXPROCS(0), r.Work, r.SpinIters, r.Config.Trial, r.Label)
	result := verdict(r.Pass)
	if !r.Pass {
		result += ": " + r.WhyFailed
	}
	overhead := 100 * (r.UntracedRate/r.Rate - 1)
	if markdown {
		b.WriteString("| spans/s traced | spans/s untraced | overhead | spans recorded | spans in the file | dropped | Close took | issue 9 target: 0 dropped, every span in the file |\n")
		b.WriteString("|---|---|---|---|---|---|---|---|\n")
		fmt.Fprintf(&b, "| %s | %s | %+.1f%% | %d | %d | %d | %v | %s |\n",
			human(r.Rate), human(r.UntracedRate), overhead, r.Emitted, r.InFile, r.Stats.Dropped, r.CloseTime.Round(time.Millisecond), result)
	} else {
		fmt.Fprintf(&b, "spans/s traced: %s (untraced %s, overhead %+.1f%%)\nspans recorded: %d, in the file: %d, dropped: %d\nClose took: %v\ntarget (0 dropped, every span in the file): %s\n",
			human(r.Rate), human(r.UntracedRate), overhead, r.Emitted, r.InFile, r.Stats.Dropped, r.CloseTime.Round(time.Millisecond), result)
	}
	fmt.Print(b.String())
}
