package tracer

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/klauspost/compress/flate"
)

// A trace is gzipped when its path ends in ".gz" or WithGzip is given.
//
// Every Write the flusher makes becomes complete gzip members of at most a
// page each, and the members follow each other in the file. Concatenated
// members are one valid gzip stream (RFC 1952): gunzip, Go's gzip.Reader
// and Perfetto read them all. A process killed in the middle of a write
// leaves a file cut at a page boundary, which is also a member boundary
// (see gzipSink), so every member is whole, holding everything up to the
// last flush; one gzip stream kept open across flushes would leave a
// member cut short, which Perfetto refuses whole.
//
// chrome://tracing reads only the first member. So when a gzip file is
// closed (by Close, or by rotation) its members are joined into one,
// without compressing anything again: each member's deflate data ends with
// a sync flush, on a byte boundary and outside any block, so the deflate
// data of all members laid end to end, followed by one final empty block,
// is one deflate stream (no member refers back to data before its start).
// A file left by a crash stays in members: open it in Perfetto, or gunzip
// it first.
//
// The compressor is github.com/klauspost/compress/flate: on trace data it
// compresses as well as compress/flate at the same level, about twice as
// fast at level 1 and three and a half times at level 6
// (BenchmarkGzipCompressors; the README has the numbers).

// DefaultGzipLevel is the compression level of a gzip trace unless
// WithGzip sets another: gzip.BestSpeed, because the flusher shares the
// machine with the program it traces. On trace data level 1 makes files
// 15-25% larger than level 6 (8.9 bytes a span rather than 7.6) for half
// the CPU time.
const DefaultGzipLevel = 1

// joinLimit is the largest trace, uncompressed, whose gzip members are
// joined when it is closed. chrome://tracing cannot load a larger trace
// anyway (it holds the whole JSON in one string), and joining costs a read
// of the file.
const joinLimit = 256 << 20

// gzipHeader starts every member: no name, no time, unknown OS.
var gzipHeader = [10]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff}

// finalBlock is an empty final deflate block with fixed Huffman codes,
// starting on a byte boundary: BFINAL=1, BTYPE=01, then the end-of-block
// code, seven zero bits.
var finalBlock = [2]byte{0x03, 0x00}

// syncMarker ends the deflate data of a flush: an empty stored block.
var syncMarker = [4]byte{0x00, 0x00, 0xff, 0xff}

// A gzipSink compresses every Write into gzip members of at most a page
// each and writes them to out with one Write.
//
// A kill in the middle of a write can cut a file at any page boundary
// (see pagealign.go), and a cut member makes Perfetto refuse the whole
// trace. So, on a file, no member straddles a 4 KiB boundary: a member
// that would is preceded by a filler, an empty member whose header carries
// an extra field as long as the gap (RFC 1952's FEXTRA), which every gzip
// reader skips and joinGzipMembers drops. A batch is split at line
// boundaries into chunks that compress to a page or less; only a single
// event that compresses to more than a page (very long strings) can still
// be cut. On a pipe, members are written in pieces of at most pipeBuf
// bytes (see writerSink), for the same reason.
type gzipSink struct {
	out     sink
	level   int
	zw      *flate.Writer
	member  bytes.Buffer
	batch   []byte // the members of one Write, with fillers
	ratio   int    // raw bytes per compressed byte of the last member, to size chunks
	aligned bool   // out is a file: keep members off page boundaries
	offset  int64  // bytes of whole writes in out, when aligned
	raw     int64  // uncompressed bytes in whole members
	path    string // the file out writes to, if any: Close joins its members
	pipe    bool   // out is a pipe: write members in atomic pieces
	ends    []int  // members of batch: where each ends in it, and in p
	rawEnds []int
}

// newGzipSink returns a gzipSink writing to out, or only compressing, for
// a nil out.
func newGzipSink(out sink, level int) *gzipSink {
	g := &gzipSink{out: out, level: level, ratio: 4}
	if out != nil {
		tr := out.traits()
		g.aligned, g.pipe = tr.pageCuts, tr.pipe
	}
	return g
}

// A gzip stream is cut only between members, which the sink itself keeps
// off page boundaries and writes to a pipe in atomic pieces: nothing is
// left for a writer to mind.
func (g *gzipSink) traits() sinkTraits { return sinkTraits{} }

func (g *gzipSink) Write(p []byte) (int, error) {
	b := g.batch[:0]
	off := g.offset
	g.ends, g.rawEnds = g.ends[:0], g.rawEnds[:0]
	for rest := p; len(rest) > 0; {
		chunk := lineChunk(rest, g.ratio*(pageSize-pageSize/8))
		m, err := g.compress(chunk)
		for err == nil && len(m) > pageSize && len(chunk) > 1 {
			shorter := lineChunk(chunk, len(chunk)/2)
			if len(shorter) == len(chunk) {
				break // one line that does not fit in a page
			}
			chunk = shorter
			m, err = g.compress(chunk)
		}
		if err != nil {
			return 0, err
		}
		g.ratio = max(1, len(chunk)/len(m))
		if room := pageSize - off%pageSize; g.aligned && int64(len(m)) > room && len(m) <= pageSize {
			b = appendFiller(b, int(room))
			off += room
		}
		if gap := pageSize - (off+int64(len(m)))%pageSize; g.aligned && gap < int64(minFiller) {
			b = appendPadded(b, m, int(gap))
		} else {
			b = append(b, m...)
		}
		off = g.offset + int64(len(b))
		rest = rest[len(chunk):]
		g.ends, g.rawEnds = append(g.ends, len(b)), append(g.rawEnds, len(p)-len(rest))
	}
	g.batch = b
	if g.pipe && len(b) > pipeBuf {
		return g.writePieces(p, b)
	}
	if n, err := g.out.Write(b); err != nil {
		if n < len(b) {
			return 0, err // a member is readable only whole
		}
		// A stream keeps what it could not write and writes it next
		// time (see writerSink): all of p reaches it.
		g.offset += int64(len(b))
		g.raw += int64(len(p))
		return len(p), err
	}
	g.offset += int64(len(b))
	g.raw += int64(len(p))
	return len(p), nil
}

// writePieces writes b, the members compressed from p, to a pipe in pieces
// of whole members of at most pipeBuf bytes where it can, and returns how
// much of p reached it.
func (g *gzipSink) writePieces(p, b []byte) (int, error) {
	start, rawStart := 0, 0
	for i, end := range g.ends {
		last := i == len(g.ends)-1
		if !last && g.ends[i+1]-start <= pipeBuf {
			continue // the next member fits in this piece too
		}
		n, err := g.out.Write(b[start:end])
		if err != nil {
			if n < end-start {
				return rawStart, err
			}
			// The writer keeps the rest of the piece for its next
			// Write: the piece reaches the pipe.
			rawStart = g.rawEnds[i]
			g.offset += int64(end)
			g.raw += int64(rawStart)
			return rawStart, err
		}
		start, rawStart = end, g.rawEnds[i]
	}
	g.offset += int64(len(b))
	g.raw += int64(len(p))
	return len(p), nil
}

// lineChunk returns the longest prefix of p that ends a line and is at most
// n bytes long, or the first line if it is longer.
func lineChunk(p []byte, n int) []byte {
	if len(p) <= n {
		return p
	}
	if i := bytes.LastIndexByte(p[:n], '\n'); i >= 0 {
		return p[:i+1]
	}
	if i := bytes.IndexByte(p, '\n'); i >= 0 {
		return p[:i+1]
	}
	return p
}

// fillerHeader starts a filler member: gzipHeader with FLG.FEXTRA set.
var fillerHeader = [10]byte{0x1f, 0x8b, 8, 4, 0, 0, 0, 0, 0, 0xff}

// minFiller is the smallest filler: header, XLEN, one empty subfield
// (SI1 SI2 LEN), the final empty block and the trailer.
const minFiller = len(fillerHeader) + 2 + 4 + len(finalBlock) + 8

// appendFiller appends an empty gzip member of exactly n bytes, at least
// minFiller, so that what follows starts on a page boundary. No member
// leaves less before a boundary (see appendPadded).
func appendFiller(b []byte, n int) []byte {
	extra := n - minFiller // the subfield's data
	b = append(b, fillerHeader[:]...)
	b = binary.LittleEndian.AppendUint16(b, uint16(4+extra))
	b = append(b, 'T', 'P') // subfield id: tracer padding
	b = binary.LittleEndian.AppendUint16(b, uint16(extra))
	b = append(b, make([]byte, extra)...)
	b = append(b, finalBlock[:]...)
	return append(b, make([]byte, 8)...) // CRC-32 and size of nothing
}

// paddedHeader starts a member padded by appendPadded: gzipHeader with
// FLG.FNAME set.
var paddedHeader = [10]byte{0x1f, 0x8b, 8, 8, 0, 0, 0, 0, 0, 0xff}

// appendPadded appends member m made gap bytes longer, so that it ends on
// a page boundary rather than less than a filler short of one (a filler
// there would straddle the boundary, and a kill that cuts the file at it
// would leave a torn member, which makes Perfetto refuse the whole
// trace). The padding is a file name in the member's header (RFC 1952's
// FNAME: gap-1 bytes and a zero), which every gzip reader skips and
// joinGzipMembers drops. gap 0 is no padding.
func appendPadded(b, m []byte, gap int) []byte {
	if gap == 0 {
		return append(b, m...)
	}
	b = append(b, paddedHeader[:]...)
	for range gap - 1 {
		b = append(b, 'p')
	}
	b = append(b, 0)
	return append(b, m[len(gzipHeader):]...)
}

// compress returns p as one gzip member, valid until the next call.
func (g *gzipSink) compress(p []byte) ([]byte, error) {
	m := &g.member
	m.Reset()
	m.Write(gzipHeader[:])
	if g.zw == nil {
		zw, err := flate.NewWriter(m, g.level)
		if err != nil {
			return nil, err
		}
		g.zw = zw
	} else {
		g.zw.Reset(m) // a member must not refer back to the one before
	}
	g.zw.Write(p) // a bytes.Buffer does not fail
	g.zw.Flush()
	m.Write(finalBlock[:])
	tail := gzipTrailer(crc32.ChecksumIEEE(p), uint32(len(p)))
	m.Write(tail[:])
	return m.Bytes(), nil
}

// Close closes out and joins the members of the file, if there is one.
// It joins before it closes out, whose lock (see filelock.go) keeps another
// tracer from starting on the path until the joined file is in place.
func (g *gzipSink) Close() error {
	var joinErr error
	if g.path != "" && g.raw <= joinLimit {
		if err := joinGzipMembers(g.path); err != nil {
			joinErr = &unjoinedError{path: g.path, err: err}
		}
	}
	if err := g.out.Close(); err != nil {
		return err
	}
	return joinErr
}

// An unjoinedError says that a gzip trace could not be joined into one
// member (see joinGzipMembers): a full disk has no room for the copy.
type unjoinedError struct {
	path string
	err  error
}

func (e *unjoinedError) Error() string {
	return fmt.Sprintf("tracer: %s is complete, but chrome://tracing reads only its first gzip member: %v", e.path, e.err)
}

func (e *unjoinedError) Unwrap() error { return e.err }

// gzipTrailer returns the end of a gzip member: the CRC-32 and the size,
// modulo 2^32, of its uncompressed data.
func gzipTrailer(crc, size uint32) (t [8]byte) {
	binary.LittleEndian.PutUint32(t[:4], crc)
	binary.LittleEndian.PutUint32(t[4:], size)
	return t
}
