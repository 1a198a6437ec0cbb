//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package filelock

import "os"

// Lock does nothing where flock is missing, as the tracer package takes
// no lock there either.
func Lock(*os.File) error { return nil }
