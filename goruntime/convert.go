package goruntime

import (
	"strconv"
	"strings"

	"github.com/gotracer/tracer/internal/jsonenc"

	"golang.org/x/exp/trace"
)

// The converter turns execution-trace events into trace events, appended
// to buf as JSON lines. It is used by one goroutine at a time. Only event
// kinds that the viewers accept in any order are written (X, C, i, M and
// b/e of ids only it uses), because its output reaches the file a
// generation (about a second) after the tracer's own events.
type converter struct {
	o      options
	pid    int
	base   int64 // runtime.nanotime of ts 0
	buf    []byte
	events int
	tracks tracks // which goroutines' tracks to keep, and their names

	gs       map[trace.GoID]*gstate
	counts   [trace.GoSyscall + 1]int // goroutines per state
	ranges   map[string]trace.Time    // global ranges (GC, STW) open, by name
	tasks    map[trace.TaskID]string  // tasks begun, by id
	last     trace.Time               // the latest event's time
	lastCtr  trace.Time               // when counters were last written
	ctrDirty bool
	heap     [2]uint64 // live, goal
	heapSeen bool
	gcNamed  bool
	snapshot *trace.ClockSnapshot // the first sync's clocks, for Convert's header
}

// tracks decides which goroutines get a runtime track and writes their
// metadata: Start's version consults what the tracer wrote, Convert's
// keeps every goroutine.
type tracks interface {
	keep(gid uint64) bool
	announce(c *converter, gid uint64)
	exited(gid uint64)
}

// gstate is what the converter knows of one goroutine.
type gstate struct {
	state   trace.GoState
	reason  string
	since   trace.Time
	assist  bool // in a GC mark assist
	kept    bool // keep returned true once: it stays so
	shown   bool // its tracks' metadata is written
	regions []region
}

type region struct {
	name  string
	start trace.Time
}

func newConverter(o options, pid int, base int64, t tracks) *converter {
	return &converter{
		o: o, pid: pid, base: base, tracks: t,
		gs:     map[trace.GoID]*gstate{},
		ranges: map[string]trace.Time{},
		tasks:  map[trace.TaskID]string{},
	}
}

// Track ids. A goroutine's runtime track is its goroutine id with the top
// bit of a uint32 set: Perfetto casts tids to uint32, and goroutine ids
// stay below 2^31 in any program that runs for less than a few years of
// goroutine creation. GC and stop-the-world get fixed tracks at the top.
const (
	runtimeTidBit = 1 << 31
	gcTid         = 1<<32 - 2
	stwTid        = 1<<32 - 1
	gcSort        = -2 // the GC tracks sort above every goroutine's
)

// runtimeTid is the tid of goroutine gid's runtime track.
func runtimeTid(gid uint64) uint64 { return runtimeTidBit | gid&(runtimeTidBit-1) }

// handle converts one event.
func (c *converter) handle(ev *trace.Event) {
	t := ev.Time()
	if t > c.last {
		c.last = t
	}
	switch ev.Kind() {
	case trace.EventSync:
		if s := ev.Sync(); s.ClockSnapshot != nil && c.snapshot == nil {
			c.snapshot = s.ClockSnapshot
		}
	case trace.EventStateTransition:
		st := ev.StateTransition()
		if st.Resource.Kind != trace.ResourceGoroutine {
			return
		}
		from, to := st.Goroutine()
		c.transition(st.Resource.Goroutine(), from, to, st.Reason, t)
	case trace.EventRangeBegin, trace.EventRangeActive, trace.EventRangeEnd:
		c.rangeEvent(ev, t)
	case trace.EventRegionBegin:
		if g := c.g(ev.Goroutine(), t); g != nil {
			c.cut(ev.Goroutine(), g, t)
			g.kept = true // a region is the user's own annotation: show its goroutine
			g.regions = append(g.regions, region{name: ev.Region().Type, start: t})
		}
	case trace.EventRegionEnd:
		if g := c.g(ev.Goroutine(), t); g != nil && len(g.regions) > 0 {
			c.cut(ev.Goroutine(), g, t)
			r := g.regions[len(g.regions)-1]
			g.regions = g.regions[:len(g.regions)-1]
			c.slice(uint64(ev.Goroutine()), g, r.name, "region", r.start, t, "", "")
		}
	case trace.EventTaskBegin:
		tk := ev.Task()
		c.tasks[tk.ID] = tk.Type
		c.async('b', tk.ID, tk.Type, t)
	case trace.EventTaskEnd:
		tk := ev.Task()
		if name, ok := c.tasks[tk.ID]; ok {
			delete(c.tasks, tk.ID)
			c.async('e', tk.ID, name, t)
		}
	case trace.EventLog:
		if g := c.g(ev.Goroutine(), t); g != nil {
			c.logEvent(uint64(ev.Goroutine()), g, ev.Log(), t)
		}
	case trace.EventMetric:
		c.metric(ev.Metric())
	}
	c.maybeCounters(t)
}

// g returns goroutine id's state, made if new, or nil for no goroutine.
func (c *converter) g(id trace.GoID, t trace.Time) *gstate {
	if id == trace.NoGoroutine {
		return nil
	}
	g := c.gs[id]
	if g == nil {
		g = &gstate{state: trace.GoRunning, since: t}
		c.gs[id] = g
		c.counts[trace.GoRunning]++
	}
	return g
}

// transition ends goroutine id's current state at t and starts the next.
func (c *converter) transition(id trace.GoID, from, to trace.GoState, reason string, t trace.Time) {
	g := c.gs[id]
	if g == nil {
		g = &gstate{state: from, since: t}
		c.gs[id] = g
		c.count(from, 1)
	}
	c.cut(id, g, t)
	c.count(g.state, -1)
	c.count(to, 1)
	g.state, g.reason, g.assist = to, reason, false
	if to == trace.GoNotExist {
		c.endRegions(id, g, t)
		delete(c.gs, id)
		c.tracks.exited(uint64(id))
	}
}

func (c *converter) count(s trace.GoState, d int) {
	if int(s) < len(c.counts) {
		c.counts[s] += d
		c.ctrDirty = true
	}
}

// cut ends goroutine id's current state at t, writing it if it is long
// enough, and starts the same state again at t: regions and assists cut
// the running state so that every state nests in the regions around it.
func (c *converter) cut(id trace.GoID, g *gstate, t trace.Time) {
	if t <= g.since {
		return
	}
	name := ""
	switch g.state {
	case trace.GoRunning:
		name = "running"
		if g.assist {
			name = "GC assist"
		}
	case trace.GoRunnable:
		name = "runnable"
	case trace.GoWaiting:
		name = "blocked"
	case trace.GoSyscall:
		name = "syscall"
	}
	if name != "" && time64(t-g.since) >= int64(c.o.minState) {
		reason := ""
		if g.state == trace.GoWaiting {
			reason = g.reason
		}
		c.slice(uint64(id), g, name, "state", g.since, t, "reason", reason)
	}
	g.since = t
}

func time64(t trace.Time) int64 { return int64(t) }

// show reports whether goroutine gid's runtime track is kept, writing its
// metadata the first time.
func (c *converter) show(gid uint64, g *gstate) bool {
	if !g.kept {
		if !c.tracks.keep(gid) {
			return false
		}
		g.kept = true
	}
	if !g.shown {
		g.shown = true
		c.tracks.announce(c, gid)
	}
	return true
}

// slice writes an X event on goroutine gid's runtime track.
func (c *converter) slice(gid uint64, g *gstate, name, cat string, start, end trace.Time, key, val string) {
	if !c.show(gid, g) {
		return
	}
	b := c.head(name, cat, 'X', start)
	b = append(b, `,"dur":`...)
	b = jsonenc.Micros(b, int64(end-start))
	b = c.ids(b, runtimeTid(gid))
	if val != "" {
		b = append(b, `,"args":{"`...)
		b = append(b, key...)
		b = append(b, `":`...)
		b = jsonenc.String(b, val)
		b = append(b, '}')
	}
	c.end(b)
}

// endRegions writes the regions still open on a goroutine that exits or
// at the end of the trace, as ending at t.
func (c *converter) endRegions(id trace.GoID, g *gstate, t trace.Time) {
	c.cut(id, g, t)
	for i := len(g.regions) - 1; i >= 0; i-- {
		c.slice(uint64(id), g, g.regions[i].name, "region", g.regions[i].start, t, "", "")
	}
	g.regions = nil
}

func (c *converter) logEvent(gid uint64, g *gstate, l trace.Log, t trace.Time) {
	if !c.show(gid, g) {
		return
	}
	name := l.Category
	if name == "" {
		name = "log"
	}
	b := c.head(name, "log", 'i', t)
	b = c.ids(b, runtimeTid(gid))
	b = append(b, `,"s":"t","args":{"message":`...)
	b = jsonenc.String(b, l.Message)
	c.end(append(b, '}'))
}

// rangeEvent handles GC cycles, stop-the-world pauses and mark assists.
// A stop-the-world range is scoped to the goroutine that stopped the
// world, but it stops every goroutine: it goes on the process's track.
func (c *converter) rangeEvent(ev *trace.Event, t trace.Time) {
	r := ev.Range()
	tid, name := uint64(gcTid), r.Name
	switch {
	case strings.HasPrefix(r.Name, "stop-the-world"):
		tid = stwTid
	case r.Name == "GC concurrent mark phase":
		name = "GC"
	case r.Name == "GC mark assist" && r.Scope.Kind == trace.ResourceGoroutine:
		id := r.Scope.Goroutine()
		if g := c.g(id, t); g != nil {
			c.cut(id, g, t)
			g.assist = ev.Kind() != trace.EventRangeEnd
		}
		return
	default:
		return // sweeping, per P: too fine to read
	}
	if ev.Kind() != trace.EventRangeEnd {
		c.ranges[r.Name] = t
		return
	}
	start, ok := c.ranges[r.Name]
	if !ok {
		return
	}
	delete(c.ranges, r.Name)
	c.gcTracks()
	b := c.head(name, "gc", 'X', start)
	b = append(b, `,"dur":`...)
	b = jsonenc.Micros(b, int64(t-start))
	c.end(c.ids(b, tid))
}

// gcTracks names the GC and stop-the-world tracks, once.
func (c *converter) gcTracks() {
	if c.gcNamed {
		return
	}
	c.gcNamed = true
	c.meta("thread_name", gcTid, "Go GC", 0, false)
	c.meta("thread_sort_index", gcTid, "", gcSort, true)
	c.meta("thread_name", stwTid, "Go stop-the-world", 0, false)
	c.meta("thread_sort_index", stwTid, "", gcSort, true)
}

// async writes the begin or end of a runtime/trace task as an async slice
// of the process. The id carries a "task:" prefix so that it never meets
// the tracer's own async ids, and a category, which chrome://tracing
// requires of async events.
func (c *converter) async(ph byte, id trace.TaskID, name string, t trace.Time) {
	if name == "" {
		name = "task"
	}
	b := c.head(name, "task", ph, t)
	b = append(b, `,"id2":{"local":"task:0x`...)
	b = strconv.AppendUint(b, uint64(id), 16)
	b = append(b, `"}`...)
	c.end(c.ids(b, 0))
}

func (c *converter) metric(m trace.Metric) {
	if m.Value.Kind() != trace.ValueUint64 {
		return
	}
	switch m.Name {
	case "/memory/classes/heap/objects:bytes":
		c.heap[0] = m.Value.Uint64()
	case "/gc/heap/goal:bytes":
		c.heap[1] = m.Value.Uint64()
	default:
		return
	}
	c.heapSeen, c.ctrDirty = true, true
}

// maybeCounters writes the goroutine and heap counters if they changed,
// at most once per counter interval.
func (c *converter) maybeCounters(t trace.Time) {
	if !c.ctrDirty || (c.lastCtr != 0 && int64(t-c.lastCtr) < int64(c.o.counterEvery)) {
		return
	}
	c.counters(t)
}

func (c *converter) counters(t trace.Time) {
	c.ctrDirty, c.lastCtr = false, t
	b := c.head("go.goroutines", "", 'C', t)
	b = c.ids(b, 0)
	b = append(b, `,"args":{"running":`...)
	b = strconv.AppendInt(b, int64(max(c.counts[trace.GoRunning], 0)), 10)
	b = append(b, `,"runnable":`...)
	b = strconv.AppendInt(b, int64(max(c.counts[trace.GoRunnable], 0)), 10)
	b = append(b, `,"blocked":`...)
	b = strconv.AppendInt(b, int64(max(c.counts[trace.GoWaiting], 0)), 10)
	b = append(b, `,"syscall":`...)
	b = strconv.AppendInt(b, int64(max(c.counts[trace.GoSyscall], 0)), 10)
	c.end(append(b, '}'))
	if c.heapSeen {
		b := c.head("go.heap", "", 'C', t)
		b = c.ids(b, 0)
		b = append(b, `,"args":{"live":`...)
		b = strconv.AppendUint(b, c.heap[0]&(1<<63-1), 10)
		b = append(b, `,"goal":`...)
		b = strconv.AppendUint(b, c.heap[1]&(1<<63-1), 10)
		c.end(append(b, '}'))
	}
}

// finish ends everything still open at the last event: states, regions,
// tasks and GC ranges, and writes the counters' last values.
func (c *converter) finish() {
	t := c.last
	for id, g := range c.gs {
		c.endRegions(id, g, t)
	}
	for id, name := range c.tasks {
		c.async('e', id, name, t)
	}
	clear(c.tasks)
	for name, start := range c.ranges {
		tid, label := uint64(gcTid), name
		if strings.HasPrefix(name, "stop-the-world") {
			tid = stwTid
		} else if name == "GC concurrent mark phase" {
			label = "GC"
		}
		c.gcTracks()
		b := c.head(label, "gc", 'X', start)
		b = append(b, `,"dur":`...)
		b = jsonenc.Micros(b, int64(t-start))
		c.end(c.ids(b, tid))
	}
	clear(c.ranges)
	c.counters(t)
}

// head starts an event: name, category, phase and ts.
func (c *converter) head(name, cat string, ph byte, t trace.Time) []byte {
	b := append(c.buf, `{"name":`...)
	b = jsonenc.String(b, name)
	if cat != "" {
		b = append(b, `,"cat":"`...)
		b = append(b, cat...)
		b = append(b, '"')
	}
	b = append(b, `,"ph":"`...)
	b = append(b, ph, '"')
	b = append(b, `,"ts":`...)
	return jsonenc.Micros(b, int64(t)-c.base)
}

// ids appends pid and, for a track, tid (0 for the process's counters and
// async slices, which have none).
func (c *converter) ids(b []byte, tid uint64) []byte {
	b = append(b, `,"pid":`...)
	b = strconv.AppendInt(b, int64(c.pid), 10)
	if tid != 0 {
		b = append(b, `,"tid":`...)
		b = strconv.AppendUint(b, tid, 10)
	}
	return b
}

// end closes an event started by head and counts it.
func (c *converter) end(b []byte) {
	c.buf = append(b, "},\n"...)
	c.events++
}

// meta appends a thread_name (str) or thread_sort_index (num) event.
func (c *converter) meta(name string, tid uint64, str string, num int64, isNum bool) {
	c.buf, c.events = appendMeta(c.buf, c.pid, name, tid, str, num, isNum), c.events+1
}

func appendMeta(b []byte, pid int, name string, tid uint64, str string, num int64, isNum bool) []byte {
	b = append(b, `{"name":"`...)
	b = append(b, name...)
	b = append(b, `","ph":"M","pid":`...)
	b = strconv.AppendInt(b, int64(pid), 10)
	b = append(b, `,"tid":`...)
	b = strconv.AppendUint(b, tid, 10)
	if isNum {
		b = append(b, `,"args":{"sort_index":`...)
		b = strconv.AppendInt(b, num, 10)
	} else {
		b = append(b, `,"args":{"name":`...)
		b = jsonenc.String(b, str)
	}
	return append(b, "}},\n"...)
}
