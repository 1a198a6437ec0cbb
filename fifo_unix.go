//go:build unix

package tracer

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// openFIFO opens the named pipe at path for writing. A plain open blocks
// until some process opens the pipe for reading, for ever if none does; a
// non-blocking one fails at once (ENXIO) while there is no reader. So it
// tries again until wait has passed. The file stays non-blocking, which Go
// handles with its poller: a write to a full pipe parks the goroutine, not
// a thread.
func openFIFO(path string, wait time.Duration) (*os.File, error) {
	deadline := time.Now().Add(wait)
	for {
		f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		switch {
		case err == nil:
			return f, nil
		case !errors.Is(err, syscall.ENXIO):
			return nil, fmt.Errorf("tracer: %w", err)
		case time.Now().After(deadline):
			return nil, fmt.Errorf("tracer: %s is a named pipe that no process opened for reading within %v (the stop timeout, see WithStopTimeout)", path, wait)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
