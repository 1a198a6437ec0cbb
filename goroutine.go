package tracer

import (
	"bytes"
	"runtime"
	"strconv"
	"sync"

	"github.com/petermattis/goid"
)

// Each goroutine is one track in the viewers, so every event carries the id
// of the goroutine that recorded it. goid.Get reads it from the runtime's g
// struct at an offset that depends on the Go version; verifyGoid compares it
// once against the id the runtime prints in stack traces and, should they
// ever disagree (an unsupported Go version), switches to parsing the stack:
// slow, but correct.

var (
	goidOnce sync.Once
	goidFast bool
)

// goroutineID returns the calling goroutine's id.
func goroutineID() uint64 {
	if goidFast {
		return uint64(goid.Get())
	}
	return stackGoroutineID()
}

// verifyGoid decides, once per process, whether goid.Get can be trusted.
// It checks the calling goroutine and a fresh one, so an offset that happens
// to read the right number for one goroutine is still caught.
func verifyGoid() {
	goidOnce.Do(func() {
		ok := goid.Get() > 0 && uint64(goid.Get()) == stackGoroutineID()
		done := make(chan bool)
		go func() { done <- goid.Get() > 0 && uint64(goid.Get()) == stackGoroutineID() }()
		goidFast = ok && <-done
	})
}

// stackGoroutineID parses "goroutine 123 [running]:" from runtime.Stack.
func stackGoroutineID() uint64 {
	var buf [64]byte
	s := buf[:runtime.Stack(buf[:], false)]
	s = bytes.TrimPrefix(s, []byte("goroutine "))
	if i := bytes.IndexByte(s, ' '); i > 0 {
		s = s[:i]
	}
	id, err := strconv.ParseUint(string(s), 10, 64)
	if err != nil {
		return 0
	}
	return id
}
