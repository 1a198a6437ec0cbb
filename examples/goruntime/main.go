// Command goruntime traces a worker pool with lock contention and GC
// pressure together with the Go runtime's view of it, and writes
// goruntime.json: open it at https://ui.perfetto.dev. Under each worker's
// track, "worker N (runtime)" shows what the goroutine was doing while its
// spans ran: a slow "job" span sits over a long "blocked" state (reason
// "sync", the shared lock) or a "runnable" one (waiting for a CPU), and
// the "Go GC" and "Go stop-the-world" tracks at the top show the
// collections the allocations caused.
package main

import (
	"log"
	"runtime"
	"sync"
	"time"

	"github.com/gotracer/tracer"
	"github.com/gotracer/tracer/goruntime"
)

func main() {
	t, err := tracer.New("goruntime.json", tracer.WithProcessName("goruntime example"))
	if err != nil {
		log.Fatal(err)
	}
	stop, err := goruntime.Start(t)
	if err != nil {
		log.Fatal(err)
	}
	run(t, 4*runtime.GOMAXPROCS(0), 200)
	if err := stop(); err != nil {
		log.Print(err)
	}
	if err := t.Close(); err != nil {
		log.Fatal(err)
	}
	log.Print("wrote goruntime.json")
}

var (
	mu    sync.Mutex // contended: every tenth job takes it for a while
	sink  [][]byte   // keeps allocations alive for a moment: GC pressure
	total int
)

// run starts workers that take jobs from a channel.
func run(t *tracer.Tracer, workers, jobs int) {
	ch := make(chan int)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.SetGoroutineName("worker " + itoa(w))
			for j := range ch {
				job(t, j)
			}
		}()
	}
	for j := range jobs {
		ch <- j
	}
	close(ch)
	wg.Wait()
}

// job computes, allocates and, every tenth time, holds the shared lock.
func job(t *tracer.Tracer, j int) {
	end := t.Span("job", tracer.Int("n", j))
	defer end()
	buf := make([]byte, 256<<10)
	for i := range buf {
		buf[i] = byte(i * j)
	}
	if j%10 == 0 {
		defer t.Span("critical section")()
		mu.Lock()
		time.Sleep(2 * time.Millisecond)
		sink = append(sink[len(sink)/2:], buf)
		mu.Unlock()
	}
	total += int(buf[j%len(buf)])
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}
