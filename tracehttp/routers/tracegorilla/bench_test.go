package tracegorilla_test

import (
	"testing"

	"github.com/gotracer/tracer/tracehttp"
	"github.com/gotracer/tracer/tracehttp/routers/internal/routertest"
	"github.com/gotracer/tracer/tracehttp/routers/tracegorilla"
)

// BenchmarkMiddleware serves a request to a subrouter's route
// (/api/users/{name}) through the router alone (bare), with
// tracehttp.Middleware around it (plain: named "HTTP GET"), and with
// tracegorilla around it and inside it, tracing on and off.
func BenchmarkMiddleware(b *testing.B) {
	bare := router(nil)
	routertest.Bench(b, "/api/users/ann",
		routertest.Mode{Name: "bare", H: bare},
		routertest.Mode{Name: "plain/off", H: tracehttp.Middleware(bare)},
		routertest.Mode{Name: "around/off", H: tracegorilla.Middleware(bare)},
		routertest.Mode{Name: "inside/off", H: router(tracegorilla.Middleware)},
		routertest.Mode{Name: "plain/on", H: tracehttp.Middleware(bare), On: true},
		routertest.Mode{Name: "around/on", H: tracegorilla.Middleware(bare), On: true},
		routertest.Mode{Name: "inside/on", H: router(tracegorilla.Middleware), On: true},
	)
}
