// Command httpserver traces a small web service under load with the
// integrations: tracehttp on the server and its clients, traceslog for the
// logs, traceruntime for memory and GC, and the context helpers to fan a
// request out to goroutines. It serves on 127.0.0.1 for three seconds
// while four clients send requests, then exits, leaving httpserver.json
// in the working directory: open it at https://ui.perfetto.dev.
//
// TRACER_FILE=other.json go run ./examples/httpserver writes there
// instead: the program then only adds to the tracer TRACER_FILE started.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/gotracer/tracer"
	"github.com/gotracer/tracer/tracehttp"
	"github.com/gotracer/tracer/traceruntime"
	"github.com/gotracer/tracer/traceslog"
)

const (
	runFor  = 3 * time.Second
	clients = 4
)

func main() {
	err := tracer.Start("httpserver.json", tracer.WithProcessName("httpserver example"))
	if err != nil && !errors.Is(err, tracer.ErrStarted) { // ErrStarted: TRACER_FILE did it
		log.Fatal(err)
	}
	defer tracer.Stop()
	tracer.StopOnSignal()
	tracer.SetGoroutineName("main")
	defer traceruntime.Start(50 * time.Millisecond)()

	slog.SetDefault(slog.New(traceslog.NewHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}), nil)))

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Handler: tracehttp.Middleware(newMux())}
	go srv.Serve(ln)

	ctx, cancel := context.WithTimeout(context.Background(), runFor)
	defer cancel()
	// Enough idle connections for every client, so that connections (and
	// the server goroutines serving them, each a track) are reused.
	client := &http.Client{Transport: tracehttp.Transport(&http.Transport{MaxIdleConnsPerHost: clients})}
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() { load(ctx, client, c, "http://"+ln.Addr().String()) })
	}
	wg.Wait()
	srv.Shutdown(context.Background())

	st := tracer.Default().Stats()
	fmt.Printf("%d events, %d dropped; open the trace at https://ui.perfetto.dev\n", st.Events, st.Dropped)
}

func newMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /items/{id}", getItem)
	mux.HandleFunc("POST /orders", postOrder)
	return mux
}

// getItem looks an item up in a cache, and in the database on a miss.
func getItem(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	func() {
		defer tracer.Span("cache lookup", tracer.String("id", id))()
		time.Sleep(time.Duration(rand.IntN(300)) * time.Microsecond)
	}()
	if rand.IntN(4) == 0 {
		slog.Warn("cache miss", "id", id)
		defer tracer.Span("db query", tracer.String("table", "items"))()
		time.Sleep(time.Duration(2+rand.IntN(8)) * time.Millisecond)
	}
	fmt.Fprintf(w, `{"id":%q}`, id)
}

// postOrder checks stock and charges the card at once, on two goroutines,
// each handed a flow from the request's span through a context.
func postOrder(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var wg sync.WaitGroup
	func() {
		defer tracer.Span("fan out", tracer.Int("bytes", len(body)))()
		for _, step := range []string{"check stock", "charge card"} {
			ctx := tracer.ContextWithFlow(r.Context(), tracer.FlowBegin(step))
			wg.Go(func() { runStep(ctx, step) })
		}
	}()
	wg.Wait()
	if rand.IntN(10) == 0 {
		slog.Error("payment declined", "order", len(body))
		http.Error(w, "payment declined", http.StatusPaymentRequired)
		return
	}
	w.WriteHeader(http.StatusCreated)
	io.WriteString(w, `{"ok":true}`)
}

// runStep is one step of an order, on a goroutine of its own: its span
// ends the flow the context carries, an arrow from the request's span.
func runStep(ctx context.Context, step string) {
	defer tracer.Span(step)()
	tracer.FlowFromContext(ctx).End()
	time.Sleep(time.Duration(1+rand.IntN(5)) * time.Millisecond)
}

// load sends requests until ctx ends, from a goroutine named after the
// client, through the tracing Transport.
func load(ctx context.Context, client *http.Client, c int, base string) {
	tracer.SetGoroutineName(fmt.Sprintf("client %d", c))
	for n := 0; ctx.Err() == nil; n++ {
		func() {
			defer tracer.Span("client request", tracer.Int("n", n))()
			method, url := "GET", fmt.Sprintf("%s/items/%d", base, rand.IntN(100))
			if n%5 == 4 {
				method, url = "POST", base+"/orders"
			}
			req, _ := http.NewRequestWithContext(ctx, method, url, nil)
			resp, err := client.Do(req)
			if err != nil {
				return // the run ended mid-request
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}()
		time.Sleep(time.Duration(rand.IntN(20)) * time.Millisecond)
	}
}
