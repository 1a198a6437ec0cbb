package tracer

import (
	"errors"
	"os"
	"path/filepath"
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

// ErrFileInUse is returned, wrapped with the path, by New and Start when
// another tracer, in this process or another, is writing the file.
var ErrFileInUse = errors.New("file is being written by another tracer (in this process or another), and two writers would make it unreadable: give each its own path")

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

// removeStaleJoin removes what a process killed while it closed a gzip
// trace at path left: the joined copy it was writing, never renamed over
// path, which still holds the whole trace. The caller holds path's lock,
// so no live tracer is writing it.
func removeStaleJoin(path string) {
	os.Remove(joinPath(path))
}
