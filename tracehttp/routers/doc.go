// Package routers holds, in a module of its own, the packages that name
// tracehttp's request spans by the routes of routers other than
// net/http's ServeMux, so that the tracer's module depends on no router:
//
//   - tracechi, for github.com/go-chi/chi/v5;
//   - tracegorilla, for github.com/gorilla/mux.
//
// Each has one Middleware that records what tracehttp.Middleware records,
// with every request's span and async slice named by the route that
// matches it ("GET /items/{id}") rather than "HTTP GET".
package routers
