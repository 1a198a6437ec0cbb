package goruntime

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/gotracer/tracer/internal/jsonenc"

	"golang.org/x/exp/trace"
)

// ConvertConfig says where Convert's events go on the timeline.
type ConvertConfig struct {
	// PID is the pid written on every event; 0 means 1.
	PID int

	// Base is the runtime.nanotime reading of ts 0. Zero means the
	// trace's first clock reading. To merge the output with a span trace
	// of the same process (tracer merge), give the span trace's pid and
	// the ts0_mono_ns and ts0_unix_ns of its header: the two files then
	// read as one process's and line up to the nanosecond.
	Base int64

	// Wall is the wall-clock time of ts 0, written in the header for
	// tracer merge. Zero means the one the trace's first clock snapshot
	// gives (Go 1.25 and later).
	Wall time.Time

	// ProcessName names the process; empty means "go runtime".
	ProcessName string
}

// Convert reads an execution trace (from runtime/trace, go test -trace,
// /debug/pprof/trace or trace.FlightRecorder) from r and writes it to w as
// a trace file: the same events Start records, for every goroutine. A
// truncated or corrupt trace is an error, after the events before the
// damage were written as a loadable file. It returns how many events it
// wrote.
func Convert(w io.Writer, r io.Reader, cfg ConvertConfig, opts ...Option) (events int, err error) {
	o, err := buildOptions(opts)
	if err != nil {
		return 0, err
	}
	o.allGoroutine = true
	if cfg.PID == 0 {
		cfg.PID = 1
	}
	if cfg.ProcessName == "" {
		cfg.ProcessName = "go runtime"
	}
	bw := bufio.NewWriterSize(w, 256<<10)
	ct := &fileTracks{pid: cfg.PID}
	c := newConverter(o, cfg.PID, cfg.Base, ct)
	defer func() {
		// The parser checks what it reads, but a corrupt trace is
		// untrusted input: whatever it does, Convert returns an error.
		if p := recover(); p != nil {
			err = fmt.Errorf("goruntime: corrupt execution trace: %v", p)
		}
		if werr := bw.Flush(); err == nil {
			err = werr
		}
	}()
	rd, err := trace.NewReader(r)
	if err != nil {
		return 0, fmt.Errorf("goruntime: not an execution trace: %w", err)
	}
	started, empty := false, true
	var readErr error
	for {
		ev, err := rd.ReadEvent()
		if err == io.EOF {
			break
		}
		if err != nil {
			readErr = fmt.Errorf("goruntime: reading the execution trace: %w", err)
			break
		}
		if !started {
			started = true
			if err := writeHeader(bw, c, &cfg, &ev); err != nil {
				return 0, err
			}
		}
		c.handle(&ev)
		empty = empty && ev.Kind() == trace.EventSync
		if len(c.buf) >= commitBytes {
			if _, err := bw.Write(c.buf); err != nil {
				return events, err
			}
			events += c.events
			c.buf, c.events = c.buf[:0], 0
		}
	}
	if !started {
		if readErr != nil {
			return 0, readErr
		}
		return 0, errors.New("goruntime: the execution trace holds no events")
	}
	c.finish()
	// End the array: the last event without its comma, then "]".
	c.buf = append(c.buf[:len(c.buf)-2], "\n]\n"...)
	if _, err := bw.Write(c.buf); err != nil {
		return events, err
	}
	if readErr == nil && empty {
		readErr = errors.New("goruntime: the execution trace holds no events")
	}
	return events + c.events, readErr
}

// writeHeader writes "[" and the process metadata, with the clocks of
// ts 0 that tracer merge aligns files on.
func writeHeader(w io.Writer, c *converter, cfg *ConvertConfig, first *trace.Event) error {
	var snap *trace.ClockSnapshot
	if first.Kind() == trace.EventSync {
		snap = first.Sync().ClockSnapshot
	}
	if cfg.Base == 0 {
		cfg.Base = int64(first.Time())
		c.base = cfg.Base
	}
	if cfg.Wall.IsZero() && snap != nil {
		cfg.Wall = snap.Wall.Add(time.Duration(cfg.Base - int64(snap.Trace)))
	}
	b := []byte("[\n")
	b = append(b, `{"name":"process_name","ph":"M","pid":`...)
	b = strconv.AppendInt(b, int64(cfg.PID), 10)
	b = append(b, `,"tid":0,"args":{"name":`...)
	b = jsonenc.String(b, cfg.ProcessName)
	if !cfg.Wall.IsZero() {
		b = append(b, `,"ts0_wall":"`...)
		b = cfg.Wall.UTC().AppendFormat(b, time.RFC3339Nano)
		b = append(b, `","ts0_unix_ns":`...)
		b = strconv.AppendInt(b, cfg.Wall.UnixNano(), 10)
	}
	b = append(b, `,"ts0_mono_ns":`...)
	b = strconv.AppendInt(b, cfg.Base, 10)
	b = append(b, "}},\n"...)
	_, err := w.Write(b)
	return err
}

// fileTracks is Convert's tracks: every goroutine, named by its id.
type fileTracks struct{ pid int }

func (f *fileTracks) keep(uint64) bool { return true }
func (f *fileTracks) exited(uint64)    {}
func (f *fileTracks) announce(c *converter, gid uint64) {
	c.buf = appendTracks(c.buf, f.pid, gid, &userTrack{}, false)
	c.events += 2
}
