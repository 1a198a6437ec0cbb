//go:build unix

// Package goruntime measures what the runtime's view costs a program: the
// overhead on a worker pool that records a span per job, the bytes it adds
// to the file per second, and how fast an execution trace converts. Run:
//
//	go test -run '^$' -bench . -count 6 ./goruntime | tee new.txt && benchstat new.txt
//
// Results and the defaults chosen from them: docs/goruntime.md.
package goruntime

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	rtrace "runtime/trace"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gotracer/tracer"
	"github.com/gotracer/tracer/benchmarks/internal/spancount"
	"github.com/gotracer/tracer/goruntime"
	"golang.org/x/exp/trace"
)

// sink keeps the compiler from removing the work.
var sink uint64

// work is about 5µs of CPU: the body of one job.
func work(seed uint64) uint64 {
	h := seed | 1
	for range 2500 {
		h ^= h << 13
		h ^= h >> 7
		h ^= h << 17
	}
	return h
}

// pool runs n jobs on workers goroutines fed by a channel, each job a span
// around work: the scheduling a real pool does (workers blocking on the
// channel and woken by the sender) with spans on every worker.
func pool(t *tracer.Tracer, workers, n int) {
	jobs := make(chan uint64, workers)
	var wg sync.WaitGroup
	var mu sync.Mutex
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := uint64(0)
			for j := range jobs {
				end := t.Span("job")
				local += work(j)
				end()
			}
			mu.Lock()
			sink += local
			mu.Unlock()
		}()
	}
	for i := range n {
		jobs <- uint64(i)
	}
	close(jobs)
	wg.Wait()
}

const workers = 8

// cpuTime is the CPU time the process used so far, every thread: on two
// cores a pool's wall time hides work done by the otherwise idle core
// (the converter), and its scheduling (idle Ps parking) moves the wall
// time by more than tracing does.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkPool is the overhead a user sees: ns per job of the pool with
// spans only, with the execution tracer running but nothing converted
// (its own cost), and with the runtime's view at the defaults and
// keeping everything. file-B/s is what the file grows by per second of
// the busy pool.
func BenchmarkPool(b *testing.B) {
	for _, bc := range []struct {
		name    string
		runtime bool
		exec    bool
		opts    []goruntime.Option
	}{
		{name: "spans"},
		{name: "spans+exectrace", exec: true},
		{name: "spans+goruntime", runtime: true},
		{name: "spans+goruntime/min=1us", runtime: true, opts: []goruntime.Option{goruntime.WithMinState(time.Microsecond)}},
		{name: "spans+goruntime/min=0", runtime: true, opts: []goruntime.Option{goruntime.WithMinState(0)}},
		{name: "spans+goruntime/all/min=0", runtime: true, opts: []goruntime.Option{goruntime.WithMinState(0), goruntime.WithAllGoroutines()}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "trace.json")
			t, err := tracer.New(path)
			if err != nil {
				b.Fatal(err)
			}
			stop := func() error { return nil }
			if bc.runtime {
				if stop, err = goruntime.Start(t, bc.opts...); err != nil {
					b.Fatal(err)
				}
			}
			if bc.exec {
				if err := rtrace.Start(io.Discard); err != nil {
					b.Fatal(err)
				}
				stop = func() error { rtrace.Stop(); return nil }
			}
			b.ResetTimer()
			start, cpu0 := time.Now(), cpuTime()
			pool(t, workers, b.N)
			if err := stop(); err != nil {
				b.Fatal(err) // goruntime's drops among them: a run that drops measures the drop path
			}
			if err := t.Close(); err != nil {
				b.Fatal(err)
			}
			elapsed, cpu := time.Since(start), cpuTime()-cpu0
			b.StopTimer()
			// Count what reached the file: every job's span, none dropped.
			if st := t.Stats(); st.Dropped+st.Lost > 0 {
				b.Fatalf("the tracer dropped %d and lost %d events", st.Dropped, st.Lost)
			}
			if c, err := spancount.Count(path, "job"); err != nil || c.Spans != b.N {
				b.Fatalf("%d of %d job spans in the file (%v)", c.Spans, b.N, err)
			}
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/job")
			fi, err := os.Stat(path)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(fi.Size())/elapsed.Seconds(), "file-B/s")
			b.ReportMetric(float64(fi.Size())/float64(b.N), "file-B/job")
		})
	}
}

// poolTrace is an execution trace of the pool: 20000 jobs.
var poolTrace = sync.OnceValue(func() []byte {
	var buf bytes.Buffer
	if err := rtrace.Start(&buf); err != nil {
		panic(err)
	}
	pool(nil, workers, 20000)
	rtrace.Stop()
	return buf.Bytes()
})

// countEvents returns the number of events the parser reads from data.
func countEvents(data []byte) int {
	r, err := trace.NewReader(bytes.NewReader(data))
	if err != nil {
		panic(err)
	}
	n := 0
	for {
		if _, err := r.ReadEvent(); err != nil {
			return n
		}
		n++
	}
}

// BenchmarkConvert is the conversion rate: MB/s of execution trace and
// events/s read, parsing included (it is most of the cost), at the
// defaults and keeping every state; parse-only is the parser alone.
func BenchmarkConvert(b *testing.B) {
	data := poolTrace()
	events := countEvents(data)
	for _, bc := range []struct {
		name      string
		parseOnly bool
		opts      []goruntime.Option
	}{
		{name: "parse-only", parseOnly: true},
		{name: "default"},
		{name: "min=0", opts: []goruntime.Option{goruntime.WithMinState(0)}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			out := 0
			for range b.N {
				if bc.parseOnly {
					countEvents(data)
					continue
				}
				var w countingWriter
				if _, err := goruntime.Convert(&w, bytes.NewReader(data), goruntime.ConvertConfig{}, bc.opts...); err != nil {
					b.Fatal(err)
				}
				out = w.n
			}
			b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(events)/20000, "exec-events/job")
			if out > 0 {
				b.ReportMetric(float64(out)/float64(len(data)), "out-B/in-B")
			}
		})
	}
}

type countingWriter struct{ n int }

func (w *countingWriter) Write(p []byte) (int, error) { w.n += len(p); return len(p), nil }
