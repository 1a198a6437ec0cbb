// Command workload records one fixed sequence of events of every kind and
// closes the file: the program internal/sameoutput builds at two revisions
// to compare what they write. Its one goroutine of spans makes the order of
// the file's lines the same from run to run; a second goroutine leaves a
// SpanHandle open to the end.
//
//	workload MODE PATH
//
// MODE is plain, lanes (WithLanes) or rotate (files of 8 KiB).
package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/gotracer/tracer"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: workload plain|lanes|rotate PATH")
		os.Exit(2)
	}
	opts := []tracer.Option{tracer.WithProcessName("sameoutput"), tracer.WithFlushInterval(5 * time.Millisecond)}
	switch os.Args[1] {
	case "plain":
	case "lanes":
		opts = append(opts, tracer.WithLanes())
	case "rotate":
		opts = append(opts, tracer.WithMaxFileSize(8<<10), tracer.WithMaxFiles(100))
	default:
		fmt.Fprintln(os.Stderr, "workload: unknown mode", os.Args[1])
		os.Exit(2)
	}
	t, err := tracer.New(os.Args[2], opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "workload:", err)
		os.Exit(1)
	}
	t.SetGoroutineName("main")
	end := t.Span("outer", tracer.String("s", "x\"y\n"), tracer.Int("i", -3), tracer.Float64("f", 1.5),
		tracer.Uint64("u", 7), tracer.Bool("b", true), tracer.Duration("d", time.Millisecond),
		tracer.Err(errors.New("boom")), tracer.Category("c1"))
	long := t.LongSpan("long")
	for i := range 300 {
		func() {
			defer t.Span("inner", tracer.Int("n", i))()
			t.Instant("tick")
			t.Counter("ctr", tracer.Int("v", i))
		}()
	}
	a := t.AsyncBegin("op", tracer.Category("io"))
	a.Instant("mid")
	a.End()
	fl := t.FlowBegin("flow")
	fl.Step()
	fl.End()
	h := t.StartSpan("handle")
	c := h.StartChild("child")
	c.End()
	h.End()
	time.Sleep(20 * time.Millisecond) // long becomes a B event
	long()
	end()
	started, stop := make(chan bool), make(chan bool)
	go func() {
		t.SetGoroutineName("other")
		_ = t.StartSpan("crossing") // open at Close
		started <- true
		<-stop
	}()
	<-started
	t.StartSpan("after").End()
	if err := t.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "workload:", err)
		os.Exit(1)
	}
	close(stop)
}
