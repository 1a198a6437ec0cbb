package tables

import (
	"bytes"
	"cmp"
	"container/heap"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/gotracer/tracer/internal/tracefile"
)

// DefaultMaxPending is the default Builder.MaxPending.
const DefaultMaxPending = 1 << 20

// A Report says what a Builder could not place exactly.
type Report struct {
	Events int64 // events read
	Slices int64 // slice rows written

	// Unsure counts slices written before a slice that encloses them
	// came (past MaxPending, or in a track out of order): their depth
	// is short of trace_processor's, and their parent may be wrong. It
	// is a lower bound (see forest.go).
	Unsure int64
	// UnboundFlows counts flow events no slice of their thread encloses:
	// the viewers draw no arrow from or to them either.
	UnboundFlows int64
	// LateFlows counts flow events that came too late to be sure of
	// their arrows: after the slices of their time were written, where
	// those do not tell the slice trace_processor binds them to (see
	// late.go), or after events of their flow later in time whose
	// arrows were written (see flow.go).
	LateFlows int64
	// MaxPending is the bound the Builder kept to (Builder.MaxPending).
	MaxPending int
	// TooDeep counts the slices nested deeper than the 512 levels
	// trace_processor keeps, which it drops, and so do the tables.
	TooDeep int64
	// Late are the tracks (track ids) where a slice came that may
	// enclose slices written before it, or begin inside one: the slices
	// Unsure counts are among theirs. A Sink that can rewrite its rows
	// nests those tracks' slices again, once every row is written, from
	// their ts and dur (as tracer sql does, in DuckDB).
	Late []int64
}

// Warnings returns what a tool should say of the rows: what could not be
// placed as trace_processor places it, and what to do about it.
func (r Report) Warnings() []string {
	var w []string
	if r.Unsure > 0 {
		w = append(w, fmt.Sprintf("%d slices were written before a slice that encloses them was read, later in the file: their depth is short and their parent may be wrong. "+
			"Either more than %d slices waited for it (as when a span's B comes after the spans it holds: run again with -max-pending %d or more, about 250 bytes a slice), "+
			"or it came after its track had been in start order (a long X written at the end of the file, as webpack's EvaluateScript: no bound helps, tracer stats counts them right)",
			r.Unsure, r.MaxPending, 4*r.MaxPending))
	}
	if r.TooDeep > 0 {
		w = append(w, fmt.Sprintf("%d slices nested deeper than the 512 levels trace_processor keeps are left out, as it drops them (slice_max_depth_exceeded)", r.TooDeep))
	}
	if r.LateFlows > 0 {
		w = append(w, fmt.Sprintf("%d flow events came too late to be sure of their arrows (after the slices of their time were written, which do not tell the slice trace_processor binds each to, or after later events of their flow, whose arrows were written): they may start or end on other slices than its", r.LateFlows))
	}
	if r.UnboundFlows > 0 {
		w = append(w, fmt.Sprintf("%d flow events bind to no slice (as in trace_processor: flow_no_enclosing_slice): no arrow from or to them", r.UnboundFlows))
	}
	return w
}

// A Builder makes the rows of the tables from the events of one process
// group (the files of one process, or of several processes read
// together) at a time. Use it as NewBuilder, then Add each event of the
// group and EndGroup, for each group, then Close.
type Builder struct {
	// MaxPending bounds the slices kept waiting for their depth (see
	// forest.go); 0 means DefaultMaxPending.
	MaxPending int

	// InOpen writes the slices inside B events still open as they can
	// be written, as children of those B events, rather than once the
	// B events end (see anchorOf): a Chromium trace's message loops
	// are never ended, and 83% of its slices waited for the end of the
	// file. It is for a Sink that nests Report.Late tracks again: a
	// track in start order until an X comes after the slices it holds
	// (TypeScript's) had them written in the B around them, short.
	InOpen bool

	Report Report

	read readAhead // Build's: see readahead.go

	sink   Sink
	offset int64  // added to every ts of the group
	group  int    // the group's number, from 1
	file   string // the group's first file

	strs         map[string]string
	recent       [256]string // intern's cache
	procs        map[procKey]*proc
	procList     []*proc
	threads      map[threadKey]*thread
	thrList      []*thread
	async        map[string]*track
	named        map[string]*track // instants of a process or of the trace
	counters     map[string]counterTrack
	fileX        bool // an X event came in the file being read (see Ties)
	flows        map[string]*flowChain
	writtenFlows int         // flows in flows with all their events written
	binds        []bindPoint // slices with a bind_id: see flow.go
	strIDs       map[string]int64

	trackRows []Track
	// carried holds, at the start of a rotated set's next file, the B
	// events the files before left open, which the tracer package
	// writes again at the top of the new file: copies, as a node is
	// reused once written.
	carried map[*track][]carriedB
	waiting []*track // tracks with slices waiting, in the group
	pending int

	histTracks []*track // the tracks with a history (see late.go)
	histLen    int      // the slices of their histories
	ending     bool     // in EndGroup: no flow event comes after

	nextSlice, nextTrack, nextCounter, nextFlow, nextUtid, nextUpid int64

	key    []byte
	args   []byte
	oldest []oldRoot  // oldestEndSorted's, reused
	heads  []rootHead // oldestEnd's, reused

	nodes nodes // the nodes, reused once written
	arena arena // the args strings and the values rows point to

	lastThread *thread // the thread of the last event with numeric ids
	lastPid    int64
	lastGroup  int
	counter    Counter
}

type procKey struct {
	group int
	pid   int64
}

type proc struct{ row Process }

type threadKey struct {
	upid, tid int64
}

type thread struct {
	row   Thread
	t     *track
	track int // its row in trackRows, named at Close
}

// NewBuilder returns a Builder that hands its rows to s.
func NewBuilder(s Sink) *Builder {
	return &Builder{
		sink:     s,
		strs:     map[string]string{},
		procs:    map[procKey]*proc{},
		threads:  map[threadKey]*thread{},
		async:    map[string]*track{},
		named:    map[string]*track{},
		counters: map[string]counterTrack{},
		flows:    map[string]*flowChain{},
		strIDs:   map[string]int64{},
	}
}

// BeginGroup starts the events of a group read from file, whose
// timestamps are shifted by offset nanoseconds.
func (b *Builder) BeginGroup(file string, offset int64) {
	b.offset = offset
	b.group++
	b.file = file
}

// A carriedB is a B event a rotated set's earlier file left open.
type carriedB struct {
	ts   int64
	name string
}

// nextFile notes that the events of the group's next file follow.
func (b *Builder) nextFile() {
	b.carried = map[*track][]carriedB{}
	for _, t := range b.waiting {
		for _, n := range t.open {
			b.carried[t] = append(b.carried[t], carriedB{n.row.TS, n.row.Name})
		}
	}
}

// repeated reports whether a B at ts named name on t repeats one a
// rotated set's earlier file left open, and forgets that one if so.
func (b *Builder) repeated(t *track, ts int64, name tracefile.Str) bool {
	c := b.carried[t]
	for i, n := range c {
		if n.ts == ts && n.name == b.intern(name) {
			b.carried[t] = slices.Delete(c, i, i+1)
			return true
		}
	}
	return false
}

// intern returns s decoded, one copy per distinct string.
func (b *Builder) intern(s tracefile.Str) string {
	raw := s.Raw
	if len(raw) == 0 {
		return "" // most categories
	}
	if s.Escaped {
		b.key = s.Append(b.key[:0])
		raw = b.key
	}
	// A few names make most of a trace's events: a cache of the last
	// string of each hash of its length and ends saves a map lookup.
	c := &b.recent[(len(raw)*31+int(raw[0])*7+int(raw[len(raw)-1]))%len(b.recent)]
	if *c == string(raw) {
		return *c
	}
	v, ok := b.strs[string(raw)]
	if !ok {
		v = string(raw)
		b.strs[v] = v
	}
	*c = v
	return v
}

// num maps a pid or tid to an int64: numbers as they are, strings to
// numbers above the uint32 range, so they cannot collide.
func (b *Builder) num(n tracefile.Num) int64 {
	switch n.Kind {
	case tracefile.NumInt:
		return n.Int
	case tracefile.NumString:
		id, ok := b.strIDs[string(n.Str)]
		if !ok {
			id = 1<<40 + int64(len(b.strIDs))
			b.strIDs[string(n.Str)] = id
		}
		return id
	}
	return 0 // what Perfetto makes of a pid it cannot read
}

func (b *Builder) process(pid tracefile.Num) *proc {
	k := procKey{b.group, b.num(pid)}
	p := b.procs[k]
	if p == nil {
		b.nextUpid++
		p = &proc{row: Process{Upid: b.nextUpid, Pid: k.pid, File: b.file, Offset: b.offset}}
		b.procs[k] = p
		b.procList = append(b.procList, p)
	}
	return p
}

func (b *Builder) thread(e *tracefile.Event) *thread {
	if b.lastThread != nil && e.Pid.Kind == tracefile.NumInt && e.Tid.Kind == tracefile.NumInt &&
		e.Pid.Int == b.lastPid && e.Tid.Int == b.lastThread.row.Tid && b.lastGroup == b.group {
		return b.lastThread // most events are on the thread of the one before
	}
	p := b.process(e.Pid)
	k := threadKey{p.row.Upid, b.num(e.Tid)}
	if k.tid == 0 {
		k.tid = p.row.Pid // trace_processor takes tid 0 for the process's main thread
	}
	t := b.threads[k]
	if t == nil {
		b.nextUtid++
		t = &thread{row: Thread{Utid: b.nextUtid, Tid: k.tid, Upid: p.row.Upid}}
		t.track = len(b.trackRows)
		t.t = b.newTrack("", "thread", &t.row.Utid, &t.row.Upid)
		t.t.thread = true
		b.threads[k] = t
		b.thrList = append(b.thrList, t)
	}
	if e.Pid.Kind == tracefile.NumInt && e.Tid.Kind == tracefile.NumInt {
		b.lastThread, b.lastPid, b.lastGroup = t, e.Pid.Int, b.group
	}
	return t
}

// newTrack makes a track; its row is written at Close.
func (b *Builder) newTrack(name, typ string, utid, upid *int64) *track {
	b.nextTrack++
	b.trackRows = append(b.trackRows, Track{ID: b.nextTrack, Name: name, Type: typ, Utid: utid, Upid: upid})
	return newTrack(b.nextTrack)
}

// Add follows one event of the group.
func (b *Builder) Add(e *tracefile.Event) error {
	b.Report.Events++
	ph := e.Phase()
	if ph == 'M' {
		b.metadata(e)
		return nil
	}
	if !e.HasTS {
		return nil // the viewers drop it too
	}
	ts := e.TS + b.offset
	switch ph {
	case 'X':
		b.fileX = true // even one dropped: see Ties
		if !e.HasDur || e.Dur < 0 {
			return nil
		}
		th := b.thread(e)
		n := b.node(e, ts, e.Dur, th)
		b.bindFlow(e, n, e.Dur)
		th.t.xSeen = true
		if e.Dur == 0 {
			n.tieBegin = th.t.flowsRead
		}
		return b.place(th.t, n, false)
	case 'B':
		th := b.thread(e)
		if b.repeated(th.t, ts, e.Name) {
			return nil
		}
		n := b.node(e, ts, -1, th)
		n.be = true
		n.tieBegin = th.t.flowsRead
		b.bindFlow(e, n, 0)
		th.t.seeStart(ts)
		if n.clean = b.InOpen && th.t.cleanStart(ts); n.clean {
			n.inDepth = int32(len(th.t.open))
		}
		th.t.open = append(th.t.open, n)
		b.wait(th.t)
		return nil
	case 'E':
		// trace_processor ends the innermost open B of the E's name and
		// category (any, for an E without them), and cuts the B events
		// still open inside it there (misplaced_end_event); an E that
		// matches none it drops.
		t := b.thread(e).t
		i := len(t.open) - 1
		for i >= 0 && !endMatches(t.open[i], e, b) {
			i--
		}
		if i < 0 {
			return nil
		}
		n := t.open[i]
		if !b.fileX {
			for _, o := range t.open[i:] {
				o.tieEnd = t.flowsRead
			}
		}
		cut := slices.Clone(t.open[i+1:])
		clear(t.open[i:])
		t.open = t.open[:i]
		b.end(n, ts, e)
		if err := b.place(t, n, true); err != nil {
			return err
		}
		for _, c := range cut {
			c.end = max(ts, c.row.TS)
			c.row.Dur = c.end - c.row.TS
			if err := b.place(t, c, true); err != nil {
				return err
			}
		}
		return nil
	case 'i', 'I', 'R':
		var t *track
		var utid, upid *int64
		switch string(e.S.Raw) {
		case "g":
			t = b.namedTrack("global", "", nil)
		case "p":
			p := b.process(e.Pid)
			t = b.namedTrack("process", strconv.FormatInt(p.row.Upid, 10), &p.row.Upid)
			upid = &p.row.Upid
		default:
			th := b.thread(e)
			t, utid, upid = th.t, &th.row.Utid, &th.row.Upid
			t.xSeen = true
		}
		n := b.nodeOn(e, ts, 0, t, utid, upid)
		n.tieBegin = t.flowsRead
		return b.place(t, n, false)
	case 'b', 'n', 'e':
		return b.asyncEvent(e, ph, ts)
	case 's', 't', 'f':
		return b.flowEvent(e, ph, ts)
	case 'C':
		return b.counterEvent(e, ts)
	}
	return nil
}

func (b *Builder) metadata(e *tracefile.Event) {
	if e.Name.Escaped {
		return
	}
	switch string(e.Name.Raw) {
	case "process_name":
		p := b.process(e.Pid)
		if n := e.Arg("name"); n != nil && n.Str.Set {
			p.row.Name = n.Str.String()
		}
		if a := e.Arg("ts0_unix_ns"); a != nil && a.IsNum {
			if v, err := strconv.ParseInt(string(a.Value), 10, 64); err == nil {
				p.row.TS0UnixNS = &v
			}
		}
	case "thread_name":
		if n := e.Arg("name"); n != nil && n.Str.Set {
			b.thread(e).row.Name = n.Str.String()
		}
	}
}

// node makes the slice of e on thread th.
func (b *Builder) node(e *tracefile.Event, ts, dur int64, th *thread) *node {
	return b.nodeOn(e, ts, dur, th.t, &th.row.Utid, &th.row.Upid)
}

func (b *Builder) nodeOn(e *tracefile.Event, ts, dur int64, t *track, utid, upid *int64) *node {
	b.nextSlice++
	n := b.nodes.get()
	n.row = Slice{
		ID: b.nextSlice, TS: ts, Dur: dur, TrackID: t.id,
		Category: b.intern(e.Cat), Name: b.intern(e.Name),
		Utid: utid, Upid: upid,
	}
	n.size = 1
	n.args = b.argsOf(e, "")
	n.end = math.MaxInt64
	if dur >= 0 {
		n.end = ts + dur
	}
	return n
}

// argsOf returns e's args as a JSON object, merged after prev (the
// args of a B, for its E), or "" if there are none.
func (b *Builder) argsOf(e *tracefile.Event, prev string) string {
	if len(e.Args) == 0 {
		return prev
	}
	b.args = b.args[:0]
	if prev != "" {
		b.args = append(b.args, prev[:len(prev)-1]...)
		b.args = append(b.args, ',')
	} else {
		b.args = append(b.args, '{')
	}
	for i, a := range e.Args {
		if i > 0 {
			b.args = append(b.args, ',')
		}
		b.args = append(b.args, '"')
		b.args = append(b.args, a.Key.Raw...)
		b.args = append(b.args, '"', ':')
		b.args = append(b.args, bytes.TrimSpace(a.Value)...)
	}
	b.args = append(b.args, '}')
	return b.arena.string(b.args)
}

// endMatches reports whether the E event e ends the open B n, as
// trace_processor matches them: by name and category, where the E has
// them.
func endMatches(n *node, e *tracefile.Event, b *Builder) bool {
	if len(e.Name.Raw) > 0 && n.row.Name != b.intern(e.Name) {
		return false
	}
	return len(e.Cat.Raw) == 0 || n.row.Category == b.intern(e.Cat)
}

// end ends the open slice n at ts, with the args of its end event e.
func (b *Builder) end(n *node, ts int64, e *tracefile.Event) {
	if ts < n.row.TS {
		ts = n.row.TS
	}
	n.end = ts
	n.row.Dur = ts - n.row.TS
	n.args = b.argsOf(e, n.args)
}

// place puts the completed slice n on t and writes what can be written.
// begun says n's start was already seen (a B).
func (b *Builder) place(t *track, n *node, begun bool) error {
	if !begun {
		t.seeStart(n.row.TS)
	}
	if !n.clean {
		// A clean B encloses no root written but those written in it
		// (see anchorOf).
		b.Report.Unsure += t.enclosesWritten(n)
	}
	b.wait(t)
	if in := t.place(n); in != nil && (in.row.TS != n.row.TS || in.end != n.end) {
		// A parent came before its child. (Two slices of the same
		// extent, two instants at one time among them, nest the later
		// in the earlier, whatever the order of the file.)
		t.parents = true
	}
	b.pending++
	if k := t.safe(); k > 0 {
		if err := b.emit(t, k); err != nil {
			return err
		}
	}
	limit := b.MaxPending
	if limit <= 0 {
		limit = DefaultMaxPending
	}
	b.Report.MaxPending = limit
	if b.pending > limit {
		return b.writeOldest(limit / 2)
	}
	return nil
}

// An oldRoot is a root waiting, for writeOldest.
type oldRoot struct {
	end int64
	n   int
}

// writeOldest writes the roots that ended first, over all tracks, until
// at most keep slices wait: those least likely to be enclosed by a slice
// still to come (a slice in flight on a thread ended recently).
func (b *Builder) writeOldest(keep int) error {
	until := b.oldestEnd(keep)
	for _, t := range b.waiting {
		k := 0
		for k < len(t.roots) && t.roots[k].end <= until {
			k++
		}
		if err := b.emit(t, k); err != nil {
			return err
		}
	}
	return nil
}

// oldestEnd returns the end before which every root is written for at
// most keep slices to wait: taking the roots by end, that of the first
// after which at most keep wait.
func (b *Builder) oldestEnd(keep int) int64 {
	left, until := b.pending, int64(math.MinInt64)
	if left <= keep {
		return until
	}
	// A track's roots, sorted by start, are almost always sorted by
	// end too (they do not nest): then a merge of the tracks' lists
	// finds it, reading about half of the roots, where a sort of them
	// all took a thirtieth of an export.
	heads := b.heads[:0]
	for i, t := range b.waiting {
		for k := 1; k < len(t.roots); k++ {
			if t.roots[k].end < t.roots[k-1].end {
				return b.oldestEndSorted(keep)
			}
		}
		if len(t.roots) > 0 {
			heads = append(heads, rootHead{t.roots[0].end, i, 0})
		}
	}
	h := rootHeap(heads)
	heap.Init(&h)
	for len(h) > 0 && left > keep {
		top := &h[0]
		roots := b.waiting[top.track].roots
		left -= roots[top.i].size
		until = top.end
		if top.i++; top.i < len(roots) {
			top.end = roots[top.i].end
			heap.Fix(&h, 0)
		} else {
			heap.Pop(&h)
		}
	}
	b.heads = h[:0]
	return until
}

// oldestEndSorted is oldestEnd with a sort of every root.
func (b *Builder) oldestEndSorted(keep int) int64 {
	roots := b.oldest[:0]
	for _, t := range b.waiting {
		for _, r := range t.roots {
			roots = append(roots, oldRoot{r.end, r.size})
		}
	}
	slices.SortFunc(roots, func(x, y oldRoot) int { return cmp.Compare(x.end, y.end) })
	b.oldest = roots
	left, until := b.pending, int64(math.MinInt64)
	for _, r := range roots {
		if left <= keep {
			break
		}
		left -= r.n
		until = r.end
	}
	return until
}

// A rootHead is the next root of a track in oldestEnd's merge: the
// track's index in Builder.waiting, and the root's in its roots.
type rootHead struct {
	end      int64
	track, i int
}

// rootHeap is a heap of rootHeads, by end.
type rootHeap []rootHead

func (h rootHeap) Len() int           { return len(h) }
func (h rootHeap) Less(i, j int) bool { return h[i].end < h[j].end }
func (h rootHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *rootHeap) Push(x any)        { *h = append(*h, x.(rootHead)) }
func (h *rootHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// emit writes the first k roots of t and their subtrees.
func (b *Builder) emit(t *track, k int) error {
	for _, r := range t.roots[:k] {
		if p := t.points; len(p) > 0 && p[0].ts <= r.end {
			// bindFlows binds nothing when every flow event waiting
			// comes after r's end (the points are sorted by ts): the
			// common case, and a search per root cost a twentieth of an
			// export.
			if err := b.bindFlows(t, r); err != nil {
				return err
			}
		}
		anchor, depth := t.anchorOf(r)
		t.stale, t.staled = staleTop(r), r.end
		var parent *int64
		if anchor != nil {
			anchor.anchored = true
			if t.lastTop == nil {
				t.lastTop = map[int64]sliceRef{}
			}
			t.lastTop[anchor.row.ID] = t.stale
			parent = b.arena.int64Ptr(anchor.row.ID)
		}
		if t.thread {
			b.remember(t, r)
		}
		start, end := r.row.TS, r.end // r is reused once written
		n, err := b.write(t, r, depth, parent)
		b.pending -= n
		t.written(start, end, n)
		if err != nil {
			return err
		}
	}
	if k > 0 {
		t.path = nil // its nodes are reused
	}
	clear(t.roots[:k])
	t.roots = t.roots[k:]
	return nil
}

// write writes n, of track t, and its subtree at depth, and returns how
// many slices it wrote. Their nodes are then reused: a row's pointers
// point into the arena, not into them, as a Sink may keep a copy of the
// row.
func (b *Builder) write(t *track, n *node, depth int32, parent *int64) (int, error) {
	if n.anchored {
		delete(t.lastTop, n.row.ID) // its flow events are bound: see bindFlows
	}
	if depth >= maxDepth {
		// trace_processor keeps 512 levels and drops the slices below
		// (slice_max_depth_exceeded).
		return b.drop(n), nil
	}
	n.row.Depth, n.row.ParentID = depth, parent
	if n.args != "" {
		n.row.Args = b.arena.stringPtr(n.args)
	}
	if err := b.sink.Slice(&n.row); err != nil {
		return 0, err
	}
	b.Report.Slices++
	count := 1
	if len(n.children) > 0 {
		id := b.arena.int64Ptr(n.row.ID)
		for _, c := range n.children {
			k, err := b.write(t, c, depth+1, id)
			count += k
			if err != nil {
				return count, err
			}
		}
	}
	b.nodes.put(n)
	return count, nil
}

// drop gives back the nodes of n's subtree unwritten, counting them in
// Report.TooDeep, and returns how many there were.
func (b *Builder) drop(n *node) int {
	count := 1
	for _, c := range n.children {
		count += b.drop(c)
	}
	b.Report.TooDeep += 1
	b.nodes.put(n)
	return count
}

// EndGroup writes every slice still waiting (B events never ended get
// dur -1, as in trace_processor) and the flows between them.
func (b *Builder) EndGroup() error {
	b.ending = true
	defer func() {
		b.ending = false
		b.forget()
	}()
	for _, t := range b.waiting {
		if t.asyncTrack {
			if err := b.replayAsync(t); err != nil {
				return err
			}
		}
	}
	for _, t := range b.waiting {
		for _, n := range t.open {
			if !n.clean {
				b.Report.Unsure += t.enclosesWritten(n)
			}
			t.place(n)
			b.pending++
		}
		t.open = nil
	}
	for _, t := range b.waiting {
		if err := b.emit(t, len(t.roots)); err != nil {
			return err
		}
		if t.late {
			b.Report.Late = append(b.Report.Late, t.id)
			t.late = false
		}
		// After the last slice, Perfetto's stack still holds it (an X's
		// slices), or nothing (a B/E pair's, popped by its E).
		for _, p := range t.points {
			var err error
			if p.next || t.stale.id == 0 {
				err = b.unbound(p)
			} else {
				err = b.bindSlice(p, t.stale)
			}
			if err != nil {
				return err
			}
		}
		t.points, t.nexts, t.stale, t.lastTop = nil, 0, sliceRef{}, nil
		t.listed = false
	}
	b.waiting = b.waiting[:0]
	for _, c := range b.flows {
		if err := b.flushChain(c); err != nil {
			return err
		}
	}
	clear(b.flows)
	b.writtenFlows = 0
	return nil
}

// wait lists t among the tracks with something waiting.
func (b *Builder) wait(t *track) {
	if !t.listed {
		t.listed = true
		b.waiting = append(b.waiting, t)
	}
}

// Close ends the last group and writes the tracks, threads and
// processes.
func (b *Builder) Close() error {
	if err := b.EndGroup(); err != nil {
		return err
	}
	if err := b.endBinds(); err != nil {
		return err
	}
	// trace_processor makes a thread of each process's own pid, its main
	// thread, whether or not an event names it.
	for _, p := range b.procList {
		k := threadKey{p.row.Upid, p.row.Pid}
		if _, ok := b.threads[k]; !ok {
			b.nextUtid++
			t := &thread{row: Thread{Utid: b.nextUtid, Tid: p.row.Pid, Upid: p.row.Upid}, track: -1}
			b.threads[k] = t
			b.thrList = append(b.thrList, t)
		}
	}
	for _, t := range b.thrList {
		if t.track >= 0 {
			b.trackRows[t.track].Name = t.row.Name
		}
	}
	for i := range b.trackRows {
		if err := b.sink.Track(&b.trackRows[i]); err != nil {
			return err
		}
	}
	for _, t := range b.thrList {
		if err := b.sink.Thread(&t.row); err != nil {
			return err
		}
	}
	for _, p := range b.procList {
		if err := b.sink.Process(&p.row); err != nil {
			return err
		}
	}
	return nil
}
