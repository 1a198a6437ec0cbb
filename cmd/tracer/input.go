package main

import (
	"io"

	"github.com/gotracer/tracer/internal/tracefile"
)

// An input is a trace file being read, once: its Source (file and
// gzip), its Reader (events) and its progress bar. "-" is standard input;
// a pipe or a FIFO is read as a file is.
type input struct {
	path      string
	src       *tracefile.Source
	r         *tracefile.Reader // made at the first event, after any Head
	onProblem func(tracefile.Problem)
	prog      *progress
}

// openInput opens path for reading events, reporting problems to
// onProblem (which may be nil).
func openInput(path string, quiet bool, onProblem func(tracefile.Problem)) (*input, error) {
	src, err := tracefile.Open(path)
	if err != nil {
		return nil, err
	}
	return &input{path: path, src: src, onProblem: onProblem, prog: newProgress(path, src.Size, quiet, src.Done)}, nil
}

// reader returns the input's Reader.
func (in *input) reader() *tracefile.Reader {
	if in.r == nil {
		in.r = tracefile.NewReader(in.src.Reader())
		in.r.OnProblem = in.onProblem
	}
	return in.r
}

// each calls f for every event of the input, then reports what is wrong
// with its gzip framing, if anything.
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
	if r.OnProblem != nil {
		in.src.ReportGzip(r.Line(), r.OnProblem)
	}
	return nil
}

// crashed reports whether the input looks cut short by a crash: an
// unterminated array, a torn last event or a cut gzip member.
func (in *input) crashed() bool { return in.reader().Unterminated() || in.src.Cut }

func (in *input) Close() error { return in.src.Close() }
