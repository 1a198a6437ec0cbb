//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/gotracer/tracer"
)

// The parent's checks, once the child (and the rival) ended.

// A traceFile is one file a tracer wrote.
type traceFile struct {
	path    string
	tracer  int
	kind    string // trace (the path, a cycle's), rotated, stream (a writer's or a pipe's), dump, final
	cycle   int    // a default tracer's cycle, for trace and rotated
	account bool   // its events count in the tracer's accounting
}

// traceName matches the files a tracer writes at its path: the path
// (trace.json, or real.json behind a symlink), a cycle's (trace-c2.json)
// and the rotated ones (trace.000003.json), plain or gzip.
var traceName = regexp.MustCompile(`^(trace|real)(-c(\d+))?(\.\d{6})?\.json(\.gz)?$`)

// flightName matches a flight recorder's recordings.
var flightName = regexp.MustCompile(`^(dump-\d+\.json(\.gz)?|dumpw-\d+\.json|final\.json)$`)

// check runs every check of the run.
func (r *run) check() {
	if r.dir == "" {
		return
	}
	if r.readyAt == 0 {
		for _, f := range r.rep.fails {
			r.fail("child", "%s", f)
		}
		return // the child never got its tracers started
	}
	for _, f := range r.rep.fails {
		r.fail("child", "%s", f)
	}
	files := r.collect()
	r.unparsed = map[int]bool{}
	ids := newIDSet(r)
	for _, f := range files {
		r.checkTraceFile(f, ids)
	}
	r.note("files: %d checked, %d events", r.filesChecked, r.eventsChecked)
	if r.cfg.Importers {
		r.importers(files)
	}
	for i, t := range r.cfg.Tracers {
		if res := r.tracerResult(i); t.DumpOverLive && res != nil {
			if res.DumpOverLive == "" {
				r.note("t%d: the run ended before its flight recorder's dump onto t0's live path", i)
			} else if res.DumpOverLive == "nil" {
				// The file at the path is t0's, which it goes on writing: a
				// recording there can only be a second writer on it.
				r.fail("one writer", "t%d: FlightRecorder.WriteFile onto t0's path returned nil while t0 was writing it (a second writer; ErrFileInUse is the answer)", i)
			} else {
				r.note("t%d: FlightRecorder.WriteFile onto t0's live path returned %s", i, res.DumpOverLive)
			}
		}
	}
	if r.clean() {
		r.accounting(ids)
		r.leaks()
	} else if r.result == nil && !r.killed() {
		r.note("no accounting: the child did not report (it froze or crashed)")
	}
	if r.killed() {
		r.durability(ids)
	}
	r.rivalAccounting(ids)
	r.checkMemory()
}

// collect lists the files of every tracer, and fails the run on a file
// beside a path that no tracer should have left.
func (r *run) collect() []traceFile {
	var files []traceFile
	for i, t := range r.cfg.Tracers {
		path, dirs := tracePath(r.dir, r.cfg, i)
		for _, dir := range dirs {
			ents, err := os.ReadDir(dir)
			if err != nil {
				r.fail("files", "t%d: %v", i, err)
				continue
			}
			for _, e := range ents {
				name := e.Name()
				p := filepath.Join(dir, name)
				if e.Type()&os.ModeSymlink != 0 || e.Type()&os.ModeNamedPipe != 0 || name == "ballast" {
					continue
				}
				switch m := traceName.FindStringSubmatch(name); {
				case m != nil && t.Sink.onDisk():
					f := traceFile{path: p, tracer: i, kind: "trace", account: true}
					if m[4] != "" {
						f.kind = "rotated"
					}
					if m[3] != "" {
						fmt.Sscan(m[3], &f.cycle)
					}
					files = append(files, f)
				case t.Sink == sinkWriter && name == "writer.json", t.Sink == sinkFifo && name == "fifo.json":
					files = append(files, traceFile{path: p, tracer: i, kind: "stream", account: true})
				case t.Sink == sinkFlight && flightName.MatchString(name):
					f := traceFile{path: p, tracer: i, kind: "dump"}
					if name == "final.json" {
						f.kind, f.account = "final", true
					}
					files = append(files, f)
				case (strings.HasSuffix(name, ".join") || strings.HasSuffix(name, ".next")) && r.killed():
					// A kill during a gzip join or a rotation leaves it
					// (guarantees.md); the next tracer on the path removes it.
				default:
					r.fail("files", "t%d: %s beside the trace, which no tracer should leave (%s)", i, name, describe(p))
				}
			}
		}
		if t.Tee != teeNone {
			files = append(files, r.teeFiles(i)...)
		}
		if t.Link == linkFile && r.clean() {
			if fi, err := os.Lstat(path); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				r.fail("files", "t%d: the path was a symlink; after Close it is not (%v): rotation or Close replaced the link", i, err)
			}
			r.checkLinkRotation(i, dirs)
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].path < files[j].path })
	return files
}

// checkLinkRotation fails the run if rotated files of a trace written
// through a symlink landed beside the link rather than beside its target.
// A default tracer's later cycles write to paths beside the link that
// are not links (see cyclePath): their rotated files belong there.
func (r *run) checkLinkRotation(i int, dirs []string) {
	ents, _ := os.ReadDir(dirs[0])
	for _, e := range ents {
		if m := traceName.FindStringSubmatch(e.Name()); m != nil && m[4] != "" && m[3] == "" {
			r.fail("files", "t%d: the path is a symlink to %s, but rotated file %s is beside the link (issue 31 item 8)", i, dirs[1], e.Name())
			return
		}
	}
}

func describe(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%d bytes", fi.Size())
}

// rules returns what file f must be.
func (r *run) rules(f traceFile) fileRules {
	t := r.cfg.Tracers[f.tracer]
	res := r.tracerResult(f.tracer)
	closedOK := r.clean() && res != nil && res.CloseErr == ""
	rules := fileRules{}
	switch f.kind {
	case "trace":
		rules.mustClose = closedOK
		if f.cycle > 0 || t.Cycles > 0 {
			// Every cycle's file but the last was closed by a Stop.
			rules.mustClose = r.clean() && res != nil && res.Calls["Stop (cycle): nil"] == res.Cycles
		}
		rules.asyncPair = !t.Sink.rotates()
	case "rotated":
		// Closed when the next file started, unless the disk was full.
		rules.mustClose = !r.killed() && !(f.tracer == 0 && r.cfg.Tmpfs)
	case "stream":
		rules.mustClose = closedOK
		rules.asyncPair = true
		// A stream whose writer failed part-way before the process died,
		// or a pipe whose reader died: its last read may end inside an
		// event, wherever the tracer's writes ended.
		rules.tornOK = t.Sink == sinkWriter && !r.clean() || t.Sink == sinkFifo && t.FifoDiesAt > 0
	case "dump", "final":
		rules.mustClose = !r.killed() && !r.froze
		rules.asyncPair = true
	case "tee":
		// Its Stop returned nil, or the child died before it.
		rules.mustClose = !r.killed() && !r.froze
		rules.asyncPair = true
		rules.allEnded = rules.mustClose
		rules.tornOK = r.killed() // a write to the file cut by the kill
	case "tee-cut":
		// Cut on an event boundary: what its writer took before it fell
		// behind or failed.
	}
	rules.halfClosed = r.killed() && (t.Sink == sinkFile || t.Sink == sinkRotate) && f.kind != "tee" && f.kind != "tee-cut"
	// A failed write may lose an async b and not its e.
	if f.tracer == 0 && r.cfg.Tmpfs || t.Fault == faultFail || t.Fault == faultShort || t.FifoDiesAt > 0 {
		rules.asyncPair = false
	}
	return rules
}

func (r *run) tracerResult(i int) *tracerResult {
	if r.result == nil || i >= len(r.result.Tracers) {
		return nil
	}
	return &r.result.Tracers[i]
}

// childPid returns the child's pid.
func (r *run) childPid() int {
	if r.result != nil {
		return r.result.Pid
	}
	return r.pid
}

// checkTraceFile checks one file and adds its ids to ids.
func (r *run) checkTraceFile(f traceFile, ids *idSet) {
	rules := r.rules(f)
	t := r.cfg.Tracers[f.tracer]
	set := ids
	if !f.account {
		set = newIDSet(r) // a recording mid-run: checked alone
	}
	set.file++
	rel, _ := filepath.Rel(r.dir, f.path)
	owners := map[string]int{}
	rivalPid := 0
	if r.rival != nil && r.rival.result != nil {
		rivalPid = r.rival.result.Pid
	} else if r.rival != nil {
		rivalPid = r.rival.pid
	}
	fr := checkFile(f.path, rules, func(pid int, id int64, b bool) {
		tr, _, _, _ := splitID(id)
		switch {
		case pid == r.childPid():
			owners[fmt.Sprintf("t%d", tr)]++
		case pid == rivalPid && tr == rivalTracer:
			owners["the rival process"]++
		default:
			owners[fmt.Sprintf("pid %d, tracer %d", pid, tr)]++
		}
		if p := set.add(pid, id, b, t.Sink.rotates()); p != "" {
			set.problem(rel, p)
		}
	})
	for _, p := range fr.problems {
		r.fail("file", "%s: %s", rel, p)
	}
	for _, p := range set.takeProblems() {
		r.fail("ids", "%s", p)
	}
	if len(owners) > 1 {
		var who []string
		for o, n := range owners {
			who = append(who, fmt.Sprintf("%d events of %s", n, o))
		}
		sort.Strings(who)
		r.fail("one writer", "%s holds events of more than one tracer: %s", rel, strings.Join(who, ", "))
	}
	for o := range owners {
		if o != fmt.Sprintf("t%d", f.tracer) && o != "the rival process" {
			if len(owners) == 1 {
				r.fail("one writer", "%s, t%d's file, holds only events of %s", rel, f.tracer, o)
			}
		}
	}
	r.filesChecked++
	r.eventsChecked += fr.events
	if !fr.parsed && f.account {
		r.unparsed[f.tracer] = true
	}
}

// An idSet records the ids seen in the files: for each stream (a worker's
// events of one class) and sequence number, whether it was seen as a B
// event, as another, and in which file.
type idSet struct {
	r        *run
	file     int
	streams  map[streamKey][]uint8
	problems []string
	dups     int
}

type streamKey struct {
	pid, tracer, worker int
	c                   class
}

const (
	seenB     = 1
	seenOther = 2
)

func newIDSet(r *run) *idSet { return &idSet{r: r, streams: map[streamKey][]uint8{}} }

// add records an event; it returns a problem if the event was written
// twice. Only a B event may be in two files, and only of a rotated trace,
// which writes the B of a span open across a rotation again at the top
// of the new file.
func (s *idSet) add(pid int, id int64, b bool, rotates bool) string {
	tr, w, c, seq := splitID(id)
	k := streamKey{pid, tr, w, c}
	st := s.streams[k]
	if uint64(len(st)) <= seq {
		if seq > 1<<30 {
			return fmt.Sprintf("id %d: sequence number %d, far beyond what any worker records", id, seq)
		}
		st = append(st, make([]uint8, int(seq)+1-len(st)+len(st)/4)...)
		s.streams[k] = st
	}
	old := st[seq]
	fileTag := uint8(s.file%63+1) << 2
	kind := uint8(seenOther)
	if b {
		kind = seenB
	}
	st[seq] = kind | fileTag
	if old == 0 {
		return ""
	}
	sameFile := old&^3 == fileTag
	if b && old&3 == seenB && !sameFile && rotates {
		return ""
	}
	s.dups++
	if s.dups > 5 {
		return ""
	}
	return fmt.Sprintf("event %s written twice (%s)", idString(id), map[bool]string{true: "in one file", false: "in two files"}[sameFile])
}

func (s *idSet) problem(file, p string) {
	s.problems = append(s.problems, file+": "+p)
}

func (s *idSet) takeProblems() []string {
	p := s.problems
	s.problems = nil
	return p
}

// found returns, per class, how many distinct events of tracer tr from
// pid were seen.
func (s *idSet) found(pid, tr int) (n [numClasses]uint64) {
	for k, st := range s.streams {
		if k.pid != pid || k.tracer != tr {
			continue
		}
		for _, v := range st {
			if v != 0 {
				n[k.c]++
			}
		}
	}
	return n
}

// has reports whether seq of stream k was seen.
func (s *idSet) has(k streamKey, seq uint64) bool {
	st := s.streams[k]
	return seq < uint64(len(st)) && st[seq] != 0
}

func idString(id int64) string {
	tr, w, c, seq := splitID(id)
	return fmt.Sprintf("t%d worker %d %s #%d", tr, w, c, seq)
}

// required are the classes every event of which must be in the files or
// counted.
func required(c class) bool { return c != clOptional }

// accounting checks, for each tracer, that the events in its files plus
// the events its Stats counts as not written equal what the workload
// recorded: none missing without a count, none in the files that was
// never recorded.
func (r *run) accounting(ids *idSet) {
	pid := r.childPid()
	for i, t := range r.cfg.Tracers {
		res := r.tracerResult(i)
		if res == nil {
			continue
		}
		found := ids.found(pid, i)
		// Events in the files that the workload never recorded.
		var phantom []string
		for k, st := range ids.streams {
			if k.pid != pid || k.tracer != i {
				continue
			}
			rec := res.Counts[k.worker][k.c]
			for seq := len(st) - 1; seq >= 0; seq-- {
				if st[seq] != 0 {
					if uint64(seq) >= rec {
						phantom = append(phantom, fmt.Sprintf("%s (its worker recorded %d)", idString(makeID(i, k.worker, k.c, uint64(seq))), rec))
					}
					break
				}
			}
		}
		if len(phantom) > 0 {
			sort.Strings(phantom)
			r.fail("accounting", "t%d: events in the files that the workload never recorded: %s", i, strings.Join(phantom[:min(3, len(phantom))], "; "))
		}
		var recorded [numClasses]uint64
		for _, n := range res.Counts {
			for c := range n {
				recorded[c] += n[c]
			}
		}
		var rec, got uint64
		var perClass []string
		for c := range numClasses {
			if required(c) {
				rec += recorded[c]
				got += found[c]
			}
			if recorded[c] > 0 {
				perClass = append(perClass, fmt.Sprintf("%s %d/%d", c, found[c], recorded[c]))
			}
		}
		st := res.Stats
		deleted, known := st["Deleted"]
		// Refused is not here: the workload's counters keep a numeric
		// series, so the counter is written without the refused one.
		counted := st["Dropped"] + st["Lost"] + st["Late"] + st["Forgotten"] + st["Overwritten"] + deleted
		desc := fmt.Sprintf("recorded %d, in the files %d, counted %d (Dropped %d, Lost %d, Late %d, Forgotten %d, Overwritten %d, Refused %d, Deleted %s); per class found/recorded: %s",
			rec, got, counted, st["Dropped"], st["Lost"], st["Late"], st["Forgotten"], st["Overwritten"], st["Refused"], deletedString(deleted, known), strings.Join(perClass, ", "))
		r.note("t%d: %s", i, desc)
		why := ""
		switch {
		case r.unparsed[i]:
			why = "a file of it is not JSON (reported above): its events cannot be read"
		case r.cfg.optionalEvents(&r.cfg.Tracers[i]):
			why = "it is the default tracer, which may stop while the workload records into tracer.Default()"
		case t.FifoDiesAt > 0:
			why = "what the pipe held when its reader died is lost where the tracer cannot see it"
		case t.Sink == sinkFlight && r.cfg.CloseWhileRunning:
			why = "the last recording was taken while the workload still recorded"
		case strings.Contains(res.CloseErr, tracerErrTimeoutText):
			why = "Close timed out, leaving the rest to the background, which the process did not wait for"
		case t.Sink.rotates() && t.MaxFiles > 0 && !known:
			why = "Stats has no Deleted field for the events of the files WithMaxFiles removed"
		}
		if why != "" {
			r.note("t%d: no lower bound on the accounting: %s", i, why)
			continue
		}
		if got+counted < rec {
			r.fail("accounting", "t%d: %d events missing without being counted: %s", i, rec-got-counted, desc)
		}
		r.checkUnmatched(i, res)
	}
}

// tracerErrTimeoutText is the text of tracer.ErrTimeout, which a Close
// error reported as text holds.
var tracerErrTimeoutText = tracer.ErrTimeout.Error()

func deletedString(n uint64, known bool) string {
	if !known {
		return "unknown"
	}
	return fmt.Sprint(n)
}

// checkUnmatched checks that the end calls that ended nothing (a second
// call, a late call on a goroutine holding no span, a second End of a
// SpanHandle) are counted in Unmatched, and nothing else is.
func (r *run) checkUnmatched(i int, res *tracerResult) {
	if r.cfg.CloseWhileRunning || r.cfg.optionalEvents(&r.cfg.Tracers[i]) {
		return // late calls after Close are Late, or go to no tracer
	}
	st := res.Stats
	misuse := res.StaleEnds + res.HandleEnds2
	if st["Unmatched"]+st["Dropped"]+st["Late"] < misuse {
		r.fail("accounting", "t%d: the workload called %d end functions that could end nothing; Unmatched counts %d", i, misuse, st["Unmatched"])
	}
	if st["Unmatched"] > misuse+st["Forgotten"] {
		r.fail("accounting", "t%d: Unmatched counts %d, the workload made %d such calls (and %d spans were forgotten)", i, st["Unmatched"], misuse, st["Forgotten"])
	}
}

// rivalAccounting checks the rival's events: if it got the file, every
// one of them is in a file or counted.
func (r *run) rivalAccounting(ids *idSet) {
	if r.rival == nil || r.rival.result == nil || !r.rival.result.Got {
		return
	}
	res := r.rival.result
	found := ids.found(res.Pid, rivalTracer)[clSpan]
	st := res.Stats
	counted := st["Dropped"] + st["Lost"] + st["Late"] + st["Forgotten"] + st["Deleted"]
	if found+counted < res.Recorded {
		r.fail("one writer", "the rival process got t0's live path (New returned nil) and its Close returned %q, but only %d of its %d spans are in a file (%d counted as not written)",
			res.CloseErr, found, res.Recorded, counted)
	}
}

// durability checks a killed (or signalled) child's files: every event
// recorded more than a flush interval and the time a flush takes before
// the signal is in them, and every event recorded before a Flush that
// returned nil before the signal; a held span, which is written as B at
// the first flush it is older than an interval, gets one interval more.
// The time a flush takes is the longest a Flush the workload called took
// in the run, or has been running at the signal (a loaded machine, a
// sleeping Stringer and a rotation every 16 KiB made it seconds), and
// durabilitySlack at least.
func (r *run) durability(ids *idSet) {
	at := r.killedAt
	what := "SIGKILL"
	if at == 0 {
		at, what = r.termedAt, "SIGTERM"
	}
	pid := r.childPid()
	for i, t := range r.cfg.Tracers {
		why := ""
		switch {
		case !t.Sink.onDisk():
			why = "its sink is not a file"
		case i == 0 && r.cfg.Tmpfs:
			why = "its disk filled"
		case t.Sink.rotates() && t.MaxFiles > 0:
			why = "WithMaxFiles removes old files"
		case r.unparsed[i]:
			why = "a file of it is not JSON (reported above)"
		case r.cfg.optionalEvents(&r.cfg.Tracers[i]):
			why = "its events may go to no tracer"
		case t.Handler == hClose || t.Handler == hStop || t.Stringer == strCloses:
			why = "its hooks may close it while the workload records"
		}
		if why != "" {
			r.note("t%d: no durability check after %s: %s", i, what, why)
			continue
		}
		took, flushed := r.rep.flushed(i, at)
		slack := max(durabilitySlack, took)
		// Each class's deadline: what was recorded before it must be in
		// the files.
		var deadline [numClasses]int64
		for c := range numClasses {
			grace, since := t.Flush+slack, flushed
			if c == clHeld {
				grace += t.Flush
				since -= int64(t.Flush)
			}
			deadline[c] = max(at-int64(grace), since)
		}
		// The newest mark of each worker before each class's deadline.
		must := map[int][numClasses]uint64{}
		r.rep.mu.Lock()
		for _, m := range r.rep.marks {
			if m.tracer != i {
				continue
			}
			n := must[m.worker]
			for c := range numClasses {
				if !c.durable() {
					continue
				}
				if m.at < deadline[c] && m.counts[c] > n[c] {
					n[c] = m.counts[c]
				}
			}
			must[m.worker] = n
		}
		r.rep.mu.Unlock()
		var missing []string
		total, lost := uint64(0), uint64(0)
		for w, n := range must {
			for c := range numClasses {
				k := streamKey{pid, i, w, c}
				for seq := uint64(0); seq < n[c]; seq++ {
					total++
					if !ids.has(k, seq) {
						lost++
						if len(missing) < 3 {
							missing = append(missing, idString(makeID(i, w, c, seq)))
						}
					}
				}
			}
		}
		flush := "no Flush returned nil"
		if flushed > 0 {
			flush = fmt.Sprintf("the last Flush that returned nil began %v before", time.Duration(at-flushed).Round(time.Millisecond))
		}
		r.note("t%d: %d events recorded more than %v before %s or before a Flush that returned nil (%s), %d of them missing", i, total, t.Flush+slack, what, flush, lost)
		if lost > 0 {
			r.fail("durability", "t%d: %d of the %d events recorded more than a flush interval (%v) plus %v (the time a flush took) before %s, or before a Flush that returned nil (%s), are not in the files, such as %s",
				i, lost, total, t.Flush, slack.Round(time.Millisecond), what, flush, strings.Join(missing, ", "))
		}
	}
}

// durabilitySlack is the least the durability check allows beyond a
// flush interval for a flush to be written (guarantees.md: "plus the
// time a flush takes"), when the workload's Flush calls took less.
const durabilitySlack = 2 * time.Second

// leaks checks that goroutines and file descriptors came back to where
// they were before the tracers started.
func (r *run) leaks() {
	res := r.result
	if res.After.Goroutines > res.Before.Goroutines {
		r.fail("leak", "%d goroutines before the tracers started, %d after they closed (waited 15s): %s",
			res.Before.Goroutines, res.After.Goroutines, tracerStacks(res.LeakDump))
	}
	before := map[string]bool{}
	for _, fd := range res.Before.FDs {
		before[fd] = true
	}
	var extra []string
	for _, fd := range res.After.FDs {
		if !before[fd] && !strings.Contains(fd, "/proc/") {
			extra = append(extra, fd)
		}
	}
	if len(res.After.FDs) > len(res.Before.FDs) && len(extra) > 0 {
		r.fail("leak", "file descriptors open after Close that were not before: %s", strings.Join(extra, ", "))
	}
}

// tracerStacks returns the goroutines of a dump that are in the tracer's
// code.
func tracerStacks(dump string) string {
	var keep []string
	for _, g := range strings.Split(dump, "\n\n") {
		if strings.Contains(g, "gotracer/tracer.") {
			keep = append(keep, indent(g, "      "))
		}
	}
	if len(keep) == 0 {
		return "none of them in the tracer's code"
	}
	return "\n" + strings.Join(keep[:min(4, len(keep))], "\n")
}
