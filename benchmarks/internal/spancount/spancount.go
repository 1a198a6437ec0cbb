// Package spancount counts the spans in a trace file the tracer wrote, so
// the benchmarks can check that every span they recorded reached the file.
// It reads the file with the repository's one trace reader,
// internal/tracefile.
package spancount

import (
	"errors"
	"fmt"
	"io"

	"github.com/gotracer/tracer/internal/tracefile"
)

// Counts is what Count found in a file.
type Counts struct {
	Spans    int // X events with the name asked for, plus matched B/E pairs
	Begins   int // B events with that name left without their E
	Unpaired int // E events with that name that matched no B
	Events   int // all events in the file, metadata and counters included
}

// Count reads the trace file at path (plain or gzip, closed or cut off
// by a crash) and counts the spans named name: X events, and B/E pairs
// matched per thread (tid) in file order. A torn last line, which a crash
// leaves, is not counted; any other problem the reader finds (invalid
// JSON, broken framing) is an error, since a benchmark's file must be
// whole.
func Count(path, name string) (Counts, error) {
	src, err := tracefile.Open(path)
	if err != nil {
		return Counts{}, err
	}
	defer src.Close()
	return count(src.Reader(), name)
}

func count(in io.Reader, name string) (Counts, error) {
	var c Counts
	var bad error
	r := tracefile.NewReader(in)
	r.OnProblem = func(p tracefile.Problem) {
		if p.Kind != tracefile.KindTorn && bad == nil {
			bad = fmt.Errorf("spancount: line %d: %s", p.Line, p.Msg)
		}
	}
	open := map[int64]int{} // B events of name still open, per tid
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return c, err
		}
		c.Events++
		if !named(ev.Name, name) {
			continue
		}
		switch ev.Phase() {
		case 'X':
			c.Spans++
		case 'B':
			open[ev.Tid.Int]++
		case 'E':
			if open[ev.Tid.Int] == 0 {
				c.Unpaired++
				continue
			}
			open[ev.Tid.Int]--
			c.Spans++
		}
	}
	for _, n := range open {
		c.Begins += n
	}
	return c, bad
}

// named reports whether s is name, decoding s only if it holds escapes.
func named(s tracefile.Str, name string) bool {
	if s.Escaped {
		return s.String() == name
	}
	return string(s.Raw) == name
}
