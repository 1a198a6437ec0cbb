package main

import (
	"io"

	"github.com/gotracer/tracer/internal/tracefile"
)

// An input is a trace file being read: its Source (file and gzip), its
// Reader (events) and its progress bar.
type input struct {
	src  *tracefile.Source
	r    *tracefile.Reader
	prog *progress
}

// openInput opens path for reading events, reporting problems to
// onProblem (which may be nil).
func openInput(path string, quiet bool, onProblem func(tracefile.Problem)) (*input, error) {
	src, err := tracefile.Open(path)
	if err != nil {
		return nil, err
	}
	r := tracefile.NewReader(src.Reader())
	r.OnProblem = onProblem
	return &input{src: src, r: r, prog: newProgress(path, src.Size, quiet, src.Done)}, nil
}

// each calls f for every event of the input, then reports what is wrong
// with its gzip framing, if anything.
func (in *input) each(f func(*tracefile.Event) error) error {
	defer in.prog.finish()
	for {
		ev, err := in.r.Next()
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
	if in.r.OnProblem != nil {
		in.src.ReportGzip(in.r.Line(), in.r.OnProblem)
	}
	return nil
}

// crashed reports whether the input looks cut short by a crash: an
// unterminated array, a torn last event or a cut gzip member.
func (in *input) crashed() bool { return in.r.Unterminated() || in.src.Cut }

func (in *input) Close() error { return in.src.Close() }
