package routertest

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/gotracer/tracer"
)

// A Mode is one way to serve a benchmark's request: a handler, with the
// default tracer running (On) or not.
type Mode struct {
	Name string
	H    http.Handler
	On   bool
}

// Bench serves a GET of path through each mode's handler in turn, as
// sub-benchmarks (so that -count alternates them), to a ResponseWriter
// that keeps nothing. With the tracer on, it writes to a real file,
// flushed every 512 requests with the timer stopped, so the numbers are
// what the serving goroutine pays.
func Bench(b *testing.B, path string, modes ...Mode) {
	for _, m := range modes {
		b.Run(m.Name, func(b *testing.B) {
			if m.On {
				if err := tracer.Start(filepath.Join(b.TempDir(), "bench.json")); err != nil {
					b.Fatal(err)
				}
				defer tracer.Stop()
			}
			req := httptest.NewRequest("GET", path, nil)
			w := discard{h: http.Header{}}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				m.H.ServeHTTP(&w, req)
				if m.On && i%512 == 511 {
					b.StopTimer()
					tracer.Flush()
					b.StartTimer()
				}
			}
		})
	}
}

type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(int)             {}
