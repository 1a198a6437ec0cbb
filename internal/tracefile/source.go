package tracefile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/klauspost/compress/gzip"
)

// A Source is an opened trace file: plain or gzip, which it tells apart
// by the gzip magic number, not by the name.
type Source struct {
	Size int64 // bytes in the file, compressed or not
	Gzip bool

	// For a gzip file, once it has been read to the end: Members counts
	// the members that hold data (padding members, which carry no data,
	// are not counted), and Cut is set if the last member is cut short,
	// GzipErr to any other damage.
	Members int
	Cut     bool
	GzipErr error

	f       *os.File
	counted int64 // bytes read from f
	r       io.Reader
	zr      *gzip.Reader
	br      *bufio.Reader
	member  int64 // uncompressed bytes of the current member
}

// Open opens the trace at path.
func Open(path string) (*Source, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if st.IsDir() {
		f.Close()
		return nil, fmt.Errorf("%s is a directory", path)
	}
	s := &Source{Size: st.Size(), f: f}
	var magic [2]byte
	if n, _ := f.ReadAt(magic[:], 0); n == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		s.Gzip = true
		// The gzip reader reads byte by byte: buffer it.
		s.br = bufio.NewReaderSize(countingReader{s}, 1<<20)
		zr, err := gzip.NewReader(s.br)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: not a readable gzip file: %w", path, err)
		}
		// Member by member, to count them and to tell a cut member from
		// the end of the file.
		zr.Multistream(false)
		s.zr = zr
		s.r = s
	} else {
		s.r = countingReader{s} // the Reader reads in large blocks already
	}
	return s, nil
}

// Reader returns the uncompressed contents.
func (s *Source) Reader() io.Reader { return s.r }

// Done returns how many bytes of the file have been read.
func (s *Source) Done() int64 { return s.counted }

// Close closes the file.
func (s *Source) Close() error { return s.f.Close() }

// Read reads the uncompressed data of the members one after the other.
// A damaged or cut member ends the data, as if the file ended there,
// setting Cut or GzipErr: what came before it is still read.
func (s *Source) Read(p []byte) (int, error) {
	for {
		if s.zr == nil {
			return 0, io.EOF
		}
		n, err := s.zr.Read(p)
		if n > 0 && s.member == 0 {
			s.Members++
		}
		s.member += int64(n)
		switch {
		case err == nil:
			return n, nil
		case errors.Is(err, io.EOF):
			s.member = 0
			if rerr := s.zr.Reset(s.br); rerr != nil {
				if errors.Is(rerr, io.ErrUnexpectedEOF) {
					s.Cut = true
				} else if !errors.Is(rerr, io.EOF) {
					s.GzipErr = fmt.Errorf("damaged data after gzip member %d: %w", s.Members, rerr)
				}
				s.zr = nil
			} else {
				s.zr.Multistream(false)
			}
		case errors.Is(err, io.ErrUnexpectedEOF):
			s.Cut = true
			s.zr = nil
		default:
			s.GzipErr = err
			s.zr = nil
		}
		if n > 0 {
			return n, nil
		}
	}
}

type countingReader struct{ s *Source }

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.s.f.Read(p)
	c.s.counted += int64(n)
	return n, err
}

// ReportGzip reports, after the whole file was read, what is wrong with
// its gzip framing, if anything, at line.
func (s *Source) ReportGzip(line int, report func(Problem)) {
	if !s.Gzip {
		return
	}
	switch {
	case s.Cut:
		report(Problem{line, KindGzip, "the last gzip member is cut short (Perfetto refuses the whole file: \"Compressed stream incomplete\"; tracer repair keeps what it holds)"})
	case s.GzipErr != nil:
		report(Problem{line, KindGzip, s.GzipErr.Error()})
	}
	if s.Members > 1 {
		report(Problem{1, KindMembers, fmt.Sprintf("%d gzip members, as a killed process leaves them: chrome://tracing reads only the first (tracer repair writes one)", s.Members)})
	}
}
