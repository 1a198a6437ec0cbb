package tables

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"

	"github.com/gotracer/tracer/internal/tracefile"
)

// A Group is the files of one process: one file, or the files of a
// rotated set (which share their pid and anchor), oldest first.
type Group struct {
	Files  []string
	Offset int64 // nanoseconds added to its timestamps

	srcs []*tracefile.Source // the files, open, their heads read
}

var rotated = regexp.MustCompile(`\.(\d{6})\.[^/]*$`)

// Plan opens each file and reads its start for its wall-clock anchor
// (see tracefile.Source.Anchor) and returns the groups to read, in the
// order of their first file, each shifted so that every anchored process
// lines up on the clock of the earliest, as "tracer merge" does. Each
// file is read once: a pipe or a FIFO is read as a file is. The files
// stay open until close is called, also after an error.
func Plan(paths []string) (groups []Group, close func(), err error) {
	type file struct {
		path  string
		src   *tracefile.Source
		seq   int
		group int
	}
	var files []file
	var anchors []tracefile.Anchor
	var opened []*tracefile.Source
	close = func() {
		for _, s := range opened {
			s.Close()
		}
	}
	byAnchor := map[tracefile.Anchor]int{}
	base, anchored := int64(0), false
	for _, path := range paths {
		src, err := tracefile.Open(path)
		if err != nil {
			return nil, close, err
		}
		opened = append(opened, src)
		a, err := src.Anchor()
		if err != nil {
			return nil, close, fmt.Errorf("%s: %w", path, err)
		}
		f := file{path: path, src: src, seq: math.MaxInt, group: len(groups)}
		if m := rotated.FindStringSubmatch(filepath.Base(path)); m != nil {
			f.seq, _ = strconv.Atoi(m[1])
		}
		if g, ok := byAnchor[a]; ok && a.OK {
			f.group = g
		} else {
			byAnchor[a] = f.group
			groups = append(groups, Group{})
			anchors = append(anchors, a)
		}
		if a.OK && (!anchored || a.UnixNS < base) {
			base, anchored = a.UnixNS, true
		}
		files = append(files, f)
	}
	slices.SortStableFunc(files, func(a, b file) int { return cmp.Compare(a.seq, b.seq) })
	for _, f := range files {
		groups[f.group].Files = append(groups[f.group].Files, f.path)
		groups[f.group].srcs = append(groups[f.group].srcs, f.src)
	}
	for i, a := range anchors {
		if a.OK {
			groups[i].Offset = a.UnixNS - base
		}
	}
	return groups, close, nil
}

// Build reads the files at paths, group by group (see Plan), and hands
// the rows of their tables to the Builder's Sink; before each group it
// calls begin, if not nil, with the group's number from 0, for a Sink
// that partitions its output by process.
func (b *Builder) Build(paths []string, begin func(group int) error) error {
	groups, closeFiles, err := Plan(paths)
	defer closeFiles()
	if err != nil {
		return err
	}
	for i, g := range groups {
		if begin != nil {
			if err := begin(i); err != nil {
				return err
			}
		}
		b.BeginGroup(g.Files[0], g.Offset)
		for j, path := range g.Files {
			if j > 0 {
				b.nextFile()
			}
			if err := b.readFile(path, g.srcs[j]); err != nil {
				return err
			}
		}
		if err := b.EndGroup(); err != nil {
			return err
		}
	}
	b.carried = nil
	return b.Close()
}

// readFile adds the events of the file at path, open as src. Damage the
// viewers tolerate (a torn last line, a cut gzip member) ends the events
// read; events that are not valid JSON are skipped, as the viewers skip
// them. A file that is no JSON trace at all (text, a binary file) is an
// error, not a file of no events.
func (b *Builder) readFile(path string, src *tracefile.Source) error {
	b.fileX = false
	r := tracefile.NewReader(src.Reader())
	var notTrace *tracefile.Problem
	r.OnProblem = func(p tracefile.Problem) { // on the read-ahead's goroutine, done when each returns
		if p.Kind == tracefile.KindNotJSON {
			notTrace = &p
		}
	}
	read, err := b.read.each(r, b.Add)
	if notTrace != nil {
		return fmt.Errorf("%s:%d: %s", path, notTrace.Line, notTrace.Msg)
	}
	if read && err == io.EOF {
		return nil
	}
	if read {
		return fmt.Errorf("%s: %w", path, err)
	}
	return err
}
