package tracechi_test

import (
	"testing"

	"github.com/gotracer/tracer/tracehttp"
	"github.com/gotracer/tracer/tracehttp/routers/internal/routertest"
	"github.com/gotracer/tracer/tracehttp/routers/tracechi"
)

// BenchmarkMiddleware serves a request to a parameter route of a mounted
// router (/api/users/{name}) through the router alone (bare), with
// tracehttp.Middleware around it (plain: named "HTTP GET"), and with
// tracechi around it and inside it, tracing on and off.
func BenchmarkMiddleware(b *testing.B) {
	bare := router(nil)
	routertest.Bench(b, "/api/users/ann",
		routertest.Mode{Name: "bare", H: bare},
		routertest.Mode{Name: "plain/off", H: tracehttp.Middleware(bare)},
		routertest.Mode{Name: "around/off", H: tracechi.Middleware(bare)},
		routertest.Mode{Name: "inside/off", H: router(tracechi.Middleware)},
		routertest.Mode{Name: "plain/on", H: tracehttp.Middleware(bare), On: true},
		routertest.Mode{Name: "around/on", H: tracechi.Middleware(bare), On: true},
		routertest.Mode{Name: "inside/on", H: router(tracechi.Middleware), On: true},
	)
}
