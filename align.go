package tracer

import (
	"bytes"
	"io"
	"os"
)

// Torn writes.
//
// Every batch the flusher writes ends on an event boundary, but a write(2)
// to a file is not atomic: Linux copies it into the page cache one page
// (or folio) at a time and, before each, gives up if the process has been
// killed, returning what it copied so far; a full disk stops a write at a
// page or block as well. A process killed by SIGKILL in the middle of a
// write therefore leaves a file that ends inside an event (the crash
// matrix test saw it about once in 40 kills), which chrome://tracing
// refuses to load and the documented repair (strip the comma, add "]")
// does not fix.
//
// Such a cut falls only at a multiple of the page size, and every page
// size is a multiple of 4 KiB. So on a file the flusher never lets an
// event straddle a 4 KiB boundary of the file: an event that would is
// moved to start on the boundary and the gap before it is filled with
// newlines, which JSON and both viewers skip as whitespace. A cut then
// falls between two events or inside padding, and the file still ends on
// an event boundary. The padding costs half an event per 4 KiB on average,
// 1-2% of the file. An event longer than 4 KiB (possible only with very
// long strings) cannot be kept off a boundary; a kill can still cut it,
// and the repair then has to drop the partial last line.
//
// A write that fails part-way for another reason (a file size limit, or a
// file system that stops elsewhere) is cut back to the last whole event
// with Truncate, so the events written after it do not follow half an
// event.

// pageSize is the boundary events are kept off.
const pageSize = 4096

// fileSink is the part of *os.File the flusher uses to cut back a torn
// write.
type fileSink interface {
	Truncate(size int64) error
	Seek(offset int64, whence int) (int64, error)
}

// alignsWrites reports whether the flusher pads events off page
// boundaries for s: only for a plain file, which starts empty (New
// truncates it), so the flusher knows every write's offset.
func alignsWrites(s sink) bool {
	_, ok := s.(*os.File)
	return ok
}

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

// writeOut writes b, whole events, to the sink: padded off page
// boundaries if the sink is a file, and cut back to its last whole event
// if the write fails part-way. It returns the bytes the sink took.
func (f *flusher) writeOut(b []byte) (int, error) {
	if f.align {
		f.padded = alignEvents(f.padded[:0], b, f.off)
		b = f.padded
	}
	n, err := f.sink.Write(b)
	f.off += int64(n)
	if err != nil && n > 0 {
		if keep := bytes.LastIndexByte(b[:n], '\n') + 1; keep < n {
			if fs, ok := f.sink.(fileSink); ok {
				cut := f.off - int64(n-keep)
				if fs.Truncate(cut) == nil {
					if _, err := fs.Seek(cut, io.SeekStart); err == nil {
						f.off = cut
					}
				}
			}
		}
	}
	return n, err
}
