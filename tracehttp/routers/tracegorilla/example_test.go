package tracegorilla_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/gorilla/mux"
	"github.com/gotracer/tracer"
	"github.com/gotracer/tracer/tracehttp/routers/tracegorilla"
)

// A gorilla/mux router wrapped in tracegorilla: the request's span is
// named by the path template of the route it took.
func Example() {
	var buf bytes.Buffer
	t, _ := tracer.NewWithWriter(&buf, tracer.WithFlushInterval(10*time.Second))
	tracer.SetDefault(t) // or tracer.Start("trace.json")

	r := mux.NewRouter()
	r.HandleFunc("/items/{id}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "item %s", mux.Vars(r)["id"])
	}).Methods("GET")
	srv := httptest.NewServer(tracegorilla.Middleware(r))
	resp, err := http.Get(srv.URL + "/items/42")
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	srv.Close()
	tracer.Stop()

	var evs []struct {
		Name, Ph string
		Args     map[string]any
	}
	json.Unmarshal(buf.Bytes(), &evs)
	for _, e := range evs {
		if e.Ph == "X" {
			fmt.Println(e.Name, "route:", e.Args["route"], "status:", e.Args["status"])
		}
	}
	// Output:
	// GET /items/{id} route: /items/{id} status: 200
}
