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
//     route and path as args and, from its end, the status and the
//     response bytes, so the handler's own spans nest in it;
//   - an async slice of the same name on the process's request tracks,
//     whose end carries the status and the response bytes, so that
//     requests served at the same time show side by side as concurrent;
//     handlers reach it through tracer.AsyncFromContext(r.Context()).
//
// For each request a client sends, Transport records a span on the
// calling goroutine ("HTTP GET", with host and path) and an async slice
// whose end carries the status or the error. When the server is in the
// same process, a flow draws an arrow from the client's span to the
// server's: the client sends a flow id in the Tracer-Flow header, and the
// server honours only ids this process issued, so a header from elsewhere
// draws nothing.
//
// The route is known before the handler runs when the handler Middleware
// wraps is an *http.ServeMux (Go 1.22 patterns); for any other handler the
// span is named "HTTP GET" and the route, read from Request.Pattern once
// the handler has run, goes on the async slice's end (if the handler
// routed the request it was given: http.StripPrefix, for one, routes a
// copy, and the route is lost).
package tracehttp

import (
	"bufio"
	"crypto/rand"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/gotracer/tracer"
)

// FlowHeader is the request header that carries a flow from a client to a
// server in the same process.
const FlowHeader = "Tracer-Flow"

var (
	catServer = tracer.Category("http")
	catClient = tracer.Category("http.client")
)

// Middleware returns a handler that records every request next serves; see
// the package documentation for what it records.
func Middleware(next http.Handler) http.Handler {
	mux, _ := next.(*http.ServeMux)
	return &handler{next: next, mux: mux}
}

type handler struct {
	next http.Handler
	mux  *http.ServeMux // next, if it is one: the route is known up front
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
	if h.mux != nil {
		_, pattern = h.mux.Handler(r) // routing twice: a few hundred ns, and only when tracing
	}
	name := spanName(r.Method, pattern)
	route := tracer.String("route", pattern)
	method, path := tracer.String("method", r.Method), tracer.String("path", r.URL.Path)

	end := tracer.Span(name, catServer, method, route, path)
	if v := r.Header.Get(FlowHeader); v != "" {
		flows.end(v) // inside the span: the arrow's head binds to it
	}
	op := tracer.AsyncBegin(name, catServer, method, route, path)
	rw := &responseWriter{ResponseWriter: w}
	r = r.WithContext(tracer.ContextWithAsync(r.Context(), op))
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
		if pattern == "" && r.Pattern != "" {
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

// responseWriter notes the status and the bytes of a response.
type responseWriter struct {
	http.ResponseWriter
	code  int
	wrote bool
	bytes int64
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
	host, path := tracer.String("host", req.URL.Host), tracer.String("path", req.URL.Path)
	defer tracer.Span(name, catClient, host, path)()
	op := tracer.AsyncBegin(name, catClient, host, path)

	if f := tracer.FlowBegin("http", catServer); f.ID() != 0 {
		// A RoundTripper must not change the caller's request: send a copy.
		req = req.Clone(req.Context())
		req.Header.Set(FlowHeader, flows.issue(f))
		defer flows.forget(f.ID()) // if the server is elsewhere, or failed first
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		op.End(tracer.String("error", err.Error()))
		return resp, err
	}
	op.End(tracer.Int("status", resp.StatusCode), tracer.Int64("content_length", resp.ContentLength))
	return resp, nil
}

// flowTable holds the flows this process's clients sent, until the server
// that gets them, if it is in this process, ends them.
type flowTable struct {
	nonce string   // this process's header prefix, random
	open  sync.Map // flow id → tracer.Flow
}

var flows = newFlowTable()

func newFlowTable() *flowTable {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand panics rather than return an error)
	return &flowTable{nonce: strconv.FormatUint(binary.LittleEndian.Uint64(b[:]), 36)}
}

// issue notes f and returns the header value that names it.
func (ft *flowTable) issue(f tracer.Flow) string {
	ft.open.Store(f.ID(), f)
	return ft.nonce + "-" + strconv.FormatUint(f.ID(), 36)
}

func (ft *flowTable) forget(id uint64) { ft.open.Delete(id) }

// end ends the flow a header value names, if this process issued it and
// it was not ended yet.
func (ft *flowTable) end(v string) {
	nonce, id, ok := strings.Cut(v, "-")
	if !ok || nonce != ft.nonce {
		return
	}
	n, err := strconv.ParseUint(id, 36, 64)
	if err != nil {
		return
	}
	if f, ok := ft.open.LoadAndDelete(n); ok {
		f.(tracer.Flow).End()
	}
}
