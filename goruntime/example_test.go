package goruntime_test

import (
	"bytes"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	rtrace "runtime/trace"
	"time"

	"github.com/gotracer/tracer"
	"github.com/gotracer/tracer/goruntime"
)

// Start streams the runtime's view into a tracer's file until stop.
func Example() {
	dir, err := os.MkdirTemp("", "goruntime-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "trace.json")
	t, err := tracer.New(path)
	if err != nil {
		log.Fatal(err)
	}
	stop, err := goruntime.Start(t)
	if err != nil {
		log.Fatal(err)
	}

	started, done := make(chan bool), make(chan bool)
	go func() {
		defer t.Span("wait")() // its runtime track shows it blocked on the channel
		started <- true
		<-done
	}()
	<-started
	time.Sleep(10 * time.Millisecond) // the goroutine waits on done meanwhile
	done <- true

	if err := stop(); err != nil { // before Close
		log.Fatal(err)
	}
	if err := t.Close(); err != nil {
		log.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	fmt.Println(bytes.Contains(data, []byte(`"reason":"chan receive"`)))
	// Output: true
}

// Convert turns an execution trace taken elsewhere into a trace file.
func ExampleConvert() {
	var exec bytes.Buffer // as written by go test -trace or /debug/pprof/trace
	if err := rtrace.Start(&exec); err != nil {
		log.Fatal(err)
	}
	time.Sleep(time.Millisecond)
	rtrace.Stop()

	n, err := goruntime.Convert(io.Discard, &exec, goruntime.ConvertConfig{})
	fmt.Println(n > 0, err)
	// Output: true <nil>
}
