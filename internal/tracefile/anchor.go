package tracefile

import (
	"bytes"
	"io"
	"strconv"
)

// headEvents is how many first events of a file Anchor reads, and
// headBytes how many first bytes (uncompressed): the tracer package
// writes its process_name first.
const (
	headEvents = 1000
	headBytes  = 256 << 10
)

// An Anchor is a file's wall-clock anchor: the process_name metadata of
// pid carries ts0_unix_ns, the Unix time in nanoseconds of its ts 0,
// which lines up the files of several processes.
type Anchor struct {
	Pid    int64
	UnixNS int64
	OK     bool // the file has one
}

// Head reads the start of the contents (at most 256 KiB), which Reader
// returns again, and returns it: what a caller needs to know of a file
// before it reads its events (its anchor, whether it is a copy of
// another) without reading the file twice, which a pipe cannot be. It
// must be called before Reader is read.
func (s *Source) Head() ([]byte, error) {
	if s.head != nil {
		return s.head, nil
	}
	buf := make([]byte, headBytes)
	n, err := io.ReadFull(s.r, buf)
	if err == io.ErrUnexpectedEOF || err == io.EOF {
		err = nil
	}
	s.head = buf[:n:n]
	return s.head, err
}

// Anchor returns the file's anchor, from the first events of its head
// (see Head).
func (s *Source) Anchor() (Anchor, error) {
	head, err := s.Head()
	if err != nil {
		return Anchor{}, err
	}
	return anchorIn(head), nil
}

// anchorIn returns the anchor of the first events of head.
func anchorIn(head []byte) Anchor {
	r := NewReader(bytes.NewReader(head))
	for range headEvents {
		ev, err := r.Next()
		if err != nil {
			break
		}
		if ev.Phase() != 'M' || string(ev.Name.Raw) != "process_name" || ev.Pid.Kind != NumInt {
			continue
		}
		if a := ev.Arg("ts0_unix_ns"); a != nil && a.IsNum {
			ns, _ := strconv.ParseInt(string(a.Value), 10, 64)
			return Anchor{Pid: ev.Pid.Int, UnixNS: ns, OK: true}
		}
	}
	return Anchor{}
}

// ReadAnchor opens the trace at path and returns its anchor (see
// Source.Anchor).
func ReadAnchor(path string) (Anchor, error) {
	src, err := Open(path)
	if err != nil {
		return Anchor{}, err
	}
	defer src.Close()
	return src.Anchor()
}
