// Package tracechi traces the requests a chi router (github.com/go-chi/chi/v5)
// serves, as tracehttp.Middleware does, with each request's span and async
// slice named by the chi route that matches it ("GET /items/{id}",
// "GET /api/users/{name}" through a mounted router) and that route as the
// "route" arg.
//
// Mount it first in the router's stack, or around the router:
//
//	r := chi.NewRouter()
//	r.Use(tracechi.Middleware)
//
//	http.ListenAndServe(addr, tracechi.Middleware(r)) // or this, in place of r.Use
//
// tracehttp.Middleware alone names a chi request "HTTP GET": chi finds the
// route only once the middleware has started the span. (Used inside the
// router, it still gets the route on the span's and the async slice's
// end, from the Request.Pattern chi sets.) tracechi asks the router first,
// with chi's own Find, which routes the request a second time, only while
// tracing runs (docs/integrations.md has the cost); with tracing off, it
// costs what tracehttp.Middleware does, one atomic load.
//
// A request that matches no route (chi answers 404 or 405) is named by
// its method, "HTTP GET", as tracehttp names it.
package tracechi

import (
	"net/http"
	"sync"

	"github.com/go-chi/chi/v5"
	"github.com/gotracer/tracer/tracehttp"
)

// Middleware returns a handler that records every request next serves;
// next is a chi router (chi.NewRouter) or, through the router's Use, the
// rest of its stack.
func Middleware(next http.Handler) http.Handler {
	routes, _ := next.(chi.Routes)
	return tracehttp.MiddlewareWithRoute(next, func(r *http.Request) string {
		return route(routes, r)
	})
}

// scratch holds the routing contexts Find fills: Find records what it
// matched in the context it is given, which must not be the request's.
var scratch = sync.Pool{New: func() any { return chi.NewRouteContext() }}

// route returns the pattern of the route r takes through routes, or,
// inside a router (routes is nil), through the router that routes it, as
// chi's RoutePattern writes it ("/api/users/{name}"); "" if none matches.
func route(routes chi.Routes, r *http.Request) string {
	method := r.Method
	path := r.URL.RawPath
	if path == "" {
		path = r.URL.Path
	}
	if rctx := chi.RouteContext(r.Context()); rctx != nil {
		// Inside the router, which routes by what its context says if a
		// middleware before this one set it (chi's GetHead does).
		if routes == nil {
			routes = rctx.Routes
		}
		if rctx.RouteMethod != "" {
			method = rctx.RouteMethod
		}
		if rctx.RoutePath != "" {
			path = rctx.RoutePath
		}
	}
	if routes == nil {
		return ""
	}
	if path == "" {
		path = "/"
	}
	ctx := scratch.Get().(*chi.Context)
	defer scratch.Put(ctx)
	ctx.Reset()
	if routes.Find(ctx, method, path) == "" {
		return ""
	}
	return ctx.RoutePattern()
}
