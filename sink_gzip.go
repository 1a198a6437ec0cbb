package tracer

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"

	"github.com/klauspost/compress/flate"
)

// A trace is gzipped when its path ends in ".gz" or WithGzip is given.
//
// Every Write the flusher makes becomes one complete gzip member, and the
// members follow each other in the file. Concatenated members are one valid
// gzip stream (RFC 1952): gunzip, Go's gzip.Reader and Perfetto read them
// all. A process killed between two writes therefore leaves a file whose
// every member is whole, holding everything up to its last flush; one
// gzip stream kept open across flushes would leave a member cut short,
// which Perfetto refuses whole.
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

// WithGzip compresses the trace with gzip at level, from gzip.HuffmanOnly
// (-2) and gzip.NoCompression (0) through gzip.BestSpeed (1) to
// gzip.BestCompression (9); gzip.DefaultCompression (-1) means
// DefaultGzipLevel. A path ending in ".gz" is gzipped at
// DefaultGzipLevel without this option. With NewWriter or NewWithSink the
// stream is compressed.
func WithGzip(level int) Option {
	return func(o *options) error {
		if level < flate.HuffmanOnly || level > flate.BestCompression {
			return fmt.Errorf("tracer: gzip level %d out of range [%d, %d]", level, flate.HuffmanOnly, flate.BestCompression)
		}
		if level == flate.DefaultCompression {
			level = DefaultGzipLevel
		}
		o.sink.gzip, o.sink.level = true, level
		return nil
	}
}

// A gzipSink compresses every Write into one gzip member and writes the
// member to out with one Write.
type gzipSink struct {
	out    sink
	level  int
	zw     *flate.Writer
	member bytes.Buffer
	raw    int64  // uncompressed bytes in whole members
	path   string // the file out writes to, if any: Close joins its members
}

func newGzipSink(out sink, level int) *gzipSink {
	return &gzipSink{out: out, level: level}
}

func (g *gzipSink) Write(p []byte) (int, error) {
	m, err := g.compress(p)
	if err != nil {
		return 0, err
	}
	if _, err := g.out.Write(m); err != nil {
		return 0, err
	}
	g.raw += int64(len(p))
	return len(p), nil
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
func (g *gzipSink) Close() error {
	err := g.out.Close()
	if err != nil || g.path == "" || g.raw > joinLimit {
		return err
	}
	if err := joinGzipMembers(g.path); err != nil {
		return fmt.Errorf("tracer: %s is complete, but chrome://tracing reads only its first gzip member: %w", g.path, err)
	}
	return nil
}

// joinGzipMembers rewrites the gzip file at path, made of members as
// gzipSink writes them, as one member. It checks every member (its
// framing, its data and its checksum) before it replaces the file, and
// replaces it atomically, by renaming a temporary file over it: if
// anything goes wrong, the file is left as it was.
func joinGzipMembers(path string) (err error) {
	in, err := os.Open(path)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := path + ".join"
	out, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(tmp)
		}
	}()

	w := bufio.NewWriterSize(out, 256<<10)
	w.Write(gzipHeader[:])
	counted := &countingReader{r: in}
	r := bufio.NewReaderSize(counted, 256<<10)
	pos := func() int64 { return counted.n - int64(r.Buffered()) }
	var zr io.ReadCloser
	crc, size := crc32.NewIEEE(), uint32(0)
	for members := 0; ; members++ {
		start := pos()
		var head [len(gzipHeader)]byte
		if _, err := io.ReadFull(r, head[:]); err == io.EOF && members > 0 {
			break
		} else if err != nil {
			return fmt.Errorf("member %d: %w", members, err)
		}
		if head != gzipHeader {
			return fmt.Errorf("member %d: not written by tracer", members)
		}
		if zr == nil {
			zr = flate.NewReader(r)
		} else {
			zr.(flate.Resetter).Reset(r, nil)
		}
		n, err := io.Copy(crc, zr)
		if err != nil {
			return fmt.Errorf("member %d: %w", members, err)
		}
		var tail [8]byte
		if _, err := io.ReadFull(r, tail[:]); err != nil {
			return fmt.Errorf("member %d: %w", members, err)
		}
		if uint32(n) != binary.LittleEndian.Uint32(tail[4:]) {
			return fmt.Errorf("member %d: size mismatch", members)
		}
		size += uint32(n)
		// The member's deflate data is [start+10, end-8); copy it without
		// its final block, checking it ends as gzipSink writes it.
		body := io.NewSectionReader(in, start+int64(len(head)), pos()-start-int64(len(head)+len(tail)))
		if err := copyDeflateBody(w, body); err != nil {
			return fmt.Errorf("member %d: %w", members, err)
		}
	}
	w.Write(finalBlock[:])
	tail := gzipTrailer(crc.Sum32(), size)
	w.Write(tail[:])
	if err := w.Flush(); err != nil {
		return err
	}
	if err := out.Sync(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// copyDeflateBody copies the deflate data of one member to w, less its
// final empty block, after checking that the data ends with a sync marker
// and that block.
func copyDeflateBody(w io.Writer, body *io.SectionReader) error {
	n := body.Size()
	var end [len(syncMarker) + len(finalBlock)]byte
	if n < int64(len(end)) {
		return errors.New("deflate data too short")
	}
	if _, err := body.ReadAt(end[:], n-int64(len(end))); err != nil {
		return err
	}
	if !bytes.Equal(end[:len(syncMarker)], syncMarker[:]) || !bytes.Equal(end[len(syncMarker):], finalBlock[:]) {
		return errors.New("deflate data does not end with a sync flush")
	}
	_, err := io.Copy(w, io.NewSectionReader(body, 0, n-int64(len(finalBlock))))
	return err
}

// gzipTrailer returns the end of a gzip member: the CRC-32 and the size,
// modulo 2^32, of its uncompressed data.
func gzipTrailer(crc, size uint32) (t [8]byte) {
	binary.LittleEndian.PutUint32(t[:4], crc)
	binary.LittleEndian.PutUint32(t[4:], size)
	return t
}

// A countingReader counts the bytes read through it. Reading the file
// through a bufio.Reader, an io.ByteReader, makes the flate reader take no
// more than the member it decodes, so the count less what the bufio.Reader
// holds is where the member ends.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
