package tracegorilla_test

import (
	"math/rand/v2"
	"net/http"
	"testing"

	"github.com/gorilla/mux"
	"github.com/gotracer/tracer/tracehttp/routers/internal/routertest"
	"github.com/gotracer/tracer/tracehttp/routers/tracegorilla"
)

// router returns a gorilla/mux router with routes of the kinds it has (a
// variable, a variable with a pattern, a subrouter under a prefix, a
// prefix, methods), each reporting the path template gorilla/mux says it
// matched, with middleware in its own middleware if it is not nil.
func router(middleware mux.MiddlewareFunc) *mux.Router {
	h := routertest.Handler(func(r *http.Request) string {
		tpl, _ := mux.CurrentRoute(r).GetPathTemplate()
		return tpl
	})
	r := mux.NewRouter()
	if middleware != nil {
		r.Use(middleware)
	}
	r.Handle("/items/{id}", h).Methods("GET")
	r.Handle("/items", h).Methods("POST")
	r.Handle("/things/{id:[0-9]+}", h).Methods("PUT", "GET")
	api := r.PathPrefix("/api").Subrouter()
	api.Handle("/users/{name}", h).Methods("GET")
	api.Handle("/users/{name}/posts/{post}", h)
	r.PathPrefix("/files/").Handler(h)
	return r
}

// requests are the requests TestRoutes sends; with the middleware inside
// the router, those that match no route are not recorded.
func requests(inside bool) []routertest.Request {
	reqs := []routertest.Request{
		{Method: "GET", Route: "/items/{id}", Status: 200, Path: func(rng *rand.Rand) string { return "/items/" + routertest.Num(rng) }},
		{Method: "POST", Route: "/items", Status: 200, Path: func(*rand.Rand) string { return "/items" }},
		{Method: "PUT", Route: "/things/{id:[0-9]+}", Status: 200, Path: func(rng *rand.Rand) string { return "/things/" + routertest.Num(rng) }},
		{Method: "GET", Route: "/api/users/{name}", Status: 200, Path: func(rng *rand.Rand) string { return "/api/users/u" + routertest.Num(rng) }},
		{Method: "DELETE", Route: "/api/users/{name}/posts/{post}", Status: 200, Path: func(rng *rand.Rand) string {
			return "/api/users/u" + routertest.Num(rng) + "/posts/" + routertest.Num(rng)
		}},
		{Method: "GET", Route: "/files/", Status: 200, Path: func(rng *rand.Rand) string { return "/files/a/" + routertest.Num(rng) }},
	}
	if inside {
		return reqs
	}
	return append(reqs,
		routertest.Request{Method: "GET", Status: 404, Path: func(rng *rand.Rand) string { return "/nowhere/" + routertest.Num(rng) }},
		routertest.Request{Method: "DELETE", Status: 405, Path: func(rng *rand.Rand) string { return "/items/" + routertest.Num(rng) }},
		routertest.Request{Method: "GET", Status: 404, Path: func(rng *rand.Rand) string { return "/things/x" + routertest.Num(rng) }},
	)
}

// TestRoutes serves random requests through a gorilla/mux router with
// tracegorilla around it and inside it, and checks that each request's
// span and async slice are named by the route gorilla/mux took it by.
func TestRoutes(t *testing.T) {
	t.Run("around", func(t *testing.T) {
		routertest.Run(t, tracegorilla.Middleware(router(nil)), requests(false), 200)
	})
	t.Run("inside", func(t *testing.T) {
		routertest.Run(t, router(tracegorilla.Middleware), requests(true), 200)
	})
}
