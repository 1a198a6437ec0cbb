package tracefile

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/klauspost/compress/gzip"
)

// A Source is an opened trace file: plain or gzip, which it tells apart
// by the gzip magic number, not by the name. It reads its file once, from
// the start: a pipe, a FIFO or standard input ("-") is read as a regular
// file is.
type Source struct {
	Size int64 // bytes in the file, compressed or not; 0 if not a regular file
	Gzip bool
	// Regular is set for a regular file, which can be opened again.
	Regular bool

	// For a gzip file, once it has been read to the end: Members counts
	// the members that hold data (padding members, which carry no data,
	// are not counted), and Cut is set if the last member is cut short,
	// GzipErr to any other damage.
	Members int
	Cut     bool
	GzipErr error

	f       *os.File
	stdin   bool  // f is standard input: not closed
	counted int64 // bytes read from f
	r       io.Reader
	zr      *gzip.Reader
	br      *bufio.Reader
	member  int64  // uncompressed bytes of the current member
	head    []byte // the start of the contents, read by Head, read again by Reader
}

// Open opens the trace at path, or standard input for "-".
func Open(path string) (*Source, error) {
	f, stdin := os.Stdin, true
	if path != "-" {
		var err error
		if f, err = os.Open(path); err != nil {
			return nil, err
		}
		stdin = false
	}
	st, err := f.Stat()
	if err != nil {
		if !stdin {
			f.Close()
		}
		return nil, err
	}
	if st.IsDir() {
		f.Close()
		return nil, fmt.Errorf("%s is a directory", path)
	}
	s := &Source{f: f, stdin: stdin, Regular: st.Mode().IsRegular()}
	if s.Regular {
		s.Size = st.Size()
	}
	// The gzip reader reads byte by byte: buffer it. The plain reader
	// reads in large blocks, which bufio passes through once the bytes
	// that told the format apart are taken.
	s.br = bufio.NewReaderSize(countingReader{s}, 1<<20)
	if magic, _ := s.br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		s.Gzip = true
		zr, err := gzip.NewReader(s.br)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("%s: not a readable gzip file: %w", path, err)
		}
		// Member by member, to count them and to tell a cut member from
		// the end of the file.
		zr.Multistream(false)
		s.zr = zr
		s.r = s
	} else {
		s.r = s.br
	}
	return s, nil
}

// Reader returns the uncompressed contents, from the start (the head
// read by Head included).
func (s *Source) Reader() io.Reader {
	if s.head != nil {
		return io.MultiReader(bytes.NewReader(s.head), s.r)
	}
	return s.r
}

// Done returns how many bytes of the file have been read.
func (s *Source) Done() int64 { return s.counted }

// Close closes the file (not standard input).
func (s *Source) Close() error {
	if s.stdin {
		return nil
	}
	return s.f.Close()
}

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
		report(Problem{Line: line, Kind: KindGzip, Perfetto: Refuses, Catapult: Refuses,
			Msg: "the last gzip member is cut short: neither viewer loads the file (Perfetto: \"Compressed stream incomplete\"); tracer repair keeps what it holds"})
	case s.GzipErr != nil:
		report(Problem{Line: line, Kind: KindGzip, Msg: s.GzipErr.Error(), Perfetto: Refuses, Catapult: Refuses})
	}
	if s.Members > 1 {
		report(Problem{Line: 1, Kind: KindMembers, Msg: fmt.Sprintf("%d gzip members, as a killed process leaves them: chrome://tracing reads only the first (tracer repair writes one)", s.Members)})
	}
}
