//go:build !unix

package tracer

import (
	"os"
	"time"
)

// openFIFO opens the named pipe at path for writing; outside Unix there is
// no non-blocking open to bound the wait for a reader with.
func openFIFO(path string, _ time.Duration) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY, 0)
}
