// Package tracegorilla traces the requests a gorilla/mux router
// (github.com/gorilla/mux) serves, as tracehttp.Middleware does, with each
// request's span and async slice named by the path template of the route
// that matches it ("GET /items/{id}", "GET /api/users/{name:[a-z]+}") and
// that template as the "route" arg.
//
// Mount it around the router, or in the router's own middleware:
//
//	r := mux.NewRouter()
//	http.ListenAndServe(addr, tracegorilla.Middleware(r))
//
//	r.Use(tracegorilla.Middleware) // or this, in place of wrapping r
//
// Around the router it sees every request, those that match no route (404,
// 405) and the redirects of unclean paths too, and finds the route with
// the router's own Match, which matches the request a second time, only
// while tracing runs. In the router's middleware it costs nothing more
// than tracehttp.Middleware, since gorilla/mux has matched the route
// already (mux.CurrentRoute), but gorilla/mux runs its middleware only for
// requests that match a route: the others are not recorded.
//
// tracehttp.Middleware alone names a gorilla/mux request "HTTP GET", and
// gets no route even at its end: gorilla/mux serves a copy of the request.
// A request that matches no route, or a route with no path template (a
// MatcherFunc, say), is named by its method, "HTTP GET".
package tracegorilla

import (
	"net/http"

	"github.com/gorilla/mux"
	"github.com/gotracer/tracer/tracehttp"
)

// Middleware returns a handler that records every request next serves;
// next is a gorilla/mux Router or, through the router's Use, the handler
// of the route that matched.
func Middleware(next http.Handler) http.Handler {
	router, _ := next.(*mux.Router)
	return tracehttp.MiddlewareWithRoute(next, func(r *http.Request) string {
		return route(router, r)
	})
}

// route returns the path template of the route r matched (inside the
// router) or matches in router (around it), or "".
func route(router *mux.Router, r *http.Request) string {
	matched := mux.CurrentRoute(r)
	if matched == nil && router != nil {
		var m mux.RouteMatch
		if router.Match(r, &m) && m.MatchErr == nil {
			matched = m.Route
		}
	}
	if matched == nil {
		return ""
	}
	tpl, err := matched.GetPathTemplate()
	if err != nil {
		return ""
	}
	return tpl
}
