package main

import (
	"fmt"
	"io"

	"github.com/gotracer/tracer/internal/tracefile"
)

// An input is a trace file being read, once: its Source (file and
// gzip), its Reader (events) and its progress bar. "-" is standard input;
// a pipe or a FIFO is read as a file is, and so is the answer to an
// http:// or https:// URL (see fetch.go).
type input struct {
	path      string // as the user named it
	src       *tracefile.Source
	r         *tracefile.Reader // made at the first event, after any Head
	onProblem func(tracefile.Problem)
	notTrace  *tracefile.Problem // the Reader found no JSON trace at all
	prog      *progress
	fetch     *fetch // the answer to the URL path names, if it does
	ownFetch  bool   // Close closes fetch
}

// openInput opens path (or fetches it, a URL) for reading events,
// reporting problems to onProblem (which may be nil).
func openInput(path string, quiet bool, onProblem func(tracefile.Problem)) (*input, error) {
	if !isURL(path) {
		return openFetched(path, path, nil, quiet, onProblem)
	}
	f, err := stream(path)
	if err != nil {
		return nil, err
	}
	in, err := openFetched(path, f.path, f, quiet, onProblem)
	if err != nil {
		f.Close()
		return nil, err
	}
	in.ownFetch = true
	return in, nil
}

// openFetched opens the input the user named path, its bytes in the file
// open: the answer of f, if f is not nil.
func openFetched(path, open string, f *fetch, quiet bool, onProblem func(tracefile.Problem)) (*input, error) {
	size := int64(0)
	if f != nil {
		size = f.size
	}
	src, err := tracefile.Open(open)
	if err != nil {
		if f != nil {
			return nil, f.named(err)
		}
		return nil, err
	}
	size = max(size, src.Size)
	return &input{path: path, src: src, onProblem: onProblem, prog: newProgress(path, size, quiet, src.Done), fetch: f}, nil
}

// reader returns the input's Reader.
func (in *input) reader() *tracefile.Reader {
	if in.r == nil {
		in.r = tracefile.NewReader(in.src.Reader())
		in.r.OnProblem = func(p tracefile.Problem) {
			if p.Kind == tracefile.KindNotJSON {
				in.notTrace = &p
			}
			if in.onProblem != nil {
				in.onProblem(p)
			}
		}
	}
	return in.r
}

// errNotTrace returns an error if the input read was no JSON trace at
// all (text, a binary file), which the commands that write what they
// read refuse rather than write an empty trace: no viewer opens it.
func (in *input) errNotTrace() error {
	if in.notTrace == nil {
		return nil
	}
	return fmt.Errorf("%s:%d: %s", in.path, in.notTrace.Line, in.notTrace.Msg)
}

// each calls f for every event of the input, then reports what is wrong
// with its gzip framing, if anything. A fetch stopped by Ctrl-C is an
// error, once its events are read: no command takes it for the whole.
func (in *input) each(f func(*tracefile.Event) error) error {
	defer in.prog.finish()
	r := in.reader()
	for {
		ev, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if err := f(ev); err != nil {
			return err
		}
		in.prog.tick()
	}
	if in.fetch != nil {
		if err := in.fetch.ended(); err != nil {
			return err
		}
	}
	if in.onProblem != nil {
		in.src.ReportGzip(r.Line(), r.OnProblem)
	}
	return nil
}

// crashed reports whether the input looks cut short by a crash: an
// unterminated array, a torn last event or a cut gzip member; or, for a
// URL, an answer cut short.
func (in *input) crashed() bool {
	return in.reader().Unterminated() || in.src.Cut || in.fetch != nil && in.fetch.wasCut()
}

// cutNote says how the input was cut short, if it was: as a crash leaves
// a file, or, for a URL, the answer cut short (the server died, or the
// connection), which the events read say too.
func (in *input) cutNote() string {
	switch {
	case in.fetch != nil && in.fetch.wasCut():
		return in.fetch.cutNote()
	case in.crashed():
		return "the file ends as a crash leaves it"
	}
	return ""
}

func (in *input) Close() error {
	err := in.src.Close()
	if in.ownFetch {
		in.fetch.Close()
	}
	return err
}
