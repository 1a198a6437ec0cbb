// Package traceruntime puts the Go runtime's own numbers on the trace
// timeline: heap, goroutines, garbage collections, GC pauses and
// scheduling latency, sampled from runtime/metrics at an interval and
// recorded as counters, so memory and GC show next to the spans.
//
// # Quick start
//
//	tracer.Start("trace.json")
//	defer tracer.Stop()
//	defer traceruntime.Start(100 * time.Millisecond)()
//
// # What the trace shows
//
// Counters belong to the process; Perfetto draws one track per series,
// named "counter series":
//
//	runtime.heap        in_use, goal, total: bytes of live and dead heap
//	                    objects not yet swept, the heap size the GC aims at,
//	                    and all memory mapped by the runtime
//	runtime.alloc       bytes_per_s: heap allocation rate over the interval
//	runtime.goroutines  count
//	runtime.gc          cycles: completed GC cycles since the program started
//	runtime.gc_pause    p50_us, p99_us, max_us: stop-the-world pauses for GC
//	                    during the interval
//	runtime.sched       p50_us, p99_us, max_us: time goroutines waited to
//	                    run after becoming runnable, during the interval
//
// Percentiles come from the runtime's histograms, so they are bucket
// bounds (within about 12% of the true value), and are 0 for an interval
// with no pause or no scheduling.
//
// # Cost
//
// One sample reads eight metrics and records six counter events: a few
// microseconds on the sampler's goroutine, nothing elsewhere. While the
// default tracer is not running it records nothing, but still reads the
// metrics, so that the first sample after tracing starts covers one
// interval.
package traceruntime

import (
	"math"
	"runtime/metrics"
	"sync"
	"time"

	"github.com/gotracer/tracer"
)

// MinInterval is the shortest interval Start accepts; shorter ones are
// raised to it.
const MinInterval = time.Millisecond

// Start samples the runtime every interval into the default tracer, from a
// goroutine of its own, until the returned function is called. The first
// sample is taken before Start returns; stop takes a last one, so the
// counters span the traced work, and returns when sampling has stopped.
func Start(interval time.Duration) (stop func()) {
	interval = max(interval, MinInterval)
	s := newSampler()
	s.sample(tracer.Default())
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		tracer.SetGoroutineName("traceruntime sampler")
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				s.sample(tracer.Default())
			case <-done:
				s.sample(tracer.Default())
				return
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			<-exited
		})
	}
}

// The metrics read, in the order of sampler.samples.
var names = []string{
	"/memory/classes/heap/objects:bytes",
	"/gc/heap/goal:bytes",
	"/memory/classes/total:bytes",
	"/gc/heap/allocs:bytes",
	"/sched/goroutines:goroutines",
	"/gc/cycles/total:gc-cycles",
	"/sched/pauses/total/gc:seconds",
	"/sched/latencies:seconds",
}

const (
	heapObjects = iota
	heapGoal
	memTotal
	allocs
	goroutines
	gcCycles
	gcPauses
	schedLatencies
)

// A sampler reads the metrics and keeps what the next sample needs to
// tell what happened in the interval: the previous histograms and
// allocation total.
type sampler struct {
	samples    []metrics.Sample
	prevPauses []uint64
	prevLat    []uint64
	pauses     []uint64 // the last interval's counts, reused
	lat        []uint64
	prevAllocs uint64
	prevAt     time.Time
}

func newSampler() *sampler {
	s := &sampler{samples: make([]metrics.Sample, len(names))}
	for i, n := range names {
		s.samples[i].Name = n
	}
	return s
}

// sample reads the metrics and records them into t, if t is not nil. It
// reads them even when t is nil, so that the first sample after tracing
// starts covers one interval rather than the whole run.
func (s *sampler) sample(t *tracer.Tracer) {
	now := time.Now()
	metrics.Read(s.samples)
	u := func(i int) uint64 {
		if s.samples[i].Value.Kind() != metrics.KindUint64 {
			return 0 // not in this Go version
		}
		return s.samples[i].Value.Uint64()
	}
	pauses := histogramDelta(&s.samples[gcPauses], &s.prevPauses, &s.pauses)
	lat := histogramDelta(&s.samples[schedLatencies], &s.prevLat, &s.lat)
	allocated := u(allocs) - s.prevAllocs
	secs := now.Sub(s.prevAt).Seconds()
	first := s.prevAt.IsZero()
	s.prevAllocs, s.prevAt = u(allocs), now
	if t == nil {
		return
	}
	t.Counter("runtime.heap",
		tracer.Uint64("in_use", u(heapObjects)),
		tracer.Uint64("goal", u(heapGoal)),
		tracer.Uint64("total", u(memTotal)))
	if !first && secs > 0 {
		t.Counter("runtime.alloc", tracer.Float64("bytes_per_s", math.Round(float64(allocated)/secs)))
	}
	t.Counter("runtime.goroutines", tracer.Uint64("count", u(goroutines)))
	t.Counter("runtime.gc", tracer.Uint64("cycles", u(gcCycles)))
	if !first {
		p50, p99, most := quantiles(pauses)
		t.Counter("runtime.gc_pause", tracer.Float64("p50_us", p50), tracer.Float64("p99_us", p99), tracer.Float64("max_us", most))
		p50, p99, most = quantiles(lat)
		t.Counter("runtime.sched", tracer.Float64("p50_us", p50), tracer.Float64("p99_us", p99), tracer.Float64("max_us", most))
	}
}

// delta is a histogram's counts over one interval.
type delta struct {
	counts  []uint64
	buckets []float64
}

// histogramDelta returns what s's histogram counted since prev, in buf,
// and makes prev its current counts.
func histogramDelta(s *metrics.Sample, prev, buf *[]uint64) delta {
	if s.Value.Kind() != metrics.KindFloat64Histogram {
		return delta{}
	}
	h := s.Value.Float64Histogram()
	d := delta{counts: (*buf)[:0], buckets: h.Buckets}
	for i, c := range h.Counts {
		if i < len(*prev) {
			c -= (*prev)[i]
		}
		d.counts = append(d.counts, c)
	}
	*buf = d.counts
	*prev = append((*prev)[:0], h.Counts...)
	return d
}

// quantiles returns the 50th and 99th percentiles and the maximum of d, in
// microseconds: the upper bound of the bucket each falls in (its lower
// bound for the last, unbounded bucket).
func quantiles(d delta) (p50, p99, most float64) {
	var total uint64
	for _, c := range d.counts {
		total += c
	}
	at := func(q float64) float64 {
		if total == 0 {
			return 0
		}
		rank := uint64(math.Ceil(q * float64(total)))
		var seen uint64
		for i, c := range d.counts {
			seen += c
			if c > 0 && seen >= rank {
				bound := d.buckets[i+1]
				if math.IsInf(bound, 1) {
					bound = d.buckets[i]
				}
				return math.Round(bound*1e9) / 1e3 // seconds to µs, to the ns
			}
		}
		return 0
	}
	return at(0.5), at(0.99), at(1)
}
