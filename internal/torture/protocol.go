//go:build linux

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The child reports to the parent through a pipe (its file descriptor 3),
// never through the tracer, one line a report, each written with one
// write(2) so that a kill leaves whole lines:
//
//	E <unix ns> <what>                       an event: ready, closing...
//	H <unix ns> <stall ns> <name>            heartbeat: the longest a busy goroutine went without progress
//	M <unix ns> <phase> <live> <started>     live heap bytes and span starts so far
//	D <unix ns> <tracer> <worker> <n0> ...   a worker's counts per class, all recorded by then
//	L <start ns> <end ns> <tracer>           a Flush the workload called: at its start (end 0), at its return with nil
//	F <text>                                 a failure the child saw itself
//	R <json>                                 the result, once everything is closed

// reportFD is the child's end of the report pipe.
const reportFD = 3

// A reporter writes the child's reports.
type reporter struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
}

func (r *reporter) line(kind byte, format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf = append(r.buf[:0], kind, ' ')
	r.buf = fmt.Appendf(r.buf, format, args...)
	r.buf = append(r.buf, '\n')
	r.w.Write(r.buf)
}

func now() int64 { return time.Now().UnixNano() }

// event reports that what happened now.
func (r *reporter) event(what string) { r.line('E', "%d %s", now(), what) }

// fail reports a failure the child saw.
func (r *reporter) fail(format string, args ...any) {
	r.line('F', "%s", strings.ReplaceAll(fmt.Sprintf(format, args...), "\n", " "))
}

// flush reports a Flush of tracer called at start (unix ns): returned nil
// at end, or not done if end is 0 (running, or given up: ErrTimeout).
func (r *reporter) flush(tracer int, start, end int64) {
	r.line('L', "%d %d %d", start, end, tracer)
}

// mark reports that w recorded everything it counts, now.
func (r *reporter) mark(w *worker) {
	n := w.counts()
	if n == w.marked {
		return
	}
	w.marked = n
	var b strings.Builder
	fmt.Fprintf(&b, "%d %d %d", now(), w.l.tracer, w.idx)
	for _, x := range n {
		b.WriteString(" ")
		b.WriteString(strconv.FormatUint(x, 10))
	}
	r.line('D', "%s", b.String())
}

// progress is the watchdog's view of one goroutine that records: it ticks
// as it goes, and says when it waits for something that is not the
// tracer (a job, a timer), which is no freeze.
type progress struct {
	name  string
	ticks atomic.Uint64
	state atomic.Int32 // stIdle, stBusy or stDone

	// the watchdog's own: when ticks last changed
	seen     uint64
	seenTime int64
}

const (
	stBusy int32 = iota
	stIdle
	stDone
)

func (p *progress) tick() {
	p.ticks.Add(1)
	p.state.Store(stBusy)
}
func (p *progress) idle() { p.state.Store(stIdle) }
func (p *progress) done() { p.state.Store(stDone) }

// A watch is the child's set of progress slots.
type watch struct {
	mu    sync.Mutex
	slots []*progress
}

func (w *watch) add(name string) *progress {
	p := &progress{name: name, seenTime: now()}
	w.mu.Lock()
	w.slots = append(w.slots, p)
	w.mu.Unlock()
	return p
}

// stalled returns the busy goroutine that went longest without progress.
func (w *watch) stalled() (string, time.Duration) {
	t := now()
	var name string
	var worst int64
	w.mu.Lock()
	defer w.mu.Unlock()
	live := w.slots[:0]
	for _, p := range w.slots {
		st := p.state.Load()
		if st == stDone {
			continue
		}
		live = append(live, p)
		if n := p.ticks.Load(); n != p.seen || st == stIdle {
			p.seen, p.seenTime = n, t
			continue
		}
		if d := t - p.seenTime; d > worst {
			worst, name = d, p.name
		}
	}
	clear(w.slots[len(live):])
	w.slots = live
	return name, time.Duration(worst)
}

// The parent's side.

// A mark is one D line.
type mark struct {
	at     int64
	tracer int
	worker int
	counts [numClasses]uint64
}

// A flushCall is a Flush the workload called, as L lines name it.
type flushCall struct {
	tracer int
	start  int64
}

// A sample is one M line.
type sample struct {
	at      int64
	phase   string
	live    uint64
	started uint64
}

// reports is everything the parent read from a child.
type reports struct {
	mu        sync.Mutex
	events    map[string]int64 // E: what -> when
	lastBeat  int64            // when the last H line came
	stallName string
	stall     time.Duration
	samples   []sample
	marks     []mark
	flushes   map[flushCall]int64 // L: a Flush -> when it returned nil, 0 if it did not
	fails     []string
	result    json.RawMessage
	pruned    int // marks left after the last pruning
}

// markWindow is how far back marks are kept whole: the durability check
// needs, per worker, the newest mark before a deadline a few seconds
// before a kill, so of older marks each worker's newest is enough. It
// keeps a long run's marks in bounded memory.
const markWindow = 30 * time.Second

// pruneMarks drops the marks older than markWindow before now, but each
// worker's newest of them.
func (rs *reports) pruneMarks(now int64) {
	cut := now - int64(markWindow)
	type key struct{ tracer, worker int }
	newest := map[key]mark{}
	var recent []mark
	for _, m := range rs.marks {
		if m.at >= cut {
			recent = append(recent, m)
			continue
		}
		if n, ok := newest[key{m.tracer, m.worker}]; !ok || m.at >= n.at {
			newest[key{m.tracer, m.worker}] = m
		}
	}
	out := make([]mark, 0, len(newest)+len(recent))
	for _, m := range newest {
		out = append(out, m)
	}
	rs.marks = append(out, recent...)
	rs.pruned = len(rs.marks)
}

// read reads a child's reports until r ends, copying them to raw.
func (rs *reports) read(r io.Reader, raw io.Writer) {
	sc := bufio.NewScanner(io.TeeReader(r, raw))
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		rs.parse(sc.Text())
	}
}

func (rs *reports) parse(line string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if len(line) < 2 {
		return
	}
	kind, rest := line[0], line[2:]
	f := strings.Fields(rest)
	num := func(i int) int64 {
		if i >= len(f) {
			return 0
		}
		n, _ := strconv.ParseInt(f[i], 10, 64)
		return n
	}
	switch kind {
	case 'E':
		if len(f) >= 2 {
			if rs.events == nil {
				rs.events = map[string]int64{}
			}
			what := strings.Join(f[1:], " ")
			rs.events[what] = num(0)
			if what == "ready" {
				// The marks so far are the untraced run's, which counts
				// with the same workers: none of it is in the files.
				rs.marks, rs.pruned = rs.marks[:0], 0
				clear(rs.flushes)
			}
		}
	case 'H':
		rs.lastBeat = time.Now().UnixNano()
		rs.stall = time.Duration(num(1))
		rs.stallName = strings.Join(f[min(2, len(f)):], " ")
	case 'M':
		if len(f) == 4 {
			rs.samples = append(rs.samples, sample{at: num(0), phase: f[1], live: uint64(num(2)), started: uint64(num(3))})
		}
	case 'D':
		if len(f) == 3+int(numClasses) {
			m := mark{at: num(0), tracer: int(num(1)), worker: int(num(2))}
			for c := range m.counts {
				m.counts[c] = uint64(num(3 + c))
			}
			rs.marks = append(rs.marks, m)
			if len(rs.marks) >= 2*rs.pruned+1<<16 {
				rs.pruneMarks(m.at)
			}
		}
	case 'L':
		if len(f) == 3 {
			if rs.flushes == nil {
				rs.flushes = map[flushCall]int64{}
			}
			rs.flushes[flushCall{tracer: int(num(2)), start: num(0)}] = num(1)
		}
	case 'F':
		rs.fails = append(rs.fails, rest)
	case 'R':
		rs.result = json.RawMessage(rest)
	}
}

// flushed returns what the workload's Flush calls of tracer that began
// before at say: how long the longest took (the time a flush took in
// this run, on this machine), counting one not done by at (still
// running, or given up) as lasting until at; and when the newest began of
// those that returned nil before at, 0 if none did. Flush writes every
// event recorded before it began.
func (rs *reports) flushed(tracer int, at int64) (longest time.Duration, newest int64) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for c, end := range rs.flushes {
		if c.tracer != tracer || c.start >= at {
			continue
		}
		if end > 0 && end <= at {
			newest = max(newest, c.start)
		} else {
			end = at
		}
		longest = max(longest, time.Duration(end-c.start))
	}
	return longest, newest
}

// event returns when the child reported what, or 0.
func (rs *reports) event(what string) int64 {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.events[what]
}

// openReportPipe returns the child's reporter, on file descriptor 3.
func openReportPipe() *reporter {
	return &reporter{w: os.NewFile(reportFD, "reports")}
}
