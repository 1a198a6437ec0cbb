package tracehttp_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"time"

	"github.com/gotracer/tracer"
	"github.com/gotracer/tracer/tracehttp"
)

// A server wrapped in Middleware and a client using Transport, in one
// process: the trace holds a span and an async slice for each side of the
// request, and the flow ("s" to "f") that links the client's span to the
// server's.
func Example() {
	var buf bytes.Buffer
	// A long flush interval keeps every span one X event, however slow
	// the machine, so the output below is stable.
	t, _ := tracer.NewWithWriter(&buf, tracer.WithFlushInterval(10*time.Second))
	tracer.SetDefault(t) // or tracer.Start("trace.json")

	mux := http.NewServeMux()
	mux.HandleFunc("GET /hello/{name}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello, %s", r.PathValue("name"))
	})
	srv := httptest.NewServer(tracehttp.Middleware(mux))
	client := &http.Client{Transport: tracehttp.Transport(nil)}

	resp, err := client.Get(srv.URL + "/hello/gopher")
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	srv.Close()
	tracer.Stop()
	fmt.Println(string(body))

	var evs []struct{ Name, Ph, Cat string }
	json.Unmarshal(buf.Bytes(), &evs)
	var lines []string
	for _, e := range evs {
		if e.Ph != "M" && e.Ph != "C" {
			lines = append(lines, e.Ph+" "+e.Name+" ["+e.Cat+"]")
		}
	}
	slices.Sort(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// hello, gopher
	// X GET /hello/{name} [http]
	// X HTTP GET [http.client]
	// b GET /hello/{name} [http]
	// b HTTP GET [http.client]
	// e GET /hello/{name} [http]
	// e HTTP GET [http.client]
	// f http [http]
	// s http [http]
}
