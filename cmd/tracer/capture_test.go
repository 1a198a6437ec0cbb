package main

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/gotracer/tracer"
	"github.com/gotracer/tracer/tracedebug"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCommandsOnACapture is the whole workflow of a running server: the
// program serves tracedebug's handlers, and `tracer stats URL` and
// `tracer check URL` ask it for the next fraction of a second and read
// the capture as they read a file: complete, loadable, holding the spans
// the program recorded meanwhile. (Serial: a capture sets the default
// tracer.)
func TestCommandsOnACapture(t *testing.T) {
	srv := httptest.NewServer(tracedebug.Handler())
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { // the program: a burst of requests in each capture
		for ctx.Err() == nil {
			if !tracer.Enabled() {
				time.Sleep(time.Millisecond)
				continue
			}
			// A bounded burst: a loop recording flat out outruns the
			// client and gzip, and the capture then stops as a cut file
			// (tracedebug's TestClientFallenBehindGetsALoadableTrace).
			for range 2000 {
				func() {
					defer tracer.Span("handle")()
					tracer.Span("query")()
				}()
			}
			for tracer.Enabled() && ctx.Err() == nil {
				time.Sleep(time.Millisecond)
			}
		}
	})
	defer func() { cancel(); wg.Wait() }()

	for _, q := range []string{"seconds=0.2", "seconds=0.2&gzip=1"} {
		url := srv.URL + "/debug/tracer/trace?" + q
		// The answer ends once the handler has returned: the next capture
		// may start.
		code, stdout, stderr := runCmd("stats", url)
		require.Equal(t, 0, code, "%s\n%s", stdout, stderr)
		assert.Contains(t, stdout, "handle")
		assert.Contains(t, stdout, "query")
		assert.NotContains(t, stdout+stderr, "cut", "a capture ends its array")
		code, stdout, stderr = runCmd("check", url)
		assert.Equal(t, 0, code, "%s\n%s", stdout, stderr)
	}
}
