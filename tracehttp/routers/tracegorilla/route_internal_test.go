package tracegorilla

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gorilla/mux"
)

// BenchmarkRoute measures what tracegorilla around a router adds to a
// request while tracing runs: matching it, through a subrouter, before
// the router serves it.
func BenchmarkRoute(b *testing.B) {
	r := mux.NewRouter()
	h := func(http.ResponseWriter, *http.Request) {}
	r.HandleFunc("/items/{id}", h).Methods("GET")
	api := r.PathPrefix("/api").Subrouter()
	api.HandleFunc("/users/{name}", h).Methods("GET")
	api.HandleFunc("/users/{name}/posts/{post}", h)
	req := httptest.NewRequest("GET", "/api/users/ann", nil)
	b.ReportAllocs()
	for b.Loop() {
		if route(r, req) != "/api/users/{name}" {
			b.Fatal("wrong route")
		}
	}
}
