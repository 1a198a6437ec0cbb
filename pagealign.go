package tracer

import "bytes"

// A process killed with SIGKILL in the middle of a large write(2) to a file
// leaves part of it behind: Linux copies a write into the page cache a page
// at a time and gives up between pages once a fatal signal is pending, and
// a full disk cuts a write short the same way. The cut then falls on a
// multiple of the page size in the file. So the flusher lays events out so
// that every page boundary is also an event boundary: an event that would
// straddle one starts on the next page instead, and the gap is filled with
// spaces and a newline, which JSON and both viewers ignore. A torn write then
// still ends on a whole event. An event longer than a page cannot be
// placed this way and may still be cut.
const pageSize = 4096

// A pageAligned sink lays out the batches it is given for a plain JSON
// file (compressed data has no boundaries to keep), tracking the file's
// offset across writes.
type pageAligned struct {
	file   *fileSink
	offset int64  // bytes the file holds
	out    []byte // the aligned batch, reused
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
	return len(batch), nil
}

func (a *pageAligned) Close() error { return a.file.Close() }

// align returns batch laid out for the current offset.
func (a *pageAligned) align(batch []byte) []byte {
	out := a.out[:0]
	off := a.offset
	for len(batch) > 0 {
		n := bytes.IndexByte(batch, '\n') + 1
		if n == 0 {
			n = len(batch)
		}
		room := pageSize - off%pageSize
		if int64(n) > room && n <= pageSize && room < pageSize {
			out = append(out, spaces[:room-1]...)
			out = append(out, '\n')
			off += room
		}
		out = append(out, batch[:n]...)
		off += int64(n)
		batch = batch[n:]
	}
	a.out = out
	return out
}

var spaces = bytes.Repeat([]byte{' '}, pageSize)
