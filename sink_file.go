package tracer

import (
	"fmt"
	"io"
	"os"
)

// processID is the pid written on every event.
var processID = os.Getpid()

// A sink receives the encoded trace. Every Write holds whole events and
// ends on an event boundary.
type sink interface {
	io.Writer
	Close() error
}

// openFileSink creates or truncates the file at path.
func openFileSink(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("tracer: %w", err)
	}
	return f, nil
}
