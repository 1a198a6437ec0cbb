// Package tracegen records the traces the tracer command's tests and
// benchmarks read, in every module of the command: those of a small
// service, with the tracer package.
package tracegen

import (
	"fmt"
	"sync"
	"testing"

	"github.com/gotracer/tracer"
	"github.com/stretchr/testify/require"
)

// Workload records what a small service would: a goroutine per worker,
// each serving requests made of nested spans with args, with instants,
// a counter, async operations and flows between workers. It stops once
// stop returns true, checked every 100 requests.
func Workload(tr *tracer.Tracer, workers int, stop func() bool) {
	var wg sync.WaitGroup
	flows := make(chan tracer.Flow, 64)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tr.SetGoroutineName(fmt.Sprintf("worker %d", w))
			for i := 0; ; i++ {
				if i%100 == 0 && stop() {
					return
				}
				req := tr.Span("request", tracer.Int("id", i), tracer.String("route", "/api/v1/items"))
				tr.Span("decode", tracer.Int("bytes", 512+i%1024))()
				q := tr.Span("db.query", tracer.String("table", "items"), tracer.Bool("cached", i%3 == 0))
				tr.Span("db.scan")()
				q()
				if i%10 == 0 {
					tr.Instant("cache miss", tracer.Int("key", i))
				}
				if i%50 == 0 {
					a := tr.AsyncBegin("upload", tracer.Category("io"))
					a.End()
					tr.Counter("queue", tracer.Int("depth", i%17), tracer.Float64("load", float64(i%100)/100))
				}
				select {
				case f := <-flows:
					f.End()
				default:
					if i%20 == 0 {
						select {
						case flows <- tr.FlowBegin("handoff"):
						default:
						}
					}
				}
				tr.Span("encode")()
				req()
			}
		}()
	}
	wg.Wait()
}

// Generate writes a trace of about size bytes with the tracer package,
// with opts, and returns its path. A gzip path gives a gzip trace of
// about size bytes uncompressed.
func Generate(t testing.TB, path string, size int64, opts ...tracer.Option) string {
	t.Helper()
	tr, err := tracer.New(path, opts...)
	require.NoError(t, err)
	Workload(tr, 4, func() bool {
		tr.Flush() // so that Stats().Bytes tells the size so far
		return tr.Stats().Bytes >= uint64(size)
	})
	require.NoError(t, tr.Close())
	require.Zero(t, tr.Stats().Dropped)
	return path
}
