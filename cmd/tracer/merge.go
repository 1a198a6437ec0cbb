package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gotracer/tracer/internal/tracefile"
)

// remapBase is the first pid given to a process whose pid another file
// already uses: Linux pids stay below 2^22, so these cannot be real.
const remapBase = 1 << 22

// offsets is the -offset flag: FILE=DURATION, repeatable.
type offsets map[string]time.Duration

func (o offsets) String() string { return "" }

func (o offsets) Set(v string) error {
	// The last "=": a URL's query has them, a duration none.
	i := strings.LastIndexByte(v, '=')
	if i < 0 {
		return fmt.Errorf("want FILE=DURATION, as trace.json=1.5ms")
	}
	file, dur := v[:i], v[i+1:]
	d, err := time.ParseDuration(dur)
	if err != nil {
		return err
	}
	o[file] = d
	return nil
}

// runMerge is "tracer merge".
func runMerge(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("merge", "-o OUT [-offset FILE=DURATION]... [-q] FILE...", stderr)
	out := fs.String("o", "", "write the merged trace to `OUT` (.gz: gzipped; - for standard output)")
	offs := offsets{}
	fs.Var(offs, "offset", "shift `FILE=DURATION`'s timestamps by the duration (after alignment on its anchor, if it has one)")
	quiet := fs.Bool("q", false, "no progress bar and no report")
	force := fs.Bool("f", false, "merge a file given twice (its events twice), or into OUT that is one of the files")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case *out == "":
		return usageError{"-o OUT is required"}
	case fs.NArg() == 0:
		return usageError{"no file to merge"}
	}
	if err := noURL("-o", *out); err != nil {
		return err
	}
	if !*force {
		if err := sameFiles(*out, fs.Args()); err != nil {
			return err
		}
	}
	for f := range offs {
		if !slices.Contains(fs.Args(), f) {
			return usageError{fmt.Sprintf("-offset names %s, which is not among the files", f)}
		}
	}
	report := io.Discard
	if !*quiet {
		report = stderr
	}
	var fetched []*fetch
	var err error
	if urls(fs.Args()) > 1 {
		// All at once, to temporary files: the captures they ask for
		// cover the same seconds, and no server waits while another's
		// trace is merged.
		if fetched, err = downloadAll(fs.Args()); err != nil {
			return err
		}
		defer closeAll(fetched)
	}
	files, base, err := planMerge(fs.Args(), fetched, offs, *quiet, report)
	for _, f := range files {
		defer f.in.Close()
	}
	if err != nil {
		return err
	}
	if !*force {
		if err := sameContent(files); err != nil {
			return err
		}
	}
	o, err := createOutput(*out, isGzipName(*out), stdout)
	if err != nil {
		return err
	}
	m := &merger{out: o, base: base, report: report, used: map[int64]string{}, named: map[int64]bool{}, assigned: map[string]int64{}, next: remapBase, open: map[string][]openB{}}
	for _, f := range files {
		if err := m.merge(f); err != nil {
			o.Abort()
			return err
		}
		if f.in.fetch != nil && f.in.fetch.wasCut() {
			fmt.Fprintf(report, "%s: %s\n", f.path, f.in.fetch.cutNote())
		}
	}
	if err := o.Close(); err != nil {
		return err
	}
	dst := *out
	if dst == "-" {
		dst = "standard output"
	}
	fmt.Fprintf(report, "merged %d files into %s: %d events", len(files), dst, o.events)
	if m.dups > 0 {
		fmt.Fprintf(report, " (%d B events repeated by rotation dropped)", m.dups)
	}
	fmt.Fprintln(report)
	return nil
}

// A mergeFile is one input of a merge.
type mergeFile struct {
	path      string
	in        *input // opened by planMerge, read once
	group     string // files of one process (a rotated set) share it
	pid       int64  // the pid the anchor is for
	anchor    int64  // ts0_unix_ns
	hasAnchor bool
	seq       int   // the rotation number, math.MaxInt for the current file
	offset    int64 // nanoseconds added to every ts
}

var rotated = regexp.MustCompile(`\.(\d{6})\.[^/]*$`)

// planMerge opens every file and reads its start for its anchor, and
// returns the files in the order to merge them, the files of a rotated
// set together, oldest first, and the anchor that becomes ts 0. Each
// file is read once: its start is read again from memory when it is
// merged, so a pipe or a FIFO is merged as a file is. A URL is read from
// its fetch in fetched, at its place, if there is one, or fetched. The
// files it returns are open, also with an error.
func planMerge(paths []string, fetched []*fetch, offs offsets, quiet bool, report io.Writer) ([]*mergeFile, int64, error) {
	var files []*mergeFile
	firstOfGroup := map[string]int{}
	base, anchored := int64(0), false
	for i, path := range paths {
		f := &mergeFile{path: path, seq: math.MaxInt, group: "file " + strconv.Itoa(i)}
		onProblem := func(p tracefile.Problem) {
			switch p.Kind {
			case tracefile.KindSyntax, tracefile.KindTorn, tracefile.KindGzip:
				fmt.Fprintf(report, "%s:%d: skipped: %s\n", f.path, p.Line, p.Msg)
			}
		}
		var in *input
		var err error
		if i < len(fetched) && fetched[i] != nil {
			in, err = openFetched(path, fetched[i].path, fetched[i], quiet, onProblem)
		} else {
			in, err = openInput(path, quiet, onProblem)
		}
		if err != nil {
			return files, 0, err
		}
		f.in = in
		files = append(files, f)
		if m := rotated.FindStringSubmatch(filepath.Base(path)); m != nil {
			f.seq, _ = strconv.Atoi(m[1])
		}
		a, err := in.src.Anchor()
		if err != nil {
			return files, 0, fmt.Errorf("%s: %w", path, err)
		}
		f.pid, f.anchor, f.hasAnchor = a.Pid, a.UnixNS, a.OK
		if f.hasAnchor {
			// The files of one tracer, rotated, share its pid and anchor.
			f.group = fmt.Sprintf("pid %d at %d", f.pid, f.anchor)
			if !anchored || f.anchor < base {
				base, anchored = f.anchor, true
			}
		}
		if _, ok := firstOfGroup[f.group]; !ok {
			firstOfGroup[f.group] = i
		}
	}
	for _, f := range files {
		if f.hasAnchor {
			f.offset = f.anchor - base
		}
		f.offset += offs[f.path].Nanoseconds()
	}
	slices.SortStableFunc(files, func(a, b *mergeFile) int {
		return cmp.Or(cmp.Compare(firstOfGroup[a.group], firstOfGroup[b.group]), cmp.Compare(a.seq, b.seq))
	})
	return files, base, nil
}

// sameContent returns an error naming two files that hold the same
// events, a copy of one file under another name: the same size (or
// neither a regular file) and the same first 256 KiB, which, for a
// trace, are its process's header, anchor and first events.
func sameContent(files []*mergeFile) error {
	for i, f := range files {
		head, _ := f.in.src.Head()
		for _, g := range files[:i] {
			other, _ := g.in.src.Head()
			if len(head) > 0 && f.in.src.Size == g.in.src.Size && f.in.src.Regular == g.in.src.Regular && bytes.Equal(head, other) {
				return fmt.Errorf("%s and %s hold the same events (a copy): they would be in the merge twice (-f merges them anyway)", g.path, f.path)
			}
		}
	}
	return nil
}

// An openB is a B event without its E yet, in a merge.
type openB struct {
	ts   int64
	name string
}

// A merger writes the events of its inputs to one output.
type merger struct {
	out    *output
	base   int64
	report io.Writer

	used     map[int64]string // output pid -> the group using it
	named    map[int64]bool   // output pids whose process_name is written
	assigned map[string]int64 // group -> its output pid
	next     int64            // the next pid to remap to

	// Per group and tid, the B events not yet ended; carried holds, at
	// the start of a file, those its group's earlier file left open,
	// which a rotated file writes again at its top.
	open    map[string][]openB
	carried map[string][]openB
	dups    int

	buf   []byte
	edits []edit
}

// An edit replaces a span of an event's text.
type edit struct {
	span tracefile.Span
	with []byte
}

// applyEdits appends to b the event raw with edits made, which may come
// in any order and must not overlap.
func applyEdits(b, raw []byte, edits []edit) []byte {
	slices.SortFunc(edits, func(a, b edit) int { return cmp.Compare(a.span.Start, b.span.Start) })
	at := 0
	for _, e := range edits {
		b = append(b, raw[at:e.span.Start]...)
		b = append(b, e.with...)
		at = e.span.End
	}
	return append(b, raw[at:]...)
}

// merge writes the events of f.
func (m *merger) merge(f *mergeFile) error {
	m.carried = map[string][]openB{}
	for k, v := range m.open {
		if strings.HasPrefix(k, f.group+"\x00") {
			m.carried[k] = slices.Clone(v)
		}
	}
	pids := map[int64]int64{} // this file's pids -> output pids
	err := f.in.each(func(ev *tracefile.Event) error {
		m.event(f, ev, pids)
		return m.out.err
	})
	if err != nil {
		return fmt.Errorf("%s: %w", f.path, err)
	}
	return f.in.errNotTrace()
}

// pidFor returns the output pid of the file's pid, and whether this is
// the first time the process is seen.
func (m *merger) pidFor(f *mergeFile, pid int64, pids map[int64]int64) (out int64, isNew bool) {
	if out, ok := pids[pid]; ok {
		return out, false
	}
	group := f.group
	if !f.hasAnchor || pid != f.pid {
		group = fmt.Sprintf("%s pid %d", f.path, pid)
	}
	// The files of a rotated set are one process: one pid.
	out, seen := m.assigned[group]
	if !seen {
		out = pid
		if g, ok := m.used[pid]; ok && g != group {
			for {
				out = m.next
				m.next++
				if _, ok := m.used[out]; !ok {
					break
				}
			}
			fmt.Fprintf(m.report, "%s: pid %d is another file's too: it becomes pid %d\n", f.path, pid, out)
		}
		m.used[out] = group
		m.assigned[group] = out
	}
	pids[pid] = out
	return out, !seen
}

// event writes ev, from f, shifted in time and with its pid remapped.
func (m *merger) event(f *mergeFile, ev *tracefile.Event, pids map[int64]int64) {
	ph := ev.Phase()
	isProcessName := ph == 'M' && string(ev.Name.Raw) == "process_name"
	pid, remapped := int64(0), false
	if ev.Pid.Kind == tracefile.NumInt {
		var isNew bool
		pid, isNew = m.pidFor(f, ev.Pid.Int, pids)
		remapped = pid != ev.Pid.Int
		if remapped && isNew && !isProcessName {
			m.processName(pid, fmt.Sprintf("pid %d of %s", ev.Pid.Int, filepath.Base(f.path)))
		}
	}
	if ph == 'B' || ph == 'E' {
		if m.rotatedDup(f, ev, ph) {
			return
		}
	}
	edits := m.edits[:0]
	if f.offset != 0 && ev.TSSpan.Valid() && ph != 'M' {
		edits = append(edits, edit{ev.TSSpan, tracefile.AppendMicros(nil, ev.TS+f.offset)})
	}
	if remapped && ev.PidSpan.Valid() {
		edits = append(edits, edit{ev.PidSpan, strconv.AppendInt(nil, pid, 10)})
	}
	edits = linkEdits(edits, ev, ph)
	if isProcessName {
		// Once per process: a file may end with its header again, and
		// rotated files each start with it.
		if m.named[pid] {
			return
		}
		m.named[pid] = true
		if a := ev.Arg("name"); a != nil && remapped && a.Str.Set {
			name, _ := json.Marshal(fmt.Sprintf("%s (pid %d)", a.Str.String(), ev.Pid.Int))
			edits = append(edits, edit{a.Span, name})
		}
		// ts 0 of the merged trace is base, in every process.
		if a := ev.Arg("ts0_unix_ns"); a != nil && f.hasAnchor {
			edits = append(edits, edit{a.Span, strconv.AppendInt(nil, m.base, 10)})
		}
		if a := ev.Arg("ts0_wall"); a != nil && f.hasAnchor {
			edits = append(edits, edit{a.Span, strconv.AppendQuote(nil, time.Unix(0, m.base).UTC().Format(time.RFC3339Nano))})
		}
	}
	m.edits = edits
	if len(edits) == 0 {
		m.out.event(ev.Raw)
		return
	}
	m.buf = applyEdits(m.buf[:0], ev.Raw, edits)
	m.out.event(m.buf)
}

// processName writes a process_name event.
func (m *merger) processName(pid int64, name string) {
	n, _ := json.Marshal(name)
	m.out.event(fmt.Appendf(nil, `{"name":"process_name","ph":"M","pid":%d,"tid":0,"args":{"name":%s}}`, pid, n))
}

// rotatedDup follows the B and E events of f's group and reports whether
// ev is a B event that an earlier file of the group holds already: a
// rotated file starts with the B events of the spans still open, so that
// it opens alone in the viewers.
func (m *merger) rotatedDup(f *mergeFile, ev *tracefile.Event, ph byte) bool {
	k := f.group + "\x00" + string(ev.Tid.Raw)
	if ph == 'E' {
		if s := m.open[k]; len(s) > 0 {
			m.open[k] = s[:len(s)-1]
		}
		return false
	}
	name := ev.Name.String()
	if c := m.carried[k]; len(c) > 0 {
		if i := slices.Index(c, openB{ev.TS, name}); i >= 0 {
			m.carried[k] = slices.Delete(c, i, i+1)
			m.dups++
			return true
		}
	}
	m.open[k] = append(m.open[k], openB{ev.TS, name})
	return false
}

// sameFiles returns an error naming a file given twice among files (a
// shell glob that matches a.json and ./a.json, a file copied by a link),
// whose events the merge would hold twice, or out among them.
func sameFiles(out string, files []string) error {
	stats := make([]os.FileInfo, len(files))
	for i, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			continue // reported when the merge opens it
		}
		stats[i] = fi
		for j := range i {
			if stats[j] != nil && os.SameFile(stats[j], fi) {
				return fmt.Errorf("%s and %s are the same file: its events would be in the merge twice (-f merges it anyway)", files[j], f)
			}
		}
		if ofi, err := os.Stat(out); err == nil && os.SameFile(ofi, fi) {
			return fmt.Errorf("-o %s is %s, one of the files to merge (-f replaces it with the merge)", out, f)
		}
	}
	return nil
}
