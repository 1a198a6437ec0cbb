package trace

import (
	"math"
	"slices"
	"sort"

	"github.com/gotracer/tracer/cmd/tracer/internal/chunk"
	"github.com/gotracer/tracer/internal/tracefile"
)

// Nesting on a track.
//
// The viewers nest the slices of a thread (X events, and B/E pairs) by
// time. Perfetto sorts a thread's slices by start, longer ones first at
// one start (a B counts as zero long there), file order last, and nests
// each slice in the latest one still open: one that ends after it begins
// (slices are closed on the left, open on the right, except that two of
// zero duration at one time nest). A slice that ends after the slice it
// begins in goes to an overflow track (an X) or is cut at its end (a B
// whose E comes too late, "misplaced_end_event"), and one deeper than
// 512 levels is dropped. Self time (a slice's duration less its direct
// children's) and busy time (the union of a track's top-level slices)
// follow from that tree, which the file does not hold in order: the
// tracer package writes an X event when its span ends, so a track's
// slices come children first; other producers write them parents first,
// or in no order at all.
//
// A track so keeps the slices that may still matter as a tree in
// Perfetto's order (a preorder: each slice before its descendants, each
// with the index of its parent), and puts each new slice where the sort
// would: after the slices that sort before it, inside the latest of them
// that contains it, around the following ones it contains, which become
// its children. Self and busy time are adjusted as the tree changes, so
// they are right at any point, whatever the order of the file, as far as
// the tree keeps the slices apart (below).
//
// The tree can grow with the file: a goroutine whose whole life is one
// span holds every span of its life until it ends. Past maxStack
// entries, what lies below the top slices of finished subtrees is
// dropped (their sums hold it). The top slices themselves (in a file in
// end order, the children of a span that has not ended yet) are kept
// apart up to maxTop per track and maxStacked in all: past that, all but
// the newest keepNewest are folded into one summary entry per parent,
// which keeps their extent and total duration. A later slice that
// contains a summary still gets its self and busy time right; one that
// begins inside a summary is nested in the summary's parent, and not
// checked for overlap with what was folded: a span that began among
// them would miss the time of those after its start.

// maxStack is how many slices a track keeps before it drops the slices
// below top ones.
const maxStack = 4096

// maxTop is the most slices a track keeps apart (64 bytes each), and
// maxStacked the most all tracks keep apart together (vars for tests).
var maxTop, maxStacked = 1 << 16, 1 << 18

// orderedAfter is how many slices of a track in end order come before
// its trees are summed up as they complete.
var orderedAfter int64 = 64 // a var for tests

// maxNesting is how many levels of nesting Perfetto keeps: it drops the
// slices below (slice_max_depth_exceeded).
const maxNesting = 512

// A slice is a completed slice in a track's tree.
type slice struct {
	start, end int64
	seq        int64 // its place in the file, for ties
	sum        int64 // the duration it stands for: end-start, or a fold's total
	kids       int64 // the durations of its direct children
	parent     int32 // index in the tree, or -1
	depth      int32
	height     int32 // levels below it, folded ones included
	name       int32 // index in Analyzer.names, or -1 for a fold
	below      int32 // the levels of the slices dropped below it: a set of depth.go, or 0
	// lineBE is its line, or ^line for a B/E pair, which counts as
	// lasting nothing in the order (one field: an entry is 64 bytes).
	lineBE int32
}

// lineBE returns the lineBE of a slice at line, a B/E pair if be.
func lineBE(line int, be bool) int32 {
	if be {
		return ^int32(line)
	}
	return int32(line)
}

// line returns the line of x's event.
func (x *slice) line() int32 {
	if x.lineBE < 0 {
		return ^x.lineBE
	}
	return x.lineBE
}

// be reports whether x is a B/E pair.
func (x *slice) be() bool { return x.lineBE < 0 }

// key returns x's length in Perfetto's order.
func (x *slice) key() int64 {
	if x.be() {
		return 0
	}
	return x.end - x.start
}

// before reports whether x sorts before y in Perfetto's order.
func (x *slice) before(y *slice) bool {
	if x.start != y.start {
		return x.start < y.start
	}
	if kx, ky := x.key(), y.key(); kx != ky {
		return kx > ky
	}
	return x.seq < y.seq
}

// holds reports whether a slice that sorts after x and begins at s,
// lasting zero if zero, begins inside x.
func (x *slice) holds(s int64, zero bool) bool {
	return s < x.end || s == x.end && zero && x.start == x.end
}

// An openSpan is a B event waiting for its E.
type openSpan struct {
	ts    int64
	name  int32
	line  int32
	seq   int64
	cut   bool // an E closed a B outside it: Perfetto ends it at cutAt
	cutAt int64
}

// A pendingFlow is a flow event not yet known to be inside a slice: the
// slice around it may come later in the file (an X is written when it
// ends).
type pendingFlow struct {
	ts   int64
	line int32
	next bool  // catapult binds it to the next slice to begin
	i    int32 // in Analyzer.flowEvs
}

// A track is the state kept per thread (pid, tid).
type track struct {
	pid, tid tracefile.Num // as first seen, for reports
	name     string
	stack    []slice
	open     []openSpan
	pending  []pendingFlow
	busy     int64
	slices   int64
	levels   int32                 // the deepest nesting seen, in levels
	deep     bool                  // nested past maxNesting levels: see Analyzer.Deep
	roots    int                   // stack[:roots] are top slices: see collapse
	deepLine int32                 // the first slice past maxNesting levels
	last     int64                 // latest end
	exact    bool                  // replayed at the end: see exact.go
	tied     bool                  // an E at the ts of a B before it, before the file's first X
	tiedAt   int64                 // the latest ts of such an E
	overlaps int                   // X events that overlap a slice without nesting
	cuts     []int64               // where B events were cut (see noteCut)
	tangled  bool                  // a slice began where B events were cut
	cutOpen  int                   // open B events cut (openSpan.cut)
	raw      chunk.Stack[rawSlice] // its slice events, if exact or kept
	keep     bool                  // kept: see keep.go
	local    map[int32]*NameStats  // the numbers of its slices, while kept
	// dropAt and mergeAt are the sizes of the tree past which bound
	// tries its folds again, after one that left the tree large.
	dropAt, mergeAt int
	openSorted      bool // the open B events are in the order of their ts
	staleHeights    bool // a slice was put under one no higher than it: see fixHeights
}

// add records the completed slice [s, e) named name (an index in
// a.names) on t, found at line: an X event (be false) or a B/E pair,
// whose B was the seq-th event of the file. It returns the end Perfetto
// gives the slice: e, or where a B/E pair is cut.
func (a *Analyzer) add(t *track, s, e int64, name int32, line int, be bool, seq int64) int64 {
	// A file written in end order (the tracer package's) needs no more
	// than the top slices of a track's tree once a slice ends after all
	// of them: no later slice can begin inside one below them without
	// overlapping it. A file is taken to be in end order until a slice
	// ends before one that came before it on its track; the first
	// slices of a track are kept whole, for a file in no order to show
	// it first.
	before := len(t.stack)
	if len(t.cuts) > 0 && slices.Contains(t.cuts, s) {
		t.tangled = true
	}
	if t.slices > 0 && e < t.last {
		a.unordered = true
	}
	if t.roots < len(t.stack) && !a.unordered && t.slices >= orderedAfter && e > t.last {
		t.stack = a.collapse(t)
	}
	if t.slices == 0 || e > t.last {
		t.last = e
	}
	t.slices++
	st := t.stack
	if n := len(st); t.roots == n && (n == 0 || st[n-1].end < s || st[n-1].end == s && st[n-1].start < s) {
		// The usual case, made short: after every slice of a tree of
		// top slices only, none of which it begins in or holds.
		st = append(st, slice{start: s, end: e, seq: seq, sum: e - s, name: name, lineBE: lineBE(line, be), parent: -1})
		a.addSelf(t, name, e-s)
		t.busy += e - s
		t.roots++
		t.levels = max(t.levels, 1)
		t.stack = a.bound(t, st, before)
		a.resolveFlows(t, s, e, be)
		return e
	}
	x := slice{start: s, end: e, seq: seq, sum: e - s, name: name, lineBE: lineBE(line, be), parent: -1}
	zero := s == e
	// Where the sort puts it.
	pos := len(st)
	for pos > 0 && x.before(&st[pos-1]) {
		pos--
	}
	// Its parent: the latest slice before it that it begins inside.
	p := int32(pos - 1)
	for p >= 0 && (st[p].name < 0 || !st[p].holds(s, zero)) {
		p = st[p].parent
	}
	if p >= 0 && e > st[p].end {
		q := &st[p]
		if !be {
			// Perfetto moves it to an overflow track, where it is a
			// top-level slice of its own; but it nests an X in a B
			// still open at its start, whenever the E comes: stats
			// replays such a track (see exact.go).
			t.tangled = t.tangled || q.be()
			a.overlap(t, line, name, s, e, q)
			a.addSelf(t, name, e-s)
			t.busy += e - s
			a.stacked += len(t.stack) - before // collapse may have dropped some
			a.resolveFlows(t, s, e, be)
			return e
		}
		a.problemV(line, KindNesting, "misplaced_end_event", "", "the E of %q comes at ts %s, after the end of %q [%s, %s] (line %d) that its B began in: Perfetto ends it there (misplaced_end_event)",
			a.Names[name].Name, us(e), a.Names[q.name].Name, us(q.start), us(q.end), q.line())
		e = q.end
		x.end, x.sum = e, e-s
		a.noteCut(t, e)
	}
	if p >= 0 {
		x.parent, x.depth = p, st[p].depth+1
	}
	// Its children: the following slices at its level that begin inside
	// it; their subtrees move one level down.
	level := p
	k := pos
	for k < len(st) {
		c := &st[k]
		if c.parent != level || !x.holds(c.start, c.start == c.end) {
			break
		}
		if c.end > e {
			t.tangled = t.tangled || be
			a.overlap(t, line, name, s, e, c)
			break
		}
		x.kids += c.sum
		c.parent = adopted
		k++
		for k < len(st) && st[k].depth > c.depth {
			k++
		}
	}
	if t.staleHeights {
		fixHeights(st[pos:k], pos)
	}
	for j := pos; j < k; j++ {
		st[j].depth++
		if st[j].parent == adopted {
			x.height = max(x.height, st[j].height+1)
		}
	}
	a.steps += int64(k - pos)
	a.addSelf(t, name, x.sum-x.kids)
	if p >= 0 {
		q := &st[p]
		if q.name >= 0 {
			a.subSelf(t, q.name, x.sum-x.kids)
		}
		q.kids += x.sum - x.kids
	} else {
		t.busy += x.sum - x.kids
	}
	if level := x.depth + x.height + 1; level > t.levels {
		if level > maxNesting && t.levels <= maxNesting {
			t.deepLine = x.line()
			a.wentDeep(t)
		}
		t.levels = level
	}
	if pos == len(st) {
		st = append(st, x) // the usual case: after all the others
	} else {
		st = append(st, slice{})
		copy(st[pos+1:], st[pos:])
		st[pos] = x
		for j := pos + 1; j < len(st); j++ {
			switch q := &st[j].parent; {
			case *q == adopted:
				*q = int32(pos)
			case *q >= int32(pos):
				*q++
			}
		}
	}
	// Its ancestors are as high as it makes them: marked stale rather
	// than raised now, as a chain of slices in start order, each a child
	// of the one before, would raise every ancestor at each slice, in
	// time quadratic in its depth. Heights are made right where they are
	// read: a subtree adopted, or slices dropped (see fixHeights).
	if x.parent >= 0 && st[x.parent].height <= x.height {
		t.staleHeights = true
	}
	// The prefix of top slices, as far as known.
	switch {
	case p >= 0:
		t.roots = min(t.roots, pos)
	case pos > t.roots:
	case k > pos:
		t.roots = pos + 1 // its children follow it
	default:
		t.roots++
	}
	t.stack = a.bound(t, st, before)
	a.resolveFlows(t, s, e, be)
	return e
}

// maxCuts is how many times of cut B events a track keeps.
const maxCuts = 16

// noteCut notes that B events of t were cut at ts (misplaced_end_event).
// Perfetto cuts them only when time moves past ts: a slice that begins
// at ts begins inside them, and is cut with them. Stats replays a track
// where that happens (see exact.go).
func (a *Analyzer) noteCut(t *track, ts int64) {
	if t.tangled || slices.Contains(t.cuts, ts) {
		return
	}
	for i := range t.stack {
		if t.stack[i].start == ts && t.stack[i].name >= 0 {
			t.tangled = true
			return
		}
	}
	for _, o := range t.open {
		if o.ts == ts {
			t.tangled = true
			return
		}
	}
	if len(t.cuts) == maxCuts {
		t.tangled = true
		return
	}
	t.cuts = append(t.cuts, ts)
}

// fixHeights makes the heights of the slices of st, which begins at
// index off of a track's tree and holds whole subtrees, right from their
// descendants' (a preorder holds a slice's descendants after it): a
// height is never too high, only stale (see add).
func fixHeights(st []slice, off int) {
	for j := len(st) - 1; j >= 0; j-- {
		if p := int(st[j].parent) - off; p >= 0 {
			st[p].height = max(st[p].height, st[j].height+1)
		}
	}
}

// collapse drops from t's tree every slice that is not a top one: their
// durations are in their top slices' kids and sums, their levels in
// their top slices' heights, and their depths in their top slices' sets
// (see depth.go).
func (a *Analyzer) collapse(t *track) []slice {
	st := t.stack
	if t.staleHeights {
		fixHeights(st, 0)
		t.staleHeights = false
	}
	out := t.roots
	top := t.roots - 1 // in a preorder, the top slice above the ones that follow it
	depths := a.Stats
	for i := t.roots; i < len(st); i++ {
		if st[i].parent < 0 {
			if depths && top >= 0 {
				a.give(&st[top])
			}
			st[out] = st[i]
			top = out
			out++
			continue
		}
		if depths {
			a.dropped(&st[i], st[i].depth-st[top].depth)
		}
	}
	if depths && top >= 0 {
		a.give(&st[top])
	}
	t.roots = out
	return st[:out]
}

// adopted marks the new children of a slice being put in a tree.
const adopted = math.MinInt32

// bound keeps t's tree st, which had before slices when add began,
// within the limits (see above), and returns it.
//
// A fold that cannot shrink the tree (a chain of nested slices, all
// ancestors of the newest) is not tried again until the tree has doubled:
// each fold costs the size of the tree, so that keeps their cost linear.
func (a *Analyzer) bound(t *track, st []slice, before int) []slice {
	if len(st) > max(maxStack, t.dropAt) && len(st)-t.roots > maxStack/2 {
		// Many slices that may not be top ones: drop those below.
		st = a.foldOlder(st, t.open, t.roots, len(st)-keepNewest, false)
		t.roots, t.staleHeights = topPrefix(st), false
		t.dropAt = 2 * len(st)
	}
	a.stacked += len(st) - before
	if len(st) > max(maxTop, t.mergeAt) || len(st) > max(maxStack, t.mergeAt) && a.stacked > maxStacked {
		n := len(st)
		st = a.foldOlder(st, t.open, 0, len(st)-keepNewest, true)
		t.roots, t.staleHeights = topPrefix(st), false
		a.stacked -= n - len(st)
		t.mergeAt = 2 * len(st)
	}
	return st
}

// opensBetween reports whether one of opens began in (from, to].
func opensBetween(opens []openSpan, from, to int64) bool {
	for _, o := range opens {
		if from < o.ts && o.ts <= to {
			return true
		}
	}
	return false
}

// topPrefix returns how many slices at the start of st are top ones.
func topPrefix(st []slice) int {
	for i := range st {
		if st[i].parent >= 0 {
			return i
		}
	}
	return len(st)
}

// keepNewest is how many of the newest slices a fold of top slices keeps
// apart.
const keepNewest = 256

// foldOlder drops the descendants of the finished subtrees of st[from:n]
// and, if merge, folds their top slices too; st[:from] are top slices. A
// summary never holds slices on both sides of the start of an open B
// (in opens): the slice its E makes will hold those after.
func (a *Analyzer) foldOlder(st []slice, opens []openSpan, from, n int, merge bool) []slice {
	if from >= n {
		return st
	}
	a.steps += int64(len(st))
	fixHeights(st, 0)                            // before descendants are dropped
	idx := slices.Grow(a.foldIdx[:0], n)[:n]     // new index of st[i], or -1
	chain := slices.Grow(a.foldChain[:0], n)[:n] // st[i] is around st[n]: it stays
	clear(chain)
	for p := st[n].parent; p >= 0; p = st[p].parent {
		chain[p] = true
	}
	for i := range from {
		idx[i] = int32(i) // a top slice: it stays where it is
	}
	out := st[:from] // never past the entry being read
	for i := from; i < n; i++ {
		c := st[i]
		switch {
		case chain[i]:
			if c.parent >= 0 {
				c.parent = idx[c.parent]
			}
			idx[i] = int32(len(out))
			out = append(out, c)
		case c.parent >= 0 && !chain[c.parent]:
			// Inside a folded subtree, whose sum holds it: its depth goes
			// to the entry kept above it (idx -2-k: out[k]).
			k := idx[c.parent]
			if k < 0 {
				k = -2 - k
			}
			a.dropBelow(&out[k], &st[i])
			idx[i] = -2 - k
		default:
			parent := c.parent
			if parent >= 0 {
				parent = idx[parent]
			}
			if !merge {
				c.parent = parent
				idx[i] = int32(len(out))
				out = append(out, c)
				continue
			}
			if last := len(out) - 1; last >= 0 && out[last].name < 0 && out[last].parent == parent && !opensBetween(opens, out[last].start, c.start) {
				f := &out[last]
				f.end = max(f.end, c.end)
				f.sum += c.sum
				f.height = max(f.height, c.height)
				a.dropBelow(f, &c)
				idx[i] = int32(last)
				continue
			}
			idx[i] = int32(len(out))
			out = append(out, slice{start: c.start, end: c.end, seq: c.seq, sum: c.sum,
				parent: parent, depth: c.depth, height: c.height, name: -1, lineBE: c.line()})
			a.dropBelow(&out[len(out)-1], &c)
		}
	}
	shift := int32(n - len(out))
	for i := n; i < len(st); i++ {
		c := st[i]
		if c.parent >= int32(n) {
			c.parent -= shift
		} else if c.parent >= 0 {
			c.parent = idx[c.parent]
		}
		out = append(out, c)
	}
	a.foldIdx, a.foldChain = idx, chain
	return out
}

// encloses reports whether a slice in t's tree, or an open B, covers ts
// as catapult finds slices (its ends included; for next, one that begins
// at or after it), and as Perfetto's stack surely holds one there (an X
// around it, or a B begun before it and not yet ended, or ended after
// it: Perfetto takes an E before the other events of its ts).
func (t *track) encloses(ts int64, next bool) (caught, bound bool) {
	for _, o := range t.open {
		if o.ts <= ts {
			return true, true
		}
		caught = caught || next
	}
	// The tree is in Perfetto's order, by start. The slices that begin
	// after ts hold it neither for Perfetto nor, but for the first of
	// them, for catapult (its times in milliseconds are rounded, never
	// out of order): they are skipped, not walked. They are thousands
	// where a file writes its flow events late, as Chromium's (73,482
	// of 73,542 after slices that begin later, by 1.4 s at the median),
	// and that walk took 60% of check's time.
	st := t.stack
	q := sort.Search(len(st), func(i int) bool { return st[i].start > ts })
	if q < len(st) && (next || catapultHolds(st[q].start, st[q].end, ts, st[q].be())) {
		caught = true
	}
	for j := q - 1; j >= 0; j-- {
		x := &st[j]
		if catapultHolds(x.start, x.end, ts, x.be()) || next && x.start >= ts {
			caught = true
		}
		if x.start <= ts && ts <= x.end && (!x.be() || ts < x.end) {
			return caught || next, true
		}
		if x.depth == 0 && x.start <= ts {
			break // top-level slices do not overlap: none before it reaches ts
		}
	}
	return caught, false
}

// catapultHolds reports whether catapult finds the time ts in the slice
// [s, e] (ns), an X or (be) a B/E pair: it holds times as float64
// milliseconds, a slice's end as its start plus its duration (an X's
// dur, or the E's time less the B's), so that a flow event at the very
// end of a slice may fall a rounding error outside it.
func catapultHolds(s, e, ts int64, be bool) bool {
	// The microseconds of the file as JavaScript parses them (a float64
	// of ns loses what a float64 of µs keeps past 2^53 ns), then ms.
	ms := func(ns int64) float64 { return (float64(ns/1000) + float64(ns%1000)/1000) / 1000 }
	start, t := ms(s), ms(ts)
	dur := ms(e - s)
	if be {
		dur = ms(e) - start
	}
	return start <= t && t <= start+dur
}

// resolveFlows marks the pending flows of t that the slice [s, e] binds,
// and drops those both viewers bind.
func (a *Analyzer) resolveFlows(t *track, s, e int64, be bool) {
	if len(t.pending) == 0 {
		return
	}
	kept := t.pending[:0]
	for _, p := range t.pending {
		f := &a.flowEvs[p.i]
		if catapultHolds(s, e, p.ts, be) || p.next && s >= p.ts {
			f.caught = true
		}
		if !be && s <= p.ts && p.ts <= e || be && s < p.ts && p.ts < e {
			f.bound = true
		}
		if !f.caught || !f.bound {
			kept = append(kept, p)
		}
	}
	t.pending = kept
}
