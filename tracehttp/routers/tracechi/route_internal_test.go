package tracechi

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-chi/chi/v5"
)

// BenchmarkRoute measures what tracechi adds to a request while tracing
// runs: finding its route, through a mounted router, before chi serves it.
func BenchmarkRoute(b *testing.B) {
	r := chi.NewRouter()
	h := func(http.ResponseWriter, *http.Request) {}
	r.Get("/items/{id}", h)
	r.Route("/api", func(r chi.Router) {
		r.Get("/users/{name}", h)
		r.Get("/users/{name}/posts/{post}", h)
	})
	req := httptest.NewRequest("GET", "/api/users/ann", nil)
	b.ReportAllocs()
	for b.Loop() {
		if route(r, req) != "/api/users/{name}" {
			b.Fatal("wrong route")
		}
	}
}
