package tracer

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"os"
	"strings"
)

// Joining a gzip trace's members: chrome://tracing reads only the first
// member of a gzip file, so a cleanly closed gzip trace (see gzipSink.Close)
// is rewritten as one member, offline, once nothing more is written to it.
// The rewrite also makes a closed array the object form a closed plain
// file has (see objectHead), so that chrome://tracing reads its times to
// the nanosecond: a stored deflate block with the object's head before
// the members' data, and one with its "}" after. An array left open (the
// last writes failed) keeps that room as spaces, which JSON ignores.

// joinGzipMembers rewrites the gzip file at path, made of members as
// gzipSink writes them, as one member. It checks every member (its
// framing, its data and its checksum) before it replaces the file, and
// replaces it atomically, by renaming a temporary file over it: if
// anything goes wrong, the file is left as it was. The new file has the
// old one's permissions, and a symlink at path stays one: the file it
// points to is replaced. A kill before the rename leaves the temporary
// file, which the next tracer on path removes (see removeStale).
func joinGzipMembers(path string) (err error) {
	in, err := os.Open(path)
	if err != nil {
		return err
	}
	defer in.Close()
	object := isArray(in)
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	tmp := joinPath(path)
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, fi.Mode().Perm())
	if err != nil {
		return err
	}
	if err := out.Chmod(fi.Mode().Perm()); err != nil { // past the umask, as the file was
		out.Close()
		os.Remove(tmp)
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
	// Whether the array is closed is known at its end, so the data is
	// summed twice: after the object's head, and after spaces as long.
	var spaced hash.Hash32
	var last lastBytes
	data := io.Writer(crc)
	if object {
		spaced = crc32.NewIEEE()
		size += storedBlock(w, crc, objectHead)
		spaced.Write(spaces[:len(objectHead)])
		data = io.MultiWriter(crc, spaced, &last)
	}
	for members := 0; ; members++ {
		start := pos()
		var head [len(gzipHeader)]byte
		if _, err := io.ReadFull(r, head[:]); err == io.EOF && members > 0 {
			break
		} else if err != nil {
			return fmt.Errorf("member %d: %w", members, err)
		}
		if head == fillerHeader {
			if err := skipFiller(r); err != nil {
				return fmt.Errorf("member %d: %w", members, err)
			}
			continue
		}
		headLen := int64(len(head))
		if head == paddedHeader {
			name, err := r.ReadBytes(0) // the padding: see appendPadded
			if err != nil {
				return fmt.Errorf("member %d: %w", members, err)
			}
			headLen += int64(len(name))
		} else if head != gzipHeader {
			return fmt.Errorf("member %d: not written by tracer", members)
		}
		if zr == nil {
			zr = flate.NewReader(r)
		} else {
			zr.(flate.Resetter).Reset(r, nil)
		}
		n, err := io.Copy(data, zr)
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
		// The member's deflate data is [start+headLen, end-8); copy it without
		// its final block, checking it ends as gzipSink writes it.
		body := io.NewSectionReader(in, start+headLen, pos()-start-headLen-int64(len(tail)))
		if err := copyDeflateBody(w, body); err != nil {
			return fmt.Errorf("member %d: %w", members, err)
		}
	}
	open := object && !last.endsArray()
	sum := crc.Sum32()
	if open {
		sum = spaced.Sum32()
	} else if object {
		size += storedBlock(w, crc, "}\n")
		sum = crc.Sum32()
	}
	w.Write(finalBlock[:])
	tail := gzipTrailer(sum, size)
	w.Write(tail[:])
	if err := w.Flush(); err != nil {
		return err
	}
	if open { // the head's room, as spaces
		if _, err := out.WriteAt(spaces[:len(objectHead)], int64(len(gzipHeader)+storedHead)); err != nil {
			return err
		}
	}
	if err := out.Sync(); err != nil {
		return err
	}
	return os.Rename(tmp, strings.TrimSuffix(tmp, joinSuffix))
}

// isArray reports whether the gzip trace in f is a JSON array, as a
// tracer writes it (not an object already), and rewinds f. A file it
// cannot read is no array: joinGzipMembers says what is wrong with it.
func isArray(f *os.File) bool {
	defer f.Seek(0, io.SeekStart)
	zr, err := gzip.NewReader(bufio.NewReader(f))
	if err != nil {
		return false
	}
	r := bufio.NewReader(zr)
	for {
		c, err := r.ReadByte()
		switch {
		case err != nil:
			return false
		case c == '[':
			return true
		case c != ' ' && c != '\n':
			return false
		}
	}
}

// lastBytes keeps the last bytes written to it.
type lastBytes struct{ b [16]byte }

func (l *lastBytes) Write(p []byte) (int, error) {
	if len(p) >= len(l.b) {
		copy(l.b[:], p[len(p)-len(l.b):])
	} else {
		copy(l.b[:], l.b[len(p):])
		copy(l.b[len(l.b)-len(p):], p)
	}
	return len(p), nil
}

// endsArray reports whether what was written ends with "]", but for
// white space: a closed array.
func (l *lastBytes) endsArray() bool {
	return bytes.HasSuffix(bytes.TrimRight(l.b[:], " \n"), []byte("]"))
}

// storedHead is the length of a stored deflate block's head.
const storedHead = 5

// storedBlock writes s as a stored deflate block, not the last, and adds
// it to crc; it returns its length. The deflate data before it ends on a
// byte boundary, as a sync flush leaves it, and so does the block.
func storedBlock(w io.Writer, crc hash.Hash32, s string) uint32 {
	var head [storedHead]byte // BFINAL 0, BTYPE 00, padding to the byte; LEN, NLEN
	binary.LittleEndian.PutUint16(head[1:], uint16(len(s)))
	binary.LittleEndian.PutUint16(head[3:], ^uint16(len(s)))
	w.Write(head[:])
	io.WriteString(w, s)
	io.WriteString(crc, s)
	return uint32(len(s))
}

// skipFiller reads the rest of a filler member, as appendFiller writes it,
// after its header.
func skipFiller(r io.Reader) error {
	var xlen [2]byte
	if _, err := io.ReadFull(r, xlen[:]); err != nil {
		return err
	}
	rest := make([]byte, int(binary.LittleEndian.Uint16(xlen[:]))+len(finalBlock)+8)
	if _, err := io.ReadFull(r, rest); err != nil {
		return err
	}
	if !bytes.Equal(rest[len(rest)-10:], append(finalBlock[:], make([]byte, 8)...)) {
		return errors.New("a filler member that is not empty")
	}
	return nil
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
