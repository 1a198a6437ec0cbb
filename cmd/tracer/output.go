package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/gotracer/tracer/internal/filelock"
	"github.com/klauspost/compress/gzip"
)

// An output is a trace being written: "[", events one per line separated
// by commas, and "]", so that it is strict JSON and still one event per
// line; or, once members are set, {"traceEvents":[...], members}, with a
// displayTimeUnit at the head, as the tracer package closes a plain file
// ({"displayTimeUnit":"ns","traceEvents":[...]}). A name ending in ".gz" is gzipped as one member, which
// chrome://tracing needs (it reads only the first). It is written to a
// temporary file next to its destination and renamed over it by Close, so
// that a failure never leaves a half-written file, and the destination
// may be one of the inputs. A destination a running tracer writes (it
// holds the file's lock) is refused; another is locked until it is
// replaced, so that no tracer starts writing it meanwhile.
type output struct {
	path   string // "" for standard output
	lock   *os.File
	tmp    *os.File
	bw     *bufio.Writer
	zw     *gzip.Writer
	w      io.Writer
	events int64
	err    error

	started bool
	// members are the top-level members to write after the events, as
	// JSON text, each with its comma: the output is then an object.
	members []byte
	obj     bool
	unit    []byte // displayTimeUnit's value, as JSON text: see member
}

// createOutput starts writing a trace to path, or to stdout if path is
// "-". Gzip is used if gz is set.
func createOutput(path string, gz bool, stdout io.Writer) (*output, error) {
	o := &output{}
	var dst io.Writer = stdout
	if path != "-" {
		if target, err := filepath.EvalSymlinks(path); err == nil {
			path = target // replace the file a symlink names, not the symlink
		}
		lock, err := lockDestination(path)
		if err != nil {
			return nil, err
		}
		tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
		if err != nil {
			if lock != nil {
				lock.Close()
			}
			return nil, err
		}
		o.path, o.lock, o.tmp, dst = path, lock, tmp, tmp
	}
	o.bw = bufio.NewWriterSize(dst, 1<<20)
	o.w = o.bw
	if gz {
		o.zw, _ = gzip.NewWriterLevel(o.bw, gzip.BestSpeed) // the level is valid
		o.w = o.zw
	}
	return o, nil
}

// object makes the output the object {"traceEvents":[...]}, with the
// members added by member. Call it before the first event.
func (o *output) object() { o.obj = true }

// member adds a top-level member, its name and value as JSON text, to be
// written after the events of an object output; but displayTimeUnit,
// before they are written, goes at the head, where the tracer package
// writes it.
func (o *output) member(key, value []byte) {
	if string(key) == "displayTimeUnit" && !o.started && o.unit == nil {
		o.unit = append([]byte(nil), value...)
		return
	}
	o.members = append(o.members, ",\n\""...)
	o.members = append(o.members, key...)
	o.members = append(o.members, "\":"...)
	o.members = append(o.members, value...)
}

// start writes the head of the trace, once.
func (o *output) start() {
	if o.started {
		return
	}
	o.started = true
	switch {
	case o.obj && o.unit != nil:
		o.write([]byte(`{"displayTimeUnit":`))
		o.write(o.unit)
		o.write([]byte(`,"traceEvents":[` + "\n"))
	case o.obj:
		o.write([]byte("{\"traceEvents\":[\n"))
	default:
		o.write([]byte("[\n"))
	}
}

// lockDestination takes the lock of the regular file at path, if there is
// one, and returns it open (closing it releases the lock); an error if a
// running tracer holds it.
func lockDestination(path string) (*os.File, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, err
	}
	if err := filelock.Lock(f); err != nil {
		f.Close()
		if errors.Is(err, filelock.ErrHeld) {
			return nil, fmt.Errorf("%s: %w: left as it is (write elsewhere, or once the program has stopped)", path, err)
		}
		return nil, err
	}
	return f, nil
}

// isGzipName reports whether path names a gzip file.
func isGzipName(path string) bool { return strings.HasSuffix(path, ".gz") }

func (o *output) write(b []byte) {
	if o.err == nil {
		_, o.err = o.w.Write(b)
	}
}

// event writes one event, the JSON text of an object.
func (o *output) event(raw []byte) {
	o.start()
	if o.events > 0 {
		o.write([]byte(",\n"))
	}
	o.write(raw)
	o.events++
}

// Close ends the array and, for a file, replaces the destination with
// what was written, keeping the mode of the file it replaces.
func (o *output) Close() error {
	if !o.started {
		// No event: {"traceEvents":[]}, which Perfetto recognises as a
		// trace (it looks for {" in the first bytes), where it refuses [].
		o.obj = true
	}
	o.start()
	if o.obj {
		o.write([]byte("\n]"))
		o.write(o.members)
		o.write([]byte("}\n"))
	} else {
		o.write([]byte("\n]\n"))
	}
	if o.zw != nil && o.err == nil {
		o.err = o.zw.Close()
	}
	if o.err == nil {
		o.err = o.bw.Flush()
	}
	if o.tmp == nil {
		return o.err
	}
	if o.err == nil {
		o.err = o.tmp.Sync()
	}
	if st, err := os.Stat(o.path); err == nil && o.err == nil {
		o.err = o.tmp.Chmod(st.Mode().Perm())
	} else if o.err == nil {
		o.err = o.tmp.Chmod(0o644)
	}
	err := errors.Join(o.err, o.tmp.Close())
	if err == nil {
		err = os.Rename(o.tmp.Name(), o.path)
	}
	if err != nil {
		os.Remove(o.tmp.Name())
	}
	o.unlock()
	return err
}

// unlock releases the destination's lock.
func (o *output) unlock() {
	if o.lock != nil {
		o.lock.Close()
		o.lock = nil
	}
}

// Abort gives up the output: the destination is left as it was.
func (o *output) Abort() {
	if o.tmp != nil {
		o.tmp.Close()
		os.Remove(o.tmp.Name())
	}
	o.unlock()
}
