package benchmarks

// The overhead of tracing on a realistic workload: decoding small JSON
// documents (an order with a few line items, about 300 bytes) with
// encoding/json, a few microseconds each, one span with one arg per
// document, as a service would trace each request body it decodes.
//
//	mode=untraced  no tracing call at all
//	mode=off       defer tracer.Span(...)() with the tracer not started
//	mode=on        the same with tracer.Start (default settings) running
//
// Workload is single-threaded (the flusher has the second core to
// itself); WorkloadParallel runs it under b.RunParallel, so every core
// decodes and the flusher's work competes with the workload for CPU. The
// report shows each mode's overhead over untraced in percent, and
// dropped/op (which should stay 0: a few hundred thousand spans a second is
// well within what the flusher writes).

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/gotracer/tracer"
)

type orderItem struct {
	SKU      string  `json:"sku"`
	Name     string  `json:"name"`
	Quantity int     `json:"qty"`
	Price    float64 `json:"price"`
}

type order struct {
	ID       int64       `json:"id"`
	Customer string      `json:"customer"`
	Email    string      `json:"email"`
	Paid     bool        `json:"paid"`
	Tags     []string    `json:"tags"`
	Items    []orderItem `json:"items"`
	Total    float64     `json:"total"`
}

// docs are the documents the workload decodes, built once.
var docs = func() [][]byte {
	var out [][]byte
	for i := 0; i < 64; i++ {
		o := order{
			ID:       int64(100000 + i),
			Customer: fmt.Sprintf("customer-%03d", i),
			Email:    fmt.Sprintf("buyer%d@example.com", i),
			Paid:     i%3 != 0,
			Tags:     []string{"web", "priority"}[:1+i%2],
		}
		for j := 0; j < 2+i%3; j++ {
			it := orderItem{SKU: fmt.Sprintf("SKU-%05d", i*7+j), Name: "widget, blue, large", Quantity: 1 + j, Price: 9.99 + float64(j)}
			o.Items = append(o.Items, it)
			o.Total += float64(it.Quantity) * it.Price
		}
		b, err := json.Marshal(o)
		if err != nil {
			panic(err)
		}
		out = append(out, b)
	}
	return out
}()

func decodeUntraced(doc []byte) (order, error) {
	var o order
	err := json.Unmarshal(doc, &o)
	return o, err
}

func decodeTraced(doc []byte) (o order, err error) {
	defer tracer.Span("decode", tracer.Int("bytes", len(doc)))()
	err = json.Unmarshal(doc, &o)
	return o, err
}

const (
	wlUntraced = "untraced"
	wlOff      = "off"
	wlOn       = "on"
)

func BenchmarkWorkload(b *testing.B)         { runWorkload(b, false) }
func BenchmarkWorkloadParallel(b *testing.B) { runWorkload(b, true) }

func runWorkload(b *testing.B, parallel bool) {
	for _, mode := range []string{wlUntraced, wlOff, wlOn} {
		b.Run("mode="+mode, func(b *testing.B) {
			b.ReportAllocs()
			decode := decodeTraced
			if mode == wlUntraced {
				decode = decodeUntraced
			}
			var stats func() tracer.Stats
			if mode == wlOn {
				path := filepath.Join(tempDir, "workload-"+sanitize(b.Name())+".json")
				if err := tracer.Start(path); err != nil {
					b.Fatal(err)
				}
				warmTracerRings()
				t := tracer.Default()
				before := t.Stats()
				stats = func() tracer.Stats {
					s := t.Stats()
					s.Dropped -= before.Dropped
					return s
				}
				defer func() {
					s := stats()
					if err := tracer.Stop(); err != nil {
						b.Error(err)
					}
					reportDropped(b, s.Dropped)
					removeQuietly(path)
				}()
			}
			b.ResetTimer()
			if parallel {
				b.RunParallel(func(pb *testing.PB) {
					for i := 0; pb.Next(); i++ {
						if _, err := decode(docs[i%len(docs)]); err != nil {
							b.Error(err)
							return
						}
					}
				})
			} else {
				for i := 0; i < b.N; i++ {
					if _, err := decode(docs[i%len(docs)]); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.StopTimer()
		})
	}
}
