// Package filelock takes, and probes, the advisory lock the tracer
// package holds on a trace file for as long as it writes it (flock on
// Unix: see the root package's filelock.go). The tracer command takes it
// before it replaces a file, so that it never renames a new file over one
// a live program writes (whose later events would go to an unlinked
// file), and a program that starts meanwhile fails to take the file
// rather than write under the command.
package filelock

import (
	"errors"
	"os"
)

// ErrHeld is returned by Lock when another open file holds the lock: a
// running tracer is writing the file.
var ErrHeld = errors.New("a running tracer is writing it (it holds the file's lock)")

// Held reports whether a running tracer holds the lock of the regular
// file at path. A missing file, or one that is not regular, is not held.
func Held(path string) (bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close() // releases the lock, if taken
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return false, err
	}
	err = Lock(f)
	if errors.Is(err, ErrHeld) {
		return true, nil
	}
	return false, err
}
