// Package tracedebug serves traces of a running program over HTTP, the way
// net/http/pprof serves its profiles: a trace of the next few seconds on
// demand, and the last seconds a flight recorder kept.
//
// # Quick start
//
// Import the package for its side effect, which registers its handlers on
// http.DefaultServeMux under /debug/tracer/, and serve that mux on a port
// of its own, bound to localhost:
//
//	import _ "github.com/gotracer/tracer/tracedebug"
//
//	go func() { log.Println(http.ListenAndServe("localhost:6060", nil)) }()
//
// Then, from the machine (or through `ssh -L 6060:localhost:6060 host`):
//
//	tracer view http://localhost:6060/debug/tracer/trace?seconds=5
//	curl -o trace.json 'http://localhost:6060/debug/tracer/trace?seconds=5'
//
// A program that serves other muxes mounts Handler where it wants it,
// behind its own authentication:
//
//	mux.Handle("/debug/tracer/", tracedebug.Handler())
//
// # The handlers
//
//   - /debug/tracer/ is an index of the two below, with a form for a
//     capture and a button that opens it in ui.perfetto.dev.
//   - /debug/tracer/trace?seconds=N answers with a trace of the next N
//     seconds (5 by default, at most MaxSeconds; fractions allowed), streamed
//     as it is recorded; gzip=1 compresses it. The program records into it
//     through the package-level functions of package tracer (tracer.Span,
//     tracehttp, traceslog...): while nothing is captured they cost what they
//     cost with tracing off, one atomic load a call. The trace is that
//     window, as `tracer cut` cuts one: a span open when the capture begins
//     begins at its start, one open when it ends ends there. If the
//     program's default tracer runs already (tracer.Start, TRACER_FILE, a
//     flight recorder, tracetest), the capture is a tee of it (see
//     tracer.Tee): its file gets everything as before, and the capture also
//     holds the spans open when it began. Otherwise the capture starts a
//     default tracer for its window, and spans begun before it are not in
//     it (nothing was recorded then); while it runs, tracer.Start and
//     tracer.SetDefault return tracer.ErrStarted. One capture runs at a
//     time: a second gets 409 Conflict. A client that goes away ends the
//     capture; a client that reads too slowly cuts it once it is the
//     tracer's buffer limit behind (it ends as a file cut by a crash does,
//     which both viewers load), rather than hold more memory or slow the
//     program. After the window, the capture waits for its client as
//     long as it reads, and cuts one that leaves a write (at most 32 KiB)
//     untaken for two seconds.
//   - /debug/tracer/recent answers with the window of the flight recorder
//     given to SetFlightRecorder (gzip=1 compresses it), or says how to set
//     one up.
//
// They answer GET only (405 to anything else, HEAD included) and change
// nothing in the program but starting a bounded capture.
//
// # The slow moments, caught by the program
//
// CatchSlow keeps the last seconds in a flight recorder and writes them to
// a directory when a request (through SlowCatcher.Middleware) or a span
// (SlowCatcher.Span) takes longer than a threshold: at most one file an
// interval, the newest few kept, each named by its time and cause:
//
//	catch, err := tracedebug.CatchSlow(tracedebug.SlowConfig{Dir: "/var/tmp/slow", Threshold: 500 * time.Millisecond})
//	if err != nil { ... }
//	defer catch.Close()
//	http.ListenAndServe(addr, catch.Middleware(tracehttp.Middleware(mux)))
//
// # What a trace exposes
//
// A trace holds the names and args of the program's spans, instants and
// counters, its goroutines' names, and its process name: whatever the
// program records, request paths and ids included, as a profile holds
// function names. Serve these handlers only to the people who may see
// that: on a listener bound to localhost, or behind the program's own
// authentication.
package tracedebug

import (
	"net/http"
	"strings"
)

func init() {
	http.Handle("/debug/tracer/", Handler())
}

// Handler returns the handler of the index, /trace and /recent, which
// serves them under any prefix that ends with a slash: mount it at
// "/debug/tracer/", or at another prefix with http.StripPrefix. It
// answers GET only: any other method gets 405 Method Not Allowed.
func Handler() http.Handler { return handler{} }

type handler struct{}

func (handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		// Nothing here changes anything but starting a bounded capture,
		// which a HEAD would start for nothing.
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "tracedebug: "+r.Method+": GET only", http.StatusMethodNotAllowed)
		return
	}
	switch name := r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]; name {
	case "":
		serveIndex(w, r)
	case "trace":
		serveTrace(w, r)
	case "recent":
		serveRecent(w, r)
	default:
		http.Error(w, "tracedebug: no "+name+" here: see the index at ./", http.StatusNotFound)
	}
}
