package tables

import (
	"math"
	"slices"
	"sort"
)

// Depth and parent.
//
// trace_processor sorts a trace by time and then nests the slices of
// each track with a stack: a slice is the child of the innermost slice
// open at its start. A file need not come in that order: the tracer
// package writes a span when it ends, so a slice's children come before
// it, and its depth is known only when its top-level ancestor has come.
// So a track keeps a forest of the slices not yet written, each root
// holding its subtree, sorted by start; a root and its subtree are
// written when no slice still to come can enclose the root:
//
//   - on a track whose slices have come in order of their starts (B/E
//     pairs, or X events written as they begin, which shows once a
//     parent comes before its child), a root that ended before the
//     latest start, with no B open before it, or inside the B events
//     open before it if each of them was clean when it began (see
//     anchorOf);
//   - at the end of the files of its process, every root;
//   - past Builder.MaxPending slices waiting over all tracks, the
//     roots that ended first, over all tracks, until half of them are
//     written, which bounds memory.
//
// A root written early is usually a true top-level slice: a request on
// a worker's goroutine, which nothing encloses. When a slice comes that
// encloses roots already written (a span around a goroutine's whole
// life, longer than MaxPending slices), their depth and parent were
// written short: a track remembers the extents of its written roots,
// coalesced to at most maxExtents, and Report.Unsure counts the slices
// of those a later slice encloses (at least those). Memory is thus
// bounded by MaxPending slices of about 200 bytes each, and a file's
// slices come out with trace_processor's depths whenever Unsure is 0.

// A node is a slice waiting for its depth. The fields the forest reads
// of a node placed long ago (end, size, and row's TS) come first, in
// one cache line: a node is 176 bytes, most of them cold by the time it
// is written.
type node struct {
	end      int64  // math.MaxInt64 for a B never ended
	size     int    // slices in its subtree, itself included
	be       bool   // a B/E (or b/e) pair, which its E pops off Perfetto's stack
	clean    bool   // a B that began on a stack of clean B events alone: see cleanStart
	anchored bool   // roots were written in it while it was open: see anchorOf
	inDepth  int32  // a clean B's depth, as the roots written in it were written
	tieBegin uint32 // flow events of its track read before its begin, or 0: see Ties
	tieEnd   uint32 // the same, before its E
	row      Slice
	args     string // row.Args, set when it is written
	children []*node
}

// popped reports whether the B/E pair n is off trace_processor's stack
// for the flow event seq at ts: after its E, or at it (at one ts, its
// sort takes the E events first in a file with X events), but for a
// pair of no duration (ended where it began), or if the E came after
// the flow event in a file with no X event before it, which it takes in
// file order (see Ties).
func (n *node) popped(ts int64, seq uint32) bool {
	return n.end < ts || n.end == ts && n.end > n.row.TS && n.tieEnd < seq
}

// endsBefore reports whether the flow event seq at the end of the root
// n binds as one after it (see bindFlows): at an X, which what it left
// on the stack still holds (staleTop), or at a B/E pair popped there;
// not at a slice of no duration, which it may enter.
func (n *node) endsBefore(ts int64, seq uint32) bool {
	if n.be {
		return n.popped(ts, seq)
	}
	return n.end > n.row.TS
}

// begun reports whether n is on trace_processor's stack, or was, for
// the flow event seq at ts: it began before ts, or at it, but for a
// slice that its sort takes in file order with the flow events of its
// ts (a B, an instant, an X of no duration) read after the flow event
// (see Ties).
func (n *node) begun(ts int64, seq uint32) bool {
	return n.row.TS < ts || n.row.TS == ts && n.tieBegin < seq
}

// before reports whether a sorts before b: by start, the longer first;
// at one start, of two with the same end, or one of no duration, the
// one trace_processor's sort takes first (see beginsFirst).
func before(a, b *node) bool {
	if a.row.TS != b.row.TS {
		return a.row.TS < b.row.TS
	}
	if a.end == b.end || byFileOrder(a, b) {
		return beginsFirst(a, b)
	}
	return a.end > b.end
}

// contains reports whether p encloses c as trace_processor's stack
// nests them: c begins inside p (a slice beginning where p ends is not
// p's child) and ends in it; at p's start, a slice of its end, or one
// of no duration, if p begins first in its sort (see beginsFirst): a
// slice of no duration that begins before p is off the stack when p
// begins.
func contains(p, c *node) bool {
	if p.row.TS == c.row.TS && (p.end == c.end || byFileOrder(p, c)) {
		return c.end <= p.end && beginsFirst(p, c)
	}
	return p.row.TS <= c.row.TS && c.end <= p.end && (c.row.TS < p.end || p.row.TS == p.end && c.row.TS == c.end)
}

// xDur reports whether n is an X event with a duration, which
// trace_processor's sort takes first at its ts, the longer first.
func xDur(n *node) bool { return !n.be && n.end > n.row.TS }

// byFileOrder reports whether, of a and b at one start, with different
// ends, trace_processor's sort takes the begins in file order: one has
// no duration, and neither is an X with a duration. (Else the longer
// begins first: an X with a duration before the rest, and two B events
// whose ends differ only if the first one's is later, as its E would
// cut the B in it.)
func byFileOrder(a, b *node) bool {
	return (a.end == a.row.TS || b.end == b.row.TS) && !xDur(a) && !xDur(b)
}

// beginsFirst reports whether trace_processor's sort takes a's begin
// before b's, of two at one ts with the same end (or see byFileOrder):
// an X with a duration before the rest, then in file order (a node's id
// is its place in the file: a B/E pair's, its B's).
func beginsFirst(a, b *node) bool {
	if ax, bx := xDur(a), xDur(b); ax != bx {
		return ax
	}
	return a.row.ID < b.row.ID
}

// search returns where n goes in list, sorted by start: the first node
// n sorts before. A hand-written search, with the end checked first: in
// a file written in end order (the tracer package's), a slice usually
// begins after every root of its track (its earlier sibling's), and
// sort.Search's closure call per probe cost a tenth of an export. When
// it does not, it is usually a parent that encloses the last few roots
// (its children): so the search gallops back from the end, where the
// nodes were placed last and are still in the cache, rather than
// bisecting the whole list, whose middle is cold.
func search(list []*node, n *node) int {
	hi := len(list)
	if hi == 0 || !before(n, list[hi-1]) {
		return hi
	}
	hi-- // n sorts before list[hi]
	lo := 0
	for step := 1; hi-step > 0; step *= 2 {
		if !before(n, list[hi-step]) {
			lo = hi - step + 1
			break
		}
		hi -= step
	}
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if before(n, list[m]) {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}

// insert adds n to the forest list, sorted by start, and returns it, and
// the slice of list, or of its subtrees, that n is put in (nil if n is a
// root of list). Sizes are kept right on the roots only, the ones read
// (a root and its subtree are written together).
func insert(list []*node, n *node) ([]*node, *node) {
	i := search(list, n)
	if i > 0 && contains(list[i-1], n) {
		p := list[i-1]
		var in *node
		if p.children, in = insert(p.children, n); in == nil {
			in = p
		}
		return list, in
	}
	if i > 0 {
		takeLater(list[i-1], n)
	}
	j := i
	for j < len(list) && contains(n, list[j]) {
		n.size += list[j].size
		j++
	}
	if j == i {
		return slices.Insert(list, i, n), nil
	}
	// n encloses list[i:j], which become its children: n takes their
	// place with one move of the tail, not a delete and an insert.
	n.children = append(n.children, list[i:j]...)
	list[i] = n
	k := copy(list[i+1:], list[j:])
	clear(list[i+1+k:])
	return list[:i+1+k], nil
}

// takeLater moves into n, about to be put after p at its start, the
// slices of no duration at that start that p holds but that
// trace_processor's sort takes after n's begin. Slices of no duration
// at one time nest, each in the one before (see contains), when they
// are placed; but a B between them in the sort, placed at its E, pops
// the earlier ones: the later are its.
func takeLater(p, n *node) {
	if p.row.TS != n.row.TS || p.end != p.row.TS || n.end == n.row.TS {
		return
	}
	for cur := p; len(cur.children) > 0; cur = cur.children[len(cur.children)-1] {
		k := slices.IndexFunc(cur.children, func(c *node) bool { return beginsFirst(n, c) })
		if k < 0 {
			continue
		}
		moved := cur.children[k:]
		for _, c := range moved {
			n.size += c.size
		}
		n.children = append(slices.Clone(moved), n.children...)
		clear(moved)
		cur.children = cur.children[:k]
		return
	}
}

// place adds n to t's forest and returns the slice it is put in, or nil
// if it is a root. A file in start order puts each slice in the one
// before it, or in one of its ancestors: so the path to the slice placed
// last is kept, and n is put under the deepest slice on it that encloses
// it without a search from the roots down, which in a chain of nested
// slices would cost time quadratic in its depth.
func (t *track) place(n *node) *node {
	path := t.path
	k := len(path) - 1
	for k >= 0 && !contains(path[k], n) {
		k--
	}
	if k < 0 {
		var in *node
		t.roots, in = insert(t.roots, n)
		if in != nil {
			t.rootOf(n).size += n.size
			t.path = nil
		} else {
			t.path = append(t.path[:0], n)
		}
		return in
	}
	p := path[k]
	var in *node
	if p.children, in = insert(p.children, n); in == nil {
		in = p
	}
	path[0].size += n.size
	if last := p.children[len(p.children)-1]; last == n {
		t.path = append(path[:k+1], n) // the usual case: n is p's last child
	} else {
		t.path = nil
	}
	return in
}

// rootOf returns the root whose subtree holds n.
func (t *track) rootOf(n *node) *node {
	i := search(t.roots, n)
	return t.roots[i-1]
}

// A track is a timeline of slices: a thread's, an async track, or the
// instants of a process or of the trace.
type track struct {
	id    int64
	roots []*node
	open  []*node // B events (thread) or b events (async) not yet ended

	ordered  bool     // every slice so far began at or after the one before
	xSeen    bool     // an X or an instant came, which may come before its parent
	parents  bool     // a slice came after one that encloses it: parents first
	maxStart int64    // latest start so far
	extents  []extent // of the roots written, oldest first: a window of extBuf
	extBuf   []extent
	maxWrite int64   // latest start of a root written, MinInt64 before
	maxEnd   int64   // latest end of a root written, MinInt64 before
	late     bool    // a slice came that may enclose, or be inside, a root written: see Report.Late
	anchored bool    // roots were written inside B events open (see anchorOf)
	path     []*node // from a root down to the slice placed last (see place)

	points    []*flowPoint // flow events waiting for their slice, by ts
	flowsRead uint32       // flow events read (see Ties)
	nexts     int          // of which bind to the next slice
	stale     sliceRef     // the slice on top of Perfetto's stack after the last root written, if any
	staled    int64        // the end of that root
	// By the id of a B written in while open (anchored), not written
	// yet itself: what the last root written in it left on top of the
	// stack (see staleTop). A map, not a field of every node: few
	// are.
	lastTop map[int64]sliceRef

	thread     bool        // a thread's track: flow events bind to its slices
	hist       []histSlice // the slices written, for flow events that come late (see late.go)
	histKids   []int32
	histRoots  []int32 // the roots' indices in hist
	histListed bool    // in Builder.histTracks
	histForgot bool    // roots before its history were forgotten (see halve, remember)

	asyncTrack bool        // an async track: its events are replayed at the end (see replayAsync)
	upid       *int64      // an async track's process, if id2.local
	asyncs     []asyncItem // its events so far
	listed     bool        // in Builder.waiting
}

func newTrack(id int64) *track {
	return &track{id: id, ordered: true, maxStart: math.MinInt64, maxWrite: math.MinInt64, maxEnd: math.MinInt64}
}

// seeStart notes a slice (or B) beginning at ts, in file order.
func (t *track) seeStart(ts int64) {
	if ts < t.maxStart {
		t.ordered = false
		if t.anchored {
			// Roots were written as children of the B events open,
			// which a slice out of order may enclose.
			t.late = true
		}
	} else {
		t.maxStart = ts
	}
}

// safe returns how many roots at the front can be written: none unless
// the track has come in start order.
func (t *track) safe() int {
	if !t.inOrder() {
		return 0
	}
	n := 0
	for n < len(t.roots) {
		r := t.roots[n]
		if r.end > t.maxStart || r.end == t.maxStart && r.row.TS == r.end {
			break // a slice to come may begin in it (of no duration, one at its time)
		}
		if k := t.openBefore(r.row.TS); k > 0 && !t.anchors(k, r.row.TS) {
			return n
		}
		n++
	}
	return n
}

// inOrder reports whether t's slices have come in order of their starts,
// as far as can be told: X events in start order look like siblings in
// end order until a parent comes after its child or before it.
func (t *track) inOrder() bool { return t.ordered && !(t.xSeen && !t.parents) }

// Roots written inside B events still open.
//
// A thread may open a B and end it only at the end of the trace, or
// never (Chromium's message loops: 70 of them in a startup trace): the
// slices in it are roots of the forest (a B is placed at its end), and
// waited for it to the end of the file, 83% of the slices of that trace.
// Perfetto gives a slice the parent and depth of its stack when it
// begins, so a root that begins inside B events open can be written as
// their child, if their depths are known: a B is clean when, at its
// start, the stack held the B events open and nothing else (every slice
// written or waiting had ended, and the B below it was clean), so that
// the outermost has depth 0 and each the depth of its place among them.
// A B that ends is placed, and written, as any slice; its children
// written already are not in its subtree, so what they left on top of
// the stack is kept (track.lastTop), for the flow events after them.

// cleanStart reports whether a B beginning at ts now is clean. Of the
// roots waiting, the last ends last: a root that ended after another
// began would hold it.
func (t *track) cleanStart(ts int64) bool {
	if !t.inOrder() || t.maxEnd >= ts {
		return false
	}
	if k := len(t.roots); k > 0 && t.roots[k-1].end >= ts {
		return false
	}
	// The B below it must have begun before it: a root it is written
	// as, its B must anchor it (see anchors).
	k := len(t.open)
	return k == 0 || t.open[k-1].clean && t.open[k-1].row.TS < ts
}

// openBefore returns how many of the B events open began at or before
// ts: those at the front, in start order (a search: a thread may hold
// thousands open, a recursion of LongSpans, and this runs for each root
// written and flow event bound). On a track out of order they may not
// be in order: see anchorOf.
func (t *track) openBefore(ts int64) int {
	return sort.Search(len(t.open), func(i int) bool { return t.open[i].row.TS > ts })
}

// anchors reports whether a slice beginning at ts, inside the first k B
// events open, can be written as a child of the kth: it is clean (so are
// those below it) and began before ts. (If the track is out of order
// since, it is nested again: see seeStart. Its slices are still written
// each one level below its parent.)
func (t *track) anchors(k int, ts int64) bool {
	a := t.open[k-1]
	return a.clean && a.row.TS < ts
}

// anchorOf returns the B open that the root r, about to be written, is
// written in, and r's depth there: the innermost B that began before r,
// if it anchors r (see anchors); nil and 0 if no B open began at or
// before r. A root that a B open may hold but does not anchor is
// written at depth 0, and its track nested again; so is a clean B whose
// children were written at the depth it began at, written at another
// (it ended after the B around it did: trace_processor keeps the depth
// it began at, the forest does not).
func (t *track) anchorOf(r *node) (*node, int32) {
	k := t.openBefore(r.row.TS)
	var a *node
	switch {
	case k == 0:
	case !t.anchors(k, r.row.TS):
		t.late = true
		k = 0
	default:
		t.anchored = true
		if !t.ordered {
			t.late = true // the B events open may not be in order
		}
		a = t.open[k-1]
	}
	if r.anchored && int32(k) != r.inDepth {
		// (At its depth, its parent is the B it began in: none other
		// that began before it can be open there.)
		t.late = true
	}
	return a, int32(k)
}

// gapTop returns the slice on top of the stack at ts, between the roots
// written: the innermost B open at ts if it began once the root before
// (which ended at prevEnd, leaving stale on top) had ended; else stale;
// else the innermost B open at ts; none (id 0) if none. ok is false if that B is
// not clean: the roots around ts were written short of it, and its
// track is nested again (see anchorOf).
func (t *track) gapTop(ts, prevEnd int64, stale sliceRef, seq uint32) (top sliceRef, ok bool) {
	var b *node
	k := t.openBefore(ts)
	for k > 0 && !t.open[k-1].begun(ts, seq) {
		k--
	}
	if k > 0 {
		b = t.open[k-1]
	}
	if w := t.endedAround(ts, seq); w != nil && (b == nil || w.row.TS > b.row.TS) {
		b = w
	}
	if b == nil {
		return stale, true
	}
	if stale.id != 0 && b.row.TS < prevEnd {
		return stale, true
	}
	if !b.clean {
		return stale, false
	}
	return refOf(b), true
}

// endedAround returns the innermost slice that holds ts, ended and not
// written yet, or nil: a B that roots were written in while it was
// open, or that holds one that they were (a late flow event in it,
// before or between those, binds as if it were still open). A slice
// waiting that holds a time before a root written holds such a B: roots
// are written in start order but for those. Roots waiting are sorted by
// start and do not overlap.
func (t *track) endedAround(ts int64, seq uint32) *node {
	var in *node
	list := t.roots
	for {
		i := sort.Search(len(list), func(i int) bool { return list[i].row.TS > ts })
		for i > 0 && !list[i-1].begun(ts, seq) {
			i--
		}
		if i == 0 {
			return in
		}
		n := list[i-1]
		if n.end < ts || n.be && n.popped(ts, seq) {
			return in
		}
		in = n
		list = n.children
	}
}

// nextOpen returns the first B open that began after ts (or at it,
// after the flow event seq: see node.begun) and before before,
// or nil: the next slice to begin after ts, before the root written
// next.
func (t *track) nextOpen(ts, before int64, seq uint32) *node {
	k := t.openBefore(ts)
	for k > 0 && !t.open[k-1].begun(ts, seq) {
		k--
	}
	if k < len(t.open) && t.open[k].row.TS < before {
		return t.open[k]
	}
	return nil
}

// maxExtents is the most extents of written roots a track keeps.
const maxExtents = 64

// An extent is the time covered by roots already written, and how many
// slices they held.
type extent struct {
	start, end int64
	n          int64
}

// written notes a root from start to end, holding n slices, written
// out.
func (t *track) written(start, end int64, n int) {
	t.maxWrite = max(t.maxWrite, start)
	t.maxEnd = max(t.maxEnd, end)
	if len(t.extents) == cap(t.extents) && len(t.extents) >= maxExtents {
		// Move them to the front of a buffer, once per maxExtents
		// roots written, rather than by one at each.
		if t.extBuf == nil {
			t.extBuf = make([]extent, 2*maxExtents+2)
		}
		t.extents = t.extBuf[:copy(t.extBuf, t.extents)]
	}
	t.extents = append(t.extents, extent{start, end, int64(n)})
	if len(t.extents) > maxExtents {
		// Coalesce the two oldest: a later slice must enclose both to
		// be counted, so Unsure stays a lower bound.
		a, b := t.extents[0], t.extents[1]
		t.extents[1] = extent{min(a.start, b.start), max(a.end, b.end), a.n + b.n}
		t.extents = t.extents[1:]
	}
}

// enclosesWritten returns how many slices already written n encloses,
// forgetting them so that they count once. It marks the track late if n
// may enclose a root written, or begin inside one.
func (t *track) enclosesWritten(n *node) int64 {
	if n.row.TS < t.maxEnd {
		t.late = true
	}
	if n.row.TS > t.maxWrite {
		return 0 // began after every written root: the common case
	}
	t.late = true
	var count int64
	keep := t.extents[:0]
	for _, e := range t.extents {
		if contains(n, &node{row: Slice{TS: e.start}, end: e.end}) {
			count += e.n
			continue
		}
		keep = append(keep, e)
	}
	t.extents = keep
	return count
}
