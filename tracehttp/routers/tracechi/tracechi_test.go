package tracechi_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/gotracer/tracer"
	"github.com/gotracer/tracer/internal/tracecheck"
	"github.com/gotracer/tracer/tracehttp"
	"github.com/gotracer/tracer/tracehttp/routers/internal/routertest"
	"github.com/gotracer/tracer/tracehttp/routers/tracechi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// router returns a chi router with routes of every kind chi has (a
// parameter, a Route group, a mounted router, a wildcard, a method in the
// pattern), each reporting the pattern chi says it matched, with
// middleware first in its stack if it is not nil.
func router(middleware func(http.Handler) http.Handler) *chi.Mux {
	h := routertest.Handler(func(r *http.Request) string { return chi.RouteContext(r.Context()).RoutePattern() })
	r := chi.NewRouter()
	if middleware != nil {
		r.Use(middleware)
	}
	r.Get("/items/{id}", h.ServeHTTP)
	r.Post("/items", h.ServeHTTP)
	r.Handle("PUT /things/{id}", h)
	r.Route("/api", func(r chi.Router) {
		r.Get("/users/{name}", h.ServeHTTP)
		r.Get("/users/{name}/posts/{post}", h.ServeHTTP)
	})
	files := chi.NewRouter()
	files.Get("/*", h.ServeHTTP)
	files.Get("/list/{kind}", h.ServeHTTP)
	r.Mount("/files", files)
	return r
}

var requests = []routertest.Request{
	{Method: "GET", Route: "/items/{id}", Status: 200, Path: func(rng *rand.Rand) string { return "/items/" + routertest.Num(rng) }},
	{Method: "POST", Route: "/items", Status: 200, Path: func(*rand.Rand) string { return "/items" }},
	{Method: "PUT", Route: "/things/{id}", Status: 200, Path: func(rng *rand.Rand) string { return "/things/" + routertest.Num(rng) }},
	{Method: "GET", Route: "/api/users/{name}", Status: 200, Path: func(rng *rand.Rand) string { return "/api/users/u" + routertest.Num(rng) }},
	{Method: "GET", Route: "/api/users/{name}/posts/{post}", Status: 200, Path: func(rng *rand.Rand) string {
		return fmt.Sprintf("/api/users/u%s/posts/%s", routertest.Num(rng), routertest.Num(rng))
	}},
	{Method: "GET", Route: "/files/*", Status: 200, Path: func(rng *rand.Rand) string { return "/files/a/" + routertest.Num(rng) }},
	{Method: "GET", Route: "/files/list/{kind}", Status: 200, Path: func(rng *rand.Rand) string { return "/files/list/k" + routertest.Num(rng) }},
	{Method: "GET", Status: 404, Path: func(rng *rand.Rand) string { return "/nowhere/" + routertest.Num(rng) }},
	{Method: "DELETE", Status: 405, Path: func(rng *rand.Rand) string { return "/items/" + routertest.Num(rng) }},
	{Method: "GET", Status: 404, Path: func(rng *rand.Rand) string { return "/api/users/u" + routertest.Num(rng) + "/x" }},
}

// TestRoutes serves random requests through a chi router with tracechi
// around it and inside it, and checks that each request's span and async
// slice are named by the route chi took it by.
func TestRoutes(t *testing.T) {
	t.Run("around", func(t *testing.T) {
		routertest.Run(t, tracechi.Middleware(router(nil)), requests, 200)
	})
	t.Run("inside", func(t *testing.T) {
		routertest.Run(t, router(tracechi.Middleware), requests, 200)
	})
}

// TestPlainMiddlewareInside checks what the package documentation says of
// tracehttp.Middleware alone inside a chi router: the span is named by the
// method, and the route reaches the span's end and the async slice's.
func TestPlainMiddlewareInside(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plain.json")
	// The longest flush interval: the span is an X event, whatever the
	// machine's load, with what its end carries in its args.
	require.NoError(t, tracer.Start(path, tracer.WithFlushInterval(10*time.Second)))
	srv := httptest.NewServer(router(tracehttp.Middleware))
	resp, err := http.Get(srv.URL + "/api/users/ann")
	require.NoError(t, err)
	resp.Body.Close()
	srv.Close()
	require.NoError(t, tracer.Stop())

	evs := tracecheck.Read(t, path)
	spans := tracecheck.Phase(tracecheck.Filter(evs, func(e tracecheck.Event) bool { return e.Cat == "http" }), "X")
	require.Len(t, spans, 1)
	assert.Equal(t, "HTTP GET", spans[0].Name)
	assert.Equal(t, "/api/users/{name}", spans[0].Args["route"])
	ops := tracecheck.Async(t, evs)
	require.Len(t, ops, 1)
	assert.Equal(t, "HTTP GET", ops[0].Begin.Name)
	assert.Equal(t, "/api/users/{name}", ops[0].End.Args["route"])
}
