package tracer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"go.uber.org/atomic"
)

// Rotation. With WithMaxFileSize, the trace at path is cut into files of
// about that size. path always holds the newest events; when it is full,
// it is closed (ending its JSON array) and renamed with a sequence number
// before its extension, and a new file is started at path:
//
//	trace.json            the current file
//	trace.000007.json     the file before it
//	trace.000006.json     ...
//
// (trace.000007.json.gz for "trace.json.gz"). Numbers go on from the
// highest found next to path when the tracer starts, so files of earlier
// runs keep their place in the order and count against WithMaxFiles.
//
// Every file opens alone in both viewers: it starts with "[", the process
// metadata and wall-clock anchor, and the drop counter, and it names the
// goroutines whose events it holds (see tracknames.go). A span whose B
// event is in an earlier file and whose E event is not written yet has its
// B event written again at the top of the new file, with its start time
// and args: chrome://tracing refuses an E without a B before it. Read
// together, the files therefore hold such B events twice.

// minFileSize is the smallest size WithMaxFileSize accepts.
const minFileSize = 4 << 10

// errRotateStream is returned when rotation is asked of a stream.
var errRotateStream = errors.New("tracer: WithMaxFileSize and WithMaxFiles need a file path")

// A rotator is the sink of a rotated trace: it writes to the current file
// and, driven by the flusher, which writes each file's head and end,
// replaces it by a new one.
type rotator struct {
	path      string
	base, ext string // path is base+ext; a rotated file is base.NNNNNN+ext
	opts      sinkOptions

	file  *fileSink // the current file
	out   sink      // writes to file: a pageAligned or a gzipSink
	gz    *gzipSink // out, when gzipped
	next  int       // the sequence number of the next rotated file
	limit int64     // the size at which to rotate: maxSize, or more after a failure

	lastRatio float64 // see ratio

	retired     sync.WaitGroup
	lastRetired chan struct{} // closed when the latest retirement is done: see retire

	removed atomic.Uint64 // events in the files retire removed: see deleted

	mu       sync.Mutex     // guards what follows, shared with retire
	rotated  []rotatedFile  // the rotated files on disk, oldest first
	unjoined []unjoinedFile // gzip files whose join failed: see rejoin
	errs     []error        // from retire, for the flusher to report
}

// An unjoinedFile is a rotated gzip file whose join failed.
type unjoinedFile struct {
	seq int
	err *unjoinedError // the last failure
}

// A rotatedFile is a rotated file on disk.
type rotatedFile struct {
	seq    int // its sequence number
	events int // the events this tracer wrote to it: none for an earlier run's
}

func newRotator(path string, o *sinkOptions) (*rotator, error) {
	r := &rotator{opts: *o, limit: o.maxSize, lastRatio: 1}
	r.setPath(path)
	// Open (and lock) path first: the rotated files beside it are then
	// this tracer's to number and remove.
	if err := r.open(); err != nil {
		return nil, err
	}
	// Through a symlink, the files rotate beside the file it points to,
	// and the symlink keeps pointing to the newest: renaming the symlink
	// itself would put the later files in the link's directory.
	if real, err := filepath.EvalSymlinks(path); err == nil && real != path {
		r.setPath(real)
		r.file.path = real
		if r.gz != nil {
			r.gz.path = real
		}
	}
	if err := r.findRotated(); err != nil {
		r.file.Close()
		return nil, fmt.Errorf("tracer: %w", err)
	}
	return r, nil
}

// setPath makes path the current file's, and the rotated files' names
// follow it.
func (r *rotator) setPath(path string) {
	r.path = path
	r.ext = filepath.Ext(path)
	if r.ext == ".gz" {
		r.ext = filepath.Ext(strings.TrimSuffix(path, ".gz")) + ".gz"
	}
	r.base = strings.TrimSuffix(path, r.ext)
}

// nextPath is where a rotation makes the new file for path, before it
// puts it in place (see swap).
func nextPath(path string) string { return path + ".next" }

// name returns the name of the rotated file with sequence number seq.
func (r *rotator) name(seq int) string {
	return fmt.Sprintf("%s.%06d%s", r.base, seq, r.ext)
}

// findRotated lists the rotated files an earlier run left next to path.
func (r *rotator) findRotated() error {
	dir, prefix := filepath.Split(r.base)
	entries, err := os.ReadDir(filepath.Clean(dir + "."))
	if err != nil {
		return err
	}
	for _, e := range entries {
		mid, ok := strings.CutPrefix(e.Name(), prefix+".")
		if !ok {
			continue // another file: never to be renumbered or removed
		}
		if _, ok := strings.CutSuffix(mid, r.ext+joinSuffix); ok {
			// A rotated file's join, left by a kill: see removeStale.
			os.Remove(filepath.Join(dir, e.Name()))
			continue
		}
		if mid, ok = strings.CutSuffix(mid, r.ext); !ok {
			continue
		}
		if seq, err := strconv.Atoi(mid); err == nil && seq >= 0 && fmt.Sprintf("%06d", seq) == mid {
			r.rotated = append(r.rotated, rotatedFile{seq: seq})
		}
	}
	slices.SortFunc(r.rotated, func(a, b rotatedFile) int { return a.seq - b.seq })
	if n := len(r.rotated); n > 0 {
		r.next = r.rotated[n-1].seq + 1
	} else {
		r.next = 1
	}
	return nil
}

// open starts a new, empty current file at path.
func (r *rotator) open() error {
	fs, ws, err := openFile(r.path, r.opts.fifoWait)
	if err != nil {
		return err
	}
	if ws != nil {
		ws.Close()
		return fmt.Errorf("tracer: %s is not a regular file, which rotation needs", r.path)
	}
	r.use(fs)
	return nil
}

// use makes fs the current file.
func (r *rotator) use(fs *fileSink) {
	r.file = fs
	r.out, r.gz = r.opts.onFile(fs)
}

func (r *rotator) Write(p []byte) (int, error) { return r.out.Write(p) }

// Close closes the current file and waits for the rotated ones to be
// finished.
func (r *rotator) Close() error {
	err := r.out.Close()
	r.retired.Wait()
	r.mu.Lock()
	r.rejoin()
	for _, u := range r.unjoined {
		r.errs = append(r.errs, u.err)
	}
	r.mu.Unlock()
	return errors.Join(append(r.takeErrors(), err)...)
}

func (r *rotator) traits() sinkTraits { return sinkTraits{files: r} }

// ratio is the compression ratio of the current file, if gzipped, or the
// last one measured while the file holds no whole member yet.
func (r *rotator) ratio() float64 {
	if r.gz != nil && r.gz.raw > 0 {
		r.lastRatio = float64(r.file.size) / float64(r.gz.raw)
	}
	return r.lastRatio
}

// cut renames the current file, ends it with end, opens a new one at path
// and retires the old one: see swap and retire.
func (r *rotator) cut(end, opening []byte, events, endEvents int) (endErr error, errs []error, err error) {
	errs = r.takeErrors()
	old, seq, err := r.swap(opening)
	if err != nil {
		return nil, errs, err
	}
	if _, endErr = old.Write(end); endErr == nil {
		events += endEvents
	}
	r.retire(old, rotatedFile{seq: seq, events: events})
	return endErr, errs, nil
}

func (r *rotator) deleted() uint64 { return r.removed.Load() }

// swap gives the current file its rotated name and puts a new one at
// path. It returns the old file's sink and sequence number, for cut to
// write its end and hand to retire. If it fails, the current file stays,
// and swap is tried again once the file has grown by another maxSize.
//
// path is never without a file this tracer holds locked, so no other
// tracer can take it: the new file is made and locked under another name
// (nextPath), the current file gets its rotated name as a second name (a
// hard link), and then the new file is renamed over path, which replaces
// path's name atomically. Where the file system has no hard links, the
// current file is renamed instead: between the two renames, path is
// free for a moment.
//
// The new file gets its opening ("[" and the process metadata) before it
// is put in place, so that path never names a file a viewer cannot open,
// even empty for a moment: a kill right after the rename leaves a trace
// of no events. A full disk that refuses the opening fails the swap.
func (r *rotator) swap(opening []byte) (sink, int, error) {
	seq := r.next
	rotated := r.name(seq)
	oldFile, old, oldGz := r.file, r.out, r.gz
	fail := func(err error) (sink, int, error) {
		r.limit = oldFile.size + r.opts.maxSize
		return nil, 0, fmt.Errorf("tracer: rotating: %w", err)
	}
	next := nextPath(r.path)
	fs, ws, err := openFile(next, 0)
	if err != nil {
		return fail(err)
	}
	if ws != nil {
		ws.Close()
		return fail(fmt.Errorf("%s is not a regular file", next))
	}
	out, gz := r.opts.onFile(fs)
	if _, err := out.Write(opening); err != nil {
		fs.Close()
		os.Remove(next)
		return fail(err)
	}
	if err := os.Link(r.path, rotated); err != nil {
		if errors.Is(err, os.ErrExist) {
			fs.Close()
			os.Remove(next)
			return fail(err)
		}
		// No hard links here: rename.
		if err := os.Rename(r.path, rotated); err != nil {
			fs.Close()
			os.Remove(next)
			return fail(err)
		}
	}
	if err := os.Rename(next, r.path); err != nil {
		if _, lerr := os.Stat(r.path); lerr == nil {
			os.Remove(rotated) // the second name: path keeps the newest events
		} else {
			os.Rename(rotated, r.path) // renamed: undo
		}
		fs.Close()
		os.Remove(next)
		return fail(err)
	}
	fs.path = r.path
	if gz != nil {
		gz.path = r.path // Close joins its members
	}
	r.file, r.out, r.gz = fs, out, gz
	r.next++
	r.limit = r.opts.maxSize
	if oldGz != nil {
		oldGz.path = rotated
		if r.opts.maxFiles == 1 {
			oldGz.path = "" // about to be removed: not worth joining
		}
	}
	return old, seq, nil
}

// retire closes the sink of a rotated file, which joins its gzip members,
// and removes the oldest files beyond maxFiles, in the background: joining
// reads the whole file, and the writer must not wait for it. One file is
// retired at a time: a retirement waits for the one before, so that no
// file is removed before it is finished, and a writer that rotates faster
// than files are joined waits here, as it waits for a slow disk, rather
// than leave a goroutine and an open file behind for every rotation.
func (r *rotator) retire(old sink, file rotatedFile) {
	r.mu.Lock()
	r.rotated = append(r.rotated, file)
	r.mu.Unlock()
	if r.lastRetired != nil {
		<-r.lastRetired
	}
	done := make(chan struct{})
	r.lastRetired = done
	r.retired.Add(1)
	go func() {
		defer r.retired.Done()
		defer close(done)
		err := old.Close()
		r.mu.Lock()
		defer r.mu.Unlock()
		r.rejoin()
		if u, ok := err.(*unjoinedError); ok {
			r.unjoined = append(r.unjoined, unjoinedFile{file.seq, u})
		} else if err != nil {
			r.errs = append(r.errs, err)
		}
		for r.opts.maxFiles > 0 && len(r.rotated) > r.opts.maxFiles-1 && r.rotated[0].seq <= file.seq {
			if err := os.Remove(r.name(r.rotated[0].seq)); err != nil && !errors.Is(err, os.ErrNotExist) {
				r.errs = append(r.errs, fmt.Errorf("tracer: removing an old file: %w", err))
			} else {
				r.removed.Add(uint64(r.rotated[0].events))
			}
			r.rotated = r.rotated[1:]
		}
	}()
}

// rejoin joins again the members of the rotated gzip files whose join
// failed (a full disk has no room for the copy), as long as they are
// kept: a later retirement, or Close, may find room. At Close, it reports
// those that stay as they are: complete, but read by chrome://tracing
// only up to their first member. r.mu is held: the joins are of files
// already retired, which no other goroutine touches.
func (r *rotator) rejoin() {
	kept := r.unjoined[:0]
	for _, u := range r.unjoined {
		if !slices.ContainsFunc(r.rotated, func(f rotatedFile) bool { return f.seq == u.seq }) {
			continue // removed: see WithMaxFiles
		}
		if err := joinGzipMembers(r.name(u.seq)); err != nil {
			u.err = &unjoinedError{path: r.name(u.seq), err: err}
			kept = append(kept, u)
		}
	}
	r.unjoined = kept
}

// takeErrors returns the errors of past retirements.
func (r *rotator) takeErrors() []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	errs := r.errs
	r.errs = nil
	return errs
}
