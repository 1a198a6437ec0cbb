package tracer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gotracer/tracer/internal/filelock"
)

// One writer per file.
//
// Two tracers writing one file (two New calls on one path, or TRACER_FILE
// inherited by a child process, as go test ./... runs one binary per
// package with the same environment) interleave their events into JSON
// that no viewer opens. So a tracer holds an advisory lock on its file
// for as long as it writes it (flock on Unix: the kernel releases it when
// the process dies, so a crash never leaves a file locked), and New
// fails on a file another tracer holds, in this process or another,
// before truncating it. On platforms without flock (Windows) there is no
// lock: two writers there are the user's to avoid.

// lockFile takes the advisory write lock on f without waiting, and
// returns ErrFileInUse if another open file holds it. The tracer command
// takes the same lock (internal/filelock) before it replaces a file.
func lockFile(f *os.File) error {
	if err := filelock.Lock(f); err != nil {
		if errors.Is(err, filelock.ErrHeld) {
			return ErrFileInUse
		}
		return err
	}
	return nil
}

// joinSuffix ends the name of the temporary file that closing a gzip
// file writes its joined members to (see joinGzipMembers).
const joinSuffix = ".join"

// joinPath returns the temporary file joinGzipMembers writes for the
// trace at path: beside the file a symlink at path points to, so the
// rename that puts it in place keeps the symlink.
func joinPath(path string) string {
	if target, err := filepath.EvalSymlinks(path); err == nil {
		path = target
	}
	return path + joinSuffix
}

// removeStale removes what a process killed while it wrote the trace at
// path left beside it: the joined copy of a gzip trace it was writing
// (never renamed over path, which still holds the whole trace), and the
// new file of a rotation (never put in place, see rotator.swap). The
// caller holds path's lock, so no live tracer is writing them.
func removeStale(path string) {
	os.Remove(joinPath(path))
	if target, err := filepath.EvalSymlinks(path); err == nil {
		path = target
	}
	os.Remove(nextPath(path))
}

// replaceFile writes data to the file at path, as os.WriteFile does, but
// never to a file a tracer is writing, and never leaving less than the
// file held: it takes the file's lock (failing with ErrFileInUse if a
// tracer holds it), writes data to a temporary file beside it, and
// renames that over it. A full disk leaves the file as it was. Through a
// symlink, the file it points to is replaced. A path that is not a
// regular file (a named pipe, /dev/stdout) is written to directly.
func replaceFile(path string, data []byte) error {
	if target, err := filepath.EvalSymlinks(path); err == nil {
		path = target
	}
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer f.Close() // after the rename: the lock is held until then
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		_, err := f.Write(data)
		return err
	}
	if err := lockFile(f); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if !stillAt(f, path) {
		// A rotation put a tracer's new file at path after the open:
		// the one locked is a rotated file.
		return fmt.Errorf("%s: %w", path, ErrFileInUse)
	}
	tmp := path + replaceSuffix
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, fi.Mode().Perm())
	if err != nil {
		return err
	}
	_, err = out.Write(data)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		if errors.Is(statErr, os.ErrNotExist) {
			os.Remove(path) // made by the open: no empty file left
		}
	}
	return err
}

// replaceSuffix ends the name of the temporary file replaceFile writes.
const replaceSuffix = ".tmp"
