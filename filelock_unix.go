//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package tracer

import (
	"errors"
	"os"
	"syscall"
)

// lockFile takes the advisory write lock on f without waiting, and
// returns ErrFileInUse if another open file holds it.
func lockFile(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			return ErrFileInUse
		case errors.Is(err, syscall.ENOTSUP), errors.Is(err, syscall.ENOLCK), errors.Is(err, syscall.EINVAL):
			return nil // a file system without locks: write unlocked, as on Windows
		default:
			return err
		}
	}
}
