// Command flightrecorder keeps the last two seconds of a web service's
// trace in memory and writes them to a file only when a request is slow:
// the trace of what led up to the slow request, at the cost of recording
// and no file until then. It serves on 127.0.0.1 for three seconds under
// load, one request in fifty being slow, and writes slow-request.json the
// first time one takes longer than 50ms (later ones are counted, not
// written, so a burst of slow requests does not become a burst of files).
// Open the file at https://ui.perfetto.dev.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gotracer/tracer"
	"github.com/gotracer/tracer/tracehttp"
	"github.com/gotracer/tracer/traceruntime"
)

const (
	slow    = 50 * time.Millisecond
	runFor  = 3 * time.Second
	dumpTo  = "slow-request.json"
	clients = 4
)

func main() {
	rec, err := tracer.NewFlightRecorder(tracer.FlightRecorderConfig{MaxAge: 2 * time.Second},
		tracer.WithProcessName("flightrecorder example"))
	if err != nil {
		log.Fatal(err)
	}
	if err := tracer.SetDefault(rec.Tracer()); err != nil {
		log.Fatal(err)
	}
	defer tracer.Stop() // discards the window: nothing is written unless asked
	defer traceruntime.Start(50 * time.Millisecond)()

	var slowSeen atomic.Int64
	dump := func(r *http.Request, took time.Duration) {
		if slowSeen.Add(1) > 1 {
			return
		}
		tracer.Instant("slow request", tracer.String("path", r.URL.Path), tracer.Int64("took_us", took.Microseconds()))
		if err := rec.WriteFile(dumpTo); err != nil {
			log.Print(err)
			return
		}
		fmt.Printf("%s took %v: wrote the last 2s to %s\n", r.URL.Path, took.Round(time.Millisecond), dumpTo)
	}

	mux := http.NewServeMux()
	mux.HandleFunc("GET /work/{n}", work)
	// watchdog is outermost, so that the request's own span has ended and
	// is in the window when it writes the file.
	watchdog := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			next.ServeHTTP(w, r)
			if took := time.Since(start); took > slow {
				dump(r, took)
			}
		})
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Handler: watchdog(tracehttp.Middleware(mux))}
	go srv.Serve(ln)

	ctx, cancel := context.WithTimeout(context.Background(), runFor)
	defer cancel()
	client := &http.Client{Transport: tracehttp.Transport(&http.Transport{MaxIdleConnsPerHost: clients})}
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			tracer.SetGoroutineName(fmt.Sprintf("client %d", c))
			for n := 0; ctx.Err() == nil; n++ {
				req, _ := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("http://%s/work/%d", ln.Addr(), n), nil)
				if resp, err := client.Do(req); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				time.Sleep(time.Duration(rand.IntN(10)) * time.Millisecond)
			}
		})
	}
	wg.Wait()
	srv.Shutdown(context.Background())
	fmt.Printf("%d slow requests\n", slowSeen.Load())
}

// work usually takes a millisecond or two; one request in fifty waits on a
// lock held too long.
func work(w http.ResponseWriter, r *http.Request) {
	defer tracer.Span("compute", tracer.String("n", r.PathValue("n")))()
	time.Sleep(time.Duration(500+rand.IntN(1500)) * time.Microsecond)
	if rand.IntN(50) == 0 {
		defer tracer.Span("waiting for lock")()
		time.Sleep(slow + time.Duration(rand.IntN(50))*time.Millisecond)
	}
	io.WriteString(w, "done")
}
