package tracefile

import (
	"fmt"
	"io"
	"strconv"
)

// headEvents is how many first events of a file ReadAnchor reads: the
// tracer package writes its process_name first.
const headEvents = 1000

// An Anchor is a file's wall-clock anchor: the process_name metadata of
// pid carries ts0_unix_ns, the Unix time in nanoseconds of its ts 0,
// which lines up the files of several processes.
type Anchor struct {
	Pid    int64
	UnixNS int64
	OK     bool // the file has one
}

// ReadAnchor reads the first events of the trace at path for a
// process_name with a ts0_unix_ns.
func ReadAnchor(path string) (Anchor, error) {
	src, err := Open(path)
	if err != nil {
		return Anchor{}, err
	}
	defer src.Close()
	r := NewReader(src.Reader())
	for range headEvents {
		ev, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return Anchor{}, fmt.Errorf("%s: %w", path, err)
		}
		if ev.Phase() != 'M' || string(ev.Name.Raw) != "process_name" || ev.Pid.Kind != NumInt {
			continue
		}
		if a := ev.Arg("ts0_unix_ns"); a != nil && a.IsNum {
			ns, _ := strconv.ParseInt(string(a.Value), 10, 64)
			return Anchor{Pid: ev.Pid.Int, UnixNS: ns, OK: true}, nil
		}
	}
	return Anchor{}, nil
}
