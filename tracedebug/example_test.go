package tracedebug_test

import (
	"log"
	"net/http"
	"time"

	"github.com/gotracer/tracer"
	"github.com/gotracer/tracer/tracedebug"
	"github.com/gotracer/tracer/tracehttp"
)

// The blank import registers the handlers on http.DefaultServeMux: serve
// it on a port of its own, bound to localhost, and ask for a trace with
// `tracer view 'http://localhost:6060/debug/tracer/trace?seconds=5'`.
func Example() {
	go func() { log.Println(http.ListenAndServe("localhost:6060", nil)) }()
}

// A program that serves its own mux mounts the handlers on it, behind its
// own authentication.
func ExampleHandler() {
	mux := http.NewServeMux()
	mux.Handle("/debug/tracer/", requireAdmin(tracedebug.Handler()))
	go func() { log.Println(http.ListenAndServe("localhost:6060", mux)) }()
}

// requireAdmin stands for the program's own authentication.
func requireAdmin(h http.Handler) http.Handler { return h }

// A flight recorder keeps the last seconds in memory; /debug/tracer/recent
// serves them.
func ExampleSetFlightRecorder() {
	r, err := tracer.NewFlightRecorder(tracer.FlightRecorderConfig{MaxAge: 10 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	if err := tracer.SetDefault(r.Tracer()); err != nil { // the package-level functions record into it
		log.Fatal(err)
	}
	tracedebug.SetFlightRecorder(r)
	defer tracer.Stop()
}

// A server that writes the last ten seconds to /var/tmp/slow whenever a
// request takes longer than half a second.
func ExampleCatchSlow() {
	catch, err := tracedebug.CatchSlow(tracedebug.SlowConfig{Dir: "/var/tmp/slow", Threshold: 500 * time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}
	defer catch.Close()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {})
	go func() {
		log.Println(http.ListenAndServe("localhost:8080", catch.Middleware(tracehttp.Middleware(mux))))
	}()
}
