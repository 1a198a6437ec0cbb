// Package tracehttp traces HTTP servers and clients: a middleware that
// records every request a server handles, and a RoundTripper that records
// every request a client sends.
//
// # Quick start
//
//	mux := http.NewServeMux()
//	mux.HandleFunc("GET /items/{id}", getItem)
//	http.ListenAndServe(addr, tracehttp.Middleware(mux))          // server
//
//	client := &http.Client{Transport: tracehttp.Transport(nil)} // client
//
// Both record into the default tracer (tracer.Start, tracer.SetDefault, or
// TRACER_FILE) and cost one atomic load a request when it is not running.
//
// # What the trace shows
//
// For each request a server handles, Middleware records:
//
//   - a span on the goroutine that serves it, named by the method and the
//     route pattern that matched ("GET /items/{id}"), with the method,
//     route, path and W3C trace id (trace_id) as args and, from its end,
//     the status and the response bytes, so the handler's own spans nest
//     in it;
//   - an async slice of the same name on the process's request tracks,
//     whose end carries the status and the response bytes, so that
//     requests served at the same time show side by side as concurrent;
//     handlers reach it through tracer.AsyncFromContext(r.Context()).
//
// For each request a client sends, Transport records a span on the
// calling goroutine ("HTTP GET", with host, url.path and the traceparent
// it sent) and an async slice, with the trace id, whose end carries the
// status or the error.
//
// # Across processes: W3C Trace Context
//
// Requests carry W3C Trace Context (https://www.w3.org/TR/trace-context/)
// down the call chain. Middleware reads the traceparent header of each
// request it serves; when it is valid (checked against the
// specification), the request belongs to that trace, and when it is
// missing or invalid, the request starts a new one (a random trace id,
// flagged sampled). Transport sends a traceparent with every request: the
// one the request has already, if any (set by OpenTelemetry's otelhttp,
// say), left as it is with its tracestate; else, for a request made with
// the context of a request Middleware serves (r.Context()), one with that
// request's trace id and flags and a new parent id, the request's
// tracestate along with it; else one that starts a new trace. The
// server's span and the client's async slice carry the trace id as the arg
// "trace_id" (the client's span carries the whole header, see below), so
// that one request's slices are found by it across processes
// (json_extract_string(args, '$.trace_id') in tracer sql), and
// OpenTelemetry-instrumented services before and after join the same
// trace. The trace id is only an id: it
// changes nothing else in what is recorded.
//
// The client's span carries the traceparent it sent as the arg
// "traceparent.out". When the server is in the same process, a flow draws
// an arrow from the client's span to the server's; when the client is
// elsewhere, the server's span carries the header as the arg
// "traceparent.in", and `tracer merge` of the files of both processes
// binds the two spans with an arrow (bind_id, flow_out and flow_in). A
// header from outside ends a flow of this process only if it carries the
// parent id of a request this process sent.
//
// With OpenTelemetry, wrap Transport in otelhttp's, not the other way
// round: otelhttp.NewTransport(tracehttp.Transport(nil)) lets
// OpenTelemetry set the traceparent that Transport then records, where
// the other order would have it replace the one Transport recorded.
//
// # Routes
//
// A request's span is named by its route when the route is known before
// the handler runs: when the handler Middleware wraps is an
// *http.ServeMux (Go 1.22 patterns), or through MiddlewareWithRoute, on
// which the packages for chi and gorilla/mux are built (module
// github.com/gotracer/tracer/tracehttp/routers: tracechi.Middleware,
// tracegorilla.Middleware). Around any other handler the span is named
// "HTTP GET", and the route, read from Request.Pattern once the handler
// has run, goes on the ends of the span and of the async slice, if the
// handler set it on the request it was given: a ServeMux behind another
// handler does, and so does chi for middleware mounted inside the router
// (r.Use), but http.StripPrefix and gorilla/mux route a copy, and the
// route is lost.
package tracehttp

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/gotracer/tracer"
	"github.com/gotracer/tracer/internal/traceparent"
)

// The headers of W3C Trace Context, in the canonical form of net/http.
const (
	traceparentHeader = "Traceparent"
	tracestateHeader  = "Tracestate"
)

var (
	catServer = tracer.Category("http")
	catClient = tracer.Category("http.client")
)

// Middleware returns a handler that records every request next serves; see
// the package documentation for what it records. When next is an
// *http.ServeMux, each request's span is named by the pattern that
// matches it; for another router, see MiddlewareWithRoute.
func Middleware(next http.Handler) http.Handler {
	if mux, ok := next.(*http.ServeMux); ok {
		return &handler{next: next, route: func(r *http.Request) string {
			_, pattern := mux.Handler(r) // routing twice: a few hundred ns, and only when tracing
			return pattern
		}}
	}
	return &handler{next: next}
}

// MiddlewareWithRoute is Middleware for a router that can tell, before it
// serves a request, which of its routes the request takes: route returns
// that route's pattern, with or without a method ("/items/{id}" or
// "GET /items/{id}"), or "" if none matches. The request's span and async
// slice are named by it from their start, as Middleware names them for an
// *http.ServeMux, so that a span written as a begin event while the
// request runs has the route's name too.
//
// route is called once a request, on the request as it reaches the
// middleware, and only while the default tracer runs; it must not change
// the request. The router packages under tracehttp/routers (chi,
// gorilla/mux) are built on it.
func MiddlewareWithRoute(next http.Handler, route func(r *http.Request) string) http.Handler {
	return &handler{next: next, route: route}
}

type handler struct {
	next  http.Handler
	route func(*http.Request) string // if the route is known up front
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if tracer.Default() == nil {
		h.next.ServeHTTP(w, r)
		return
	}
	h.serve(w, r)
}

// serve is ServeHTTP with tracing on.
func (h *handler) serve(w http.ResponseWriter, r *http.Request) {
	var pattern string
	if h.route != nil {
		pattern = h.route(r)
	}
	name := spanName(r.Method, pattern)
	route := tracer.String("route", pattern)
	method, path := tracer.String("method", r.Method), tracer.String("path", r.URL.Path)

	var (
		flow   tracer.Flow
		local  bool
		linkIn string // the traceparent of a client elsewhere
	)
	rw := &responseWriter{ResponseWriter: w}
	if vs := r.Header.Values(traceparentHeader); len(vs) == 1 { // two are invalid
		if canonical, parent, ok := traceparent.Parse(vs[0]); ok {
			rw.trace = traceContext{parent: canonical, state: r.Header.Values(tracestateHeader)}
			if flow, local = flows.take(parent); !local {
				linkIn = canonical
			}
		}
	}
	if rw.trace.parent == "" {
		rw.trace.parent, _ = traceparent.New() // this request starts a trace
	}
	traceID := tracer.String("trace_id", traceparent.TraceID(rw.trace.parent))
	var end func(...tracer.Arg)
	if linkIn != "" {
		end = tracer.Span(name, catServer, method, route, path, traceID, tracer.String("traceparent.in", linkIn))
	} else {
		end = tracer.Span(name, catServer, method, route, path, traceID)
	}
	if local {
		flow.End() // inside the span: the arrow's head binds to it
	}
	op := tracer.AsyncBegin(name, catServer, method, route, path)
	r = r.WithContext(context.WithValue(tracer.ContextWithAsync(r.Context(), op), traceKey{}, &rw.trace))
	returned := false
	defer func() {
		// Deferred, so that a panicking handler still ends both, on this
		// goroutine. It does not recover: the server's own recovery then
		// logs the panic with the handler's stack.
		args := [4]tracer.Arg{
			tracer.Int("status", rw.status()),
			tracer.Int64("bytes", rw.bytes),
		}
		n := 2
		if h.route == nil && r.Pattern != "" { // else the route said what matched
			args[n] = tracer.String("route", r.Pattern)
			n++
		}
		if !returned {
			args[n] = tracer.Bool("panic", true)
			n++
		}
		op.End(args[:n]...)
		end(args[:n]...)
	}()
	h.next.ServeHTTP(rw, r)
	returned = true
}

// spanName names a request's span and async slice: the pattern if it has a
// method ("GET /items/{id}"), the method and the pattern if not, and
// "HTTP" and the method when no pattern is known.
func spanName(method, pattern string) string {
	if pattern == "" {
		return "HTTP " + method
	}
	// A pattern is "[METHOD ][HOST]/[PATH]": a method is what comes before
	// a space, if that holds no slash.
	if i := strings.IndexByte(pattern, ' '); i > 0 && !strings.Contains(pattern[:i], "/") {
		return pattern
	}
	return method + " " + pattern
}

// A traceContext is the W3C Trace Context of a request served: the
// traceparent it came with, as traceparent.Parse returned it, or a new
// trace's when it came with none that is valid, and its tracestate. The
// requests Transport sends with the request's context carry it on.
type traceContext struct {
	parent string
	state  []string
}

// traceKey is the context key of a request's *traceContext.
type traceKey struct{}

// responseWriter notes the status and the bytes of a response. It holds
// the request's traceContext too, which the context points to, so that
// serving a request allocates one object for both.
type responseWriter struct {
	http.ResponseWriter
	code  int
	wrote bool
	bytes int64
	trace traceContext
}

func (w *responseWriter) WriteHeader(code int) {
	if w.code == 0 && code >= 200 { // 1xx are informational: the real status comes later
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *responseWriter) Write(b []byte) (int, error) {
	w.wrote = true
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

// status returns the status the client got: 200 when the handler wrote
// without WriteHeader or wrote nothing at all, as net/http does.
func (w *responseWriter) status() int {
	if w.code == 0 {
		return http.StatusOK
	}
	return w.code
}

// Unwrap lets http.ResponseController reach the server's writer.
func (w *responseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// ReadFrom keeps io.Copy to the response as fast as without the wrapper:
// the server's writer sends a file with sendfile.
func (w *responseWriter) ReadFrom(r io.Reader) (int64, error) {
	w.wrote = true
	n, err := io.Copy(w.ResponseWriter, r)
	w.bytes += n
	return n, err
}

// Flush and Hijack keep handlers that assert http.Flusher (streaming) or
// http.Hijacker (WebSockets) working. Like http.ResponseController, they
// reach the server's writer through Unwrap; Hijack fails where the server
// cannot hijack (HTTP/2).
func (w *responseWriter) Flush() {
	w.wrote = true
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *responseWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	w.wrote = true
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

// Transport returns a RoundTripper that records every request it sends
// through base, or through http.DefaultTransport if base is nil.
func Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &transport{base: base}
}

type transport struct{ base http.RoundTripper }

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if tracer.Default() == nil {
		return t.base.RoundTrip(req)
	}
	return t.roundTrip(req)
}

// roundTrip is RoundTrip with tracing on.
func (t *transport) roundTrip(req *http.Request) (*http.Response, error) {
	name := "HTTP " + req.Method
	// url.path, not path: chrome://tracing merges the args of the two
	// spans an arrow binds (see tracer merge) and warns of a key in both.
	host, path := tracer.String("host", req.URL.Host), tracer.String("url.path", req.URL.Path)
	tp, parent, ok := "", uint64(0), false
	if vs := req.Header.Values(traceparentHeader); len(vs) > 0 {
		if len(vs) == 1 {
			tp, parent, ok = traceparent.Parse(vs[0]) // someone else's: left as it is
		}
	} else {
		in, _ := req.Context().Value(traceKey{}).(*traceContext)
		if in != nil {
			tp, parent = traceparent.Child(in.parent) // a call on behalf of a request served
		} else {
			tp, parent = traceparent.New()
		}
		ok = true
		// A RoundTripper must not change the caller's request: send a copy.
		req = req.Clone(req.Context())
		req.Header.Set(traceparentHeader, tp)
		if in != nil && len(in.state) > 0 && len(req.Header.Values(tracestateHeader)) == 0 {
			req.Header[tracestateHeader] = slices.Clone(in.state)
		}
	}
	if !ok {
		defer tracer.Span(name, catClient, host, path)()
	} else {
		defer tracer.Span(name, catClient, host, path, tracer.String("traceparent.out", tp))()
		if f := tracer.FlowBegin("http", catServer); f.ID() != 0 && flows.issue(parent, f) {
			defer flows.forget(parent) // if the server is elsewhere, or failed first
		}
	}
	// The trace id goes on the async slice, not the span: tracer merge
	// binds the span to the server's, whose trace_id it has, and
	// chrome://tracing warns of a key the two spans an arrow binds both
	// have.
	var op tracer.Async
	if ok {
		op = tracer.AsyncBegin(name, catClient, host, path, tracer.String("trace_id", traceparent.TraceID(tp)))
	} else {
		op = tracer.AsyncBegin(name, catClient, host, path)
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		op.End(tracer.String("error", err.Error()))
		return resp, err
	}
	op.End(tracer.Int("status", resp.StatusCode), tracer.Int64("content_length", resp.ContentLength))
	return resp, nil
}

// flowTable holds the flows of the requests this process's clients sent,
// by the parent id of their traceparent, until the server that gets them,
// if it is in this process, ends them.
type flowTable struct {
	open sync.Map // parent id → tracer.Flow
}

var flows = &flowTable{}

// issue notes f as the flow of the request with the parent id, unless
// another request in flight has it (a caller that sends one traceparent
// twice): it reports whether it did.
func (ft *flowTable) issue(parent uint64, f tracer.Flow) bool {
	_, loaded := ft.open.LoadOrStore(parent, f)
	return !loaded
}

func (ft *flowTable) forget(parent uint64) { ft.open.Delete(parent) }

// take returns and forgets the flow of the request with the parent id,
// if this process sent it and its flow is not ended yet.
func (ft *flowTable) take(parent uint64) (tracer.Flow, bool) {
	f, ok := ft.open.LoadAndDelete(parent)
	if !ok {
		return tracer.Flow{}, false
	}
	return f.(tracer.Flow), true
}
