// Command basic traces a small concurrent program: a pool of workers that
// fetch, decode and store items, with nested spans, named goroutines and
// instants. It writes trace.json in the working directory; open it at
// https://ui.perfetto.dev (Open trace file) or in chrome://tracing.
package main

import (
	"fmt"
	"log"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/gotracer/tracer"
)

func main() {
	if err := tracer.Start("trace.json", tracer.WithProcessName("basic example")); err != nil {
		log.Fatal(err)
	}
	// A deferred Stop also runs when main panics, so the trace of what led
	// to the panic is written and closed.
	defer func() {
		t := tracer.Default()
		if err := tracer.Stop(); err != nil {
			log.Print(err)
		}
		st := t.Stats()
		fmt.Printf("wrote trace.json: %d events, %d dropped; open it at https://ui.perfetto.dev\n", st.Events, st.Dropped)
	}()
	tracer.SetGoroutineName("main")
	defer tracer.Span("main")()

	items := make(chan int)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			worker(w, items)
		}()
	}
	produce(items, 40)
	wg.Wait()
	tracer.InstantProcess("all workers done")
}

func produce(items chan<- int, n int) {
	defer tracer.Span("produce", tracer.Int("items", n))()
	for i := range n {
		items <- i
	}
	close(items)
}

func worker(id int, items <-chan int) {
	tracer.SetGoroutineName(fmt.Sprintf("worker %d", id))
	tracer.SetGoroutineSortIndex(id)
	for item := range items {
		process(item)
	}
}

func process(item int) {
	defer tracer.Span("process", tracer.Int("item", item))()
	fetch(item)
	decode(item)
	if item%7 == 0 {
		tracer.Instant("cache miss", tracer.Int("item", item))
		busy(300 * time.Microsecond)
	}
	store(item)
}

func fetch(item int) {
	defer tracer.Span("fetch")()
	time.Sleep(time.Duration(100+rand.IntN(400)) * time.Microsecond)
}

func decode(item int) {
	defer tracer.Span("decode", tracer.String("codec", "json"))()
	busy(time.Duration(50+rand.IntN(150)) * time.Microsecond)
}

func store(item int) {
	defer tracer.Span("store", tracer.Bool("sync", item%5 == 0))()
	time.Sleep(50 * time.Microsecond)
}

// busy spins for d, standing in for CPU work.
func busy(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
	}
}
