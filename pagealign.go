package tracer

import (
	"bytes"
	"errors"
	"fmt"
)

// Torn writes.
//
// Every batch the flusher writes ends on an event boundary, but a write(2)
// to a file is not atomic: Linux copies it into the page cache one page
// (or folio) at a time and, before each, gives up if the process has been
// killed, returning what it copied so far; a full disk stops a write at a
// page or block as well. A process killed by SIGKILL in the middle of a
// write therefore leaves a file that ends inside an event (the crash tests
// saw it about once in 40 kills), which chrome://tracing refuses to load
// and the documented repair (strip the comma, add "]") does not fix.
//
// Such a cut falls only at a multiple of the page size, and every page
// size is a multiple of 4 KiB. So in a plain JSON file no event straddles
// a 4 KiB boundary of the file: an event that would is moved to start on
// the boundary and the gap before it is filled with newlines, which JSON
// and both viewers skip as whitespace. A cut then falls between two events
// or inside padding, and the file still ends on an event boundary. The
// padding costs half an event per 4 KiB on average, 1-2% of the file. An
// event longer than 4 KiB (possible only with very long strings) cannot be
// kept off a boundary; a kill can still cut it, and the repair then has to
// drop the partial last line. A write that fails part-way for another
// reason is cut back to the last whole write by fileSink.

// pageSize is the boundary events are kept off.
const pageSize = 4096

// A pageAligned sink lays out the batches it is given for a plain JSON
// file (compressed data has no boundaries to keep), tracking the file's
// offset across writes.
type pageAligned struct {
	file   *fileSink
	offset int64  // bytes the file holds
	out    []byte // the aligned batch, reused
	ended  bool   // the last batch closed the array: see Close
}

// Write writes batch, whole lines each ending with '\n', laid out so that
// no line straddles a page of the file. It reports len(batch) when all of
// it reached the file: the padding is the sink's business.
func (a *pageAligned) Write(batch []byte) (int, error) {
	n, err := a.file.Write(a.align(batch))
	a.offset += int64(n)
	if err != nil {
		return min(n, len(batch)), err
	}
	a.ended = bytes.HasSuffix(batch, []byte("]\n"))
	return len(batch), nil
}

// The events are laid out so that a kill's cut falls between them: nothing
// is left for a writer to mind.
func (a *pageAligned) traits() sinkTraits { return sinkTraits{} }

// Close closes the file, first making a file whose array was closed into
// the object form that sets the display unit: see objectHead.
func (a *pageAligned) Close() error {
	var err error
	if a.ended {
		err = a.setTimeUnit()
	}
	return errors.Join(err, a.file.Close())
}

// The display unit.
//
// chrome://tracing draws a trace in its default unit, milliseconds, with
// slice bounds compared at a precision of one microsecond: sibling spans
// shorter than that, back to back, are drawn nested in a staircase, where
// Perfetto draws them side by side. Its only other unit is set by
// "displayTimeUnit", a key of the JSON object form, and neither viewer
// loads an object cut short, as a killed process leaves it. So a plain
// file starts as an array behind as many spaces as the object's head
// takes, and when Close has closed the array, the spaces become the head
// and a "}" ends the object: a closed file is {"displayTimeUnit":"ns",
// "traceEvents":[...]}, which both viewers draw the same, and a file cut
// short is still an array. A rotated file is closed the same way when
// the next one starts. A gzip file is made the object when Close joins
// its members (see joinGzipMembers); streamed traces cannot be written
// over, and stay arrays.
const objectHead = `{"displayTimeUnit":"ns","traceEvents":`

// setTimeUnit turns the closed array in the file into the object. The "}"
// goes first: a kill between the two writes leaves a file Perfetto loads
// (an array followed by a "}"), where the other order would leave one
// that neither viewer loads.
func (a *pageAligned) setTimeUnit() error {
	if _, err := a.file.Write([]byte("}\n")); err != nil {
		return nil // the file is a whole array still
	}
	if _, err := a.file.f.WriteAt([]byte(objectHead), 0); err != nil {
		a.file.size -= 2
		if uerr := a.file.undo(); uerr != nil {
			return fmt.Errorf("tracer: setting the display unit: %w", errors.Join(err, uerr))
		}
	}
	return nil
}

// align returns batch laid out for the current offset; the first batch
// goes behind the spaces that objectHead may take.
func (a *pageAligned) align(batch []byte) []byte {
	a.out = a.out[:0]
	if a.offset == 0 {
		a.out = append(a.out, spaces[:len(objectHead)]...)
	}
	a.out = alignEvents(a.out, batch, a.offset+int64(len(a.out)))
	return a.out
}

var spaces = bytes.Repeat([]byte(" "), 64)

// alignEvents appends b, whole lines of one event each, to dst, with
// newlines inserted before every line that would otherwise straddle a
// multiple of pageSize when dst is written at file offset off.
func alignEvents(dst, b []byte, off int64) []byte {
	for {
		room := pageSize - int(off%pageSize) // bytes before the next boundary
		if len(b) <= room {
			return append(dst, b...)
		}
		// Copy the lines that end before the boundary.
		start := bytes.LastIndexByte(b[:room], '\n') + 1
		dst = append(dst, b[:start]...)
		off += int64(start)
		b = b[start:]
		if start == room {
			continue // a line starts on the boundary
		}
		// b[0] starts the line across the boundary.
		n := bytes.IndexByte(b, '\n') + 1
		if n == 0 {
			n = len(b)
		}
		if n > pageSize {
			// Too long to fit in a page wherever it starts.
			dst = append(dst, b[:n]...)
			off += int64(n)
			b = b[n:]
			continue
		}
		for range room - start {
			dst = append(dst, '\n')
		}
		off += int64(room - start)
	}
}
