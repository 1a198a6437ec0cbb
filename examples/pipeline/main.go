// Command pipeline traces a producer, a pool of workers and a consumer
// joined by channels, and shows every kind of event the tracer records:
//
//   - spans on each goroutine's track (produce, decode, resize, store),
//   - a flow arrow per job from the producer's span to the worker's span
//     to the consumer's span,
//   - an async slice per job, from the moment it is queued to the moment
//     it is stored, on a track of its own,
//   - counters for the queue depth and the jobs in flight,
//   - categories ("pipeline", "io", "cpu") that can be switched off,
//   - instants for retries, and metadata naming every goroutine.
//
// It writes pipeline.json in the working directory; open it at
// https://ui.perfetto.dev or in chrome://tracing.
package main

import (
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gotracer/tracer"
)

// Categories are registered once; passing them is free afterwards.
var (
	catPipeline = tracer.Category("pipeline")
	catIO       = tracer.Category("io")
	catCPU      = tracer.Category("cpu")
)

// A job travels through the pipeline with the handles that follow it: the
// flow for the arrows and the async operation for its own track.
type job struct {
	id   int
	size int
	flow tracer.Flow
	op   tracer.Async
}

func main() {
	out := flag.String("o", "pipeline.json", "trace file to write")
	jobs := flag.Int("jobs", 60, "jobs to run")
	workers := flag.Int("workers", 4, "worker goroutines")
	categories := flag.String("categories", "", "comma-separated categories to record (default: all)")
	flag.Parse()

	var opts []tracer.Option
	if *categories != "" {
		opts = append(opts, tracer.WithCategories(strings.Split(*categories, ",")...))
	}
	opts = append(opts, tracer.WithProcessName("pipeline example"), tracer.WithProcessLabels("example"))
	if err := tracer.Start(*out, opts...); err != nil {
		log.Fatal(err)
	}
	defer func() {
		t := tracer.Default()
		if err := tracer.Stop(); err != nil {
			log.Print(err)
		}
		st := t.Stats()
		fmt.Printf("wrote %s: %d events, %d dropped; open it at https://ui.perfetto.dev\n", *out, st.Events, st.Dropped)
	}()
	tracer.SetGoroutineName("main")

	p := newPipeline(*workers)
	p.run(*jobs)
}

type pipeline struct {
	queue    chan job
	done     chan job
	inFlight atomic.Int64
	workers  int
}

func newPipeline(workers int) *pipeline {
	return &pipeline{queue: make(chan job, 8), done: make(chan job, 8), workers: workers}
}

func (p *pipeline) run(jobs int) {
	defer tracer.Span("pipeline", catPipeline, tracer.Int("jobs", jobs), tracer.Int("workers", p.workers))()
	var wg sync.WaitGroup
	for w := range p.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.worker(w)
		}()
	}
	consumed := make(chan struct{})
	go func() {
		p.consume()
		close(consumed)
	}()
	p.produce(jobs)
	wg.Wait()
	close(p.done)
	<-consumed
	tracer.InstantProcess("pipeline drained", catPipeline)
}

func (p *pipeline) produce(n int) {
	tracer.SetGoroutineSortIndex(0)
	for i := range n {
		func() {
			defer tracer.Span("produce", catPipeline, tracer.Int("job", i))()
			time.Sleep(time.Duration(100+rand.IntN(200)) * time.Microsecond)
			j := job{id: i, size: 1 + rand.IntN(8)}
			j.op = tracer.AsyncBegin("job", catPipeline, tracer.Int("job", i), tracer.Int("size", j.size))
			j.flow = tracer.FlowBegin("job", catPipeline)
			p.inFlight.Add(1)
			p.queue <- j
			p.counters()
		}()
	}
	close(p.queue)
}

func (p *pipeline) worker(id int) {
	tracer.SetGoroutineName(fmt.Sprintf("worker %d", id))
	tracer.SetGoroutineSortIndex(1 + id)
	for j := range p.queue {
		p.counters()
		p.process(j)
		p.done <- j
	}
}

func (p *pipeline) process(j job) {
	defer tracer.Span("process", catPipeline, tracer.Int("job", j.id))()
	j.flow.Step()
	work := j.op.Begin("work")
	defer work.End()

	decode(j)
	if j.id%9 == 4 {
		tracer.Instant("retry", catIO, tracer.Int("job", j.id), tracer.String("reason", "checksum mismatch"))
		j.op.Instant("retried")
		decode(j)
	}
	resize(j)
}

func decode(j job) {
	defer tracer.Span("decode", catIO, tracer.Int("bytes", j.size<<10))()
	time.Sleep(time.Duration(j.size*60) * time.Microsecond)
}

func resize(j job) {
	defer tracer.Span("resize", catCPU, tracer.Float64("scale", 0.5))()
	for start := time.Now(); time.Since(start) < time.Duration(j.size*40)*time.Microsecond; {
	}
}

func (p *pipeline) consume() {
	tracer.SetGoroutineName("consumer")
	tracer.SetGoroutineSortIndex(100)
	for j := range p.done {
		func() {
			defer tracer.Span("store", catIO, tracer.Int("job", j.id))()
			j.flow.End()
			time.Sleep(50 * time.Microsecond)
			j.op.End(tracer.Bool("ok", true))
			p.inFlight.Add(-1)
			p.counters()
		}()
	}
}

// counters samples the pipeline's state onto two series of one counter.
func (p *pipeline) counters() {
	tracer.Counter("pipeline", catPipeline,
		tracer.Int("queue depth", len(p.queue)),
		tracer.Int64("jobs in flight", p.inFlight.Load()))
}
