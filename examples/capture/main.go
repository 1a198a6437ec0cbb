// Command capture asks a running server for a trace, the way a Go team
// asks for a profile: the server imports tracedebug, which serves
// /debug/tracer/ on a listener of its own bound to localhost, and a trace
// of the next 0.3 seconds is fetched from it while clients load the server,
// as `tracer view 'http://localhost:6060/debug/tracer/trace?seconds=0.3'`
// would from a shell. The server records nothing until the capture asks:
// its spans cost one atomic load each until then. It leaves capture.json
// in the working directory: open it at https://ui.perfetto.dev.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/gotracer/tracer"
	"github.com/gotracer/tracer/tracedebug"
	"github.com/gotracer/tracer/tracehttp"
)

const clients = 4

func main() {
	// The service, on its own listener.
	mux := http.NewServeMux()
	mux.HandleFunc("GET /items/{id}", item)
	app := serve(tracehttp.Middleware(mux))

	// The debug listener, localhost only: tracedebug's handlers, as the
	// blank import registers them on http.DefaultServeMux.
	debug := serve(tracedebug.Handler())

	ctx, stop := context.WithCancel(context.Background())
	// An idle connection for every client, so that connections (and the
	// server goroutines serving them, each a track) are reused.
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() { load(ctx, client, app, c) })
	}

	resp, err := http.Get("http://" + debug + "/debug/tracer/trace?seconds=0.3")
	if err != nil {
		log.Fatal(err)
	}
	f, err := os.Create("capture.json")
	if err != nil {
		log.Fatal(err)
	}
	n, err := io.Copy(f, resp.Body) // streamed as it is recorded
	resp.Body.Close()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil || resp.StatusCode != http.StatusOK {
		log.Fatalf("capture: %s, %v", resp.Status, err)
	}
	stop()
	wg.Wait()
	fmt.Printf("capture.json: %d bytes, 0.3 seconds of the server under load\n", n)
}

// serve serves h on 127.0.0.1 and returns the address.
func serve(h http.Handler) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go http.Serve(ln, h)
	return ln.Addr().String()
}

// item answers one request: a cache lookup, and on a miss a query.
func item(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	hit := func() bool {
		defer tracer.Span("cache lookup", tracer.String("id", id))()
		return len(id)%2 == 0
	}()
	if !hit {
		defer tracer.Span("db query", tracer.String("table", "items"))()
		spin(200 * time.Microsecond)
	}
	fmt.Fprintf(w, "item %s\n", id)
}

// load sends requests to the app at addr until ctx ends.
func load(ctx context.Context, client *http.Client, addr string, c int) {
	for i := 0; ctx.Err() == nil; i++ {
		req, _ := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("http://%s/items/%d", addr, c*1000+i), nil)
		resp, err := client.Do(req)
		if err != nil {
			continue // ctx ended
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		time.Sleep(2 * time.Millisecond)
	}
}

// spin works for about d, as a query's CPU would.
func spin(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
		runtime.Gosched()
	}
}
