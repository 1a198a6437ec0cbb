package tracer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log"
	"strings"
	"sync"

	"github.com/gotracer/tracer"
)

// events returns "ph name" for each event of a closed trace, leaving out
// the tracer's own metadata and drop counter.
func events(trace []byte) []string {
	var evs []struct{ Name, Ph, Cat string }
	if err := json.Unmarshal(trace, &evs); err != nil {
		log.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		if e.Name == "process_name" || e.Name == "tracer.dropped" {
			continue
		}
		s := e.Ph + " " + e.Name
		if e.Cat != "" {
			s += " [" + e.Cat + "]"
		}
		out = append(out, s)
	}
	return out
}

func newBufferTracer() (*tracer.Tracer, *bytes.Buffer) {
	var buf bytes.Buffer
	t, err := tracer.NewWithWriter(&buf)
	if err != nil {
		log.Fatal(err)
	}
	return t, &buf
}

func closeAndPrint(t *tracer.Tracer, buf *bytes.Buffer) {
	if err := t.Close(); err != nil {
		log.Fatal(err)
	}
	fmt.Println(strings.Join(events(buf.Bytes()), "\n"))
}

// The usual span measures the rest of the function that starts it.
func ExampleSpan() {
	t, buf := newBufferTracer()
	decode := func(data []byte) {
		defer t.Span("decode", tracer.Int("bytes", len(data)))()
		// ...
	}
	decode([]byte("{}"))
	closeAndPrint(t, buf)
	// Output: X decode
}

// LongSpan writes its start at once, for work that must show up in the
// trace even if the process dies before it ends.
func ExampleLongSpan() {
	t, buf := newBufferTracer()
	end := t.LongSpan("migration", tracer.String("table", "users"))
	end()
	closeAndPrint(t, buf)
	// Output:
	// B migration
	// E migration
}

// A counter event carries several series at once.
func ExampleCounter() {
	t, buf := newBufferTracer()
	queue := []int{1, 2, 3}
	t.Counter("queue", tracer.Int("depth", len(queue)), tracer.Float64("load", 0.75))
	closeAndPrint(t, buf)
	// Output: C queue
}

// An async operation begins on one goroutine and ends on another.
func ExampleAsyncBegin() {
	t, buf := newBufferTracer()
	op := t.AsyncBegin("request", tracer.Int("id", 42))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		step := op.Begin("decode")
		step.End()
		op.End(tracer.Bool("ok", true))
	}()
	wg.Wait()
	closeAndPrint(t, buf)
	// Output:
	// b request
	// b decode
	// e decode
	// e request
}

// A flow draws an arrow from the span that queued a job to the span that
// ran it.
func ExampleFlowBegin() {
	t, buf := newBufferTracer()
	jobs := make(chan tracer.Flow, 1)
	func() {
		defer t.Span("enqueue")()
		jobs <- t.FlowBegin("job")
	}()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer t.Span("run")()
		(<-jobs).End()
	}()
	wg.Wait()
	closeAndPrint(t, buf)
	// Output:
	// s job
	// X enqueue
	// f job
	// X run
}

// Categories group events, and only the enabled ones are recorded.
func ExampleCategory() {
	var buf bytes.Buffer
	t, err := tracer.NewWithWriter(&buf, tracer.WithCategories("db"))
	if err != nil {
		log.Fatal(err)
	}
	db, cache := tracer.Category("db"), tracer.Category("cache")
	t.Span("query", db)()
	t.Span("lookup", cache)() // not recorded: "cache" is not enabled
	if err := t.SetCategories("db", "cache"); err != nil {
		log.Fatal(err)
	}
	t.Span("lookup", cache)()
	closeAndPrint(t, &buf)
	// Output:
	// X query [db]
	// X lookup [cache]
}

// A flow reaches the goroutine that finishes the work through a context,
// not through a parameter.
func ExampleContextWithFlow() {
	t, buf := newBufferTracer()
	ctx := context.Background()
	end := t.Span("enqueue")
	ctx = tracer.ContextWithFlow(ctx, t.FlowBegin("job"))
	end()

	done := make(chan struct{})
	go func() {
		defer close(done)
		defer t.Span("run job")()
		tracer.FlowFromContext(ctx).End()
	}()
	<-done
	closeAndPrint(t, buf)
	// Output:
	// s job
	// X enqueue
	// f job
	// X run job
}
