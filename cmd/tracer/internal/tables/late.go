package tables

import (
	"math"
	"slices"
	"sort"
)

// Flow events that come late.
//
// A flow event binds to the slice on top of its thread's stack at its
// time (see bindFlows), which the Builder finds when it writes the root
// that holds that time. A file may write a flow event after that: a
// Chromium trace writes its flow events in a part of their own, a second
// or more after the slices of their time (73,482 of the 73,542 of a 48 MB
// startup trace). Such a flow event bound to whatever root was written
// next, as if it came between the two.
//
// So a thread's track remembers the slices it wrote, each root's tree as
// the forest held it (40 bytes a slice and 4 for its place among its
// parent's children), and a flow event whose time is before the end of a
// root written binds as bindFlows would have bound it, had it come in
// time: in the root that holds its time, to the slice on top of the
// stack; between two roots, to what the one before left on top, or to
// none; an f that binds to the next slice, to the first that begins
// after it. A root written inside B events still open (Builder.InOpen)
// is remembered as a root until its B is written, which then takes it
// as a child; between such roots the B on top binds (see gapTop). Where
// the written slices cannot tell (a B still open, not clean, begun
// since the root before its time began; a track whose roots were written
// out of order, or whose slices are nested again; a time the track has
// forgotten: past histMax slices remembered, every track forgets the
// older half of its roots), it binds as before, and Report.LateFlows
// counts it, for a warning.

// histMax is the most slices the tracks remember, in all (a var for
// tests).
var histMax = 1 << 18

// A histSlice is a slice written, as a late flow event may need it.
type histSlice struct {
	start, end, id int64
	kids           int32 // its children: histKids[kids : kids+nkids], indices in hist
	nkids          int32
	be             bool // a B/E pair, which its E pops off the stack
}

// ref returns the slice h remembers.
func (h *histSlice) ref() sliceRef { return sliceRef{h.id, h.start} }

// remember adds the tree of r, about to be written, to the history of
// its track, a thread's. The roots written in r while it was open (a
// clean B: see anchorOf), the last ones remembered, become its first
// children there.
func (b *Builder) remember(t *track, r *node) {
	if b.ending {
		return
	}
	n := len(t.histRoots)
	if r.clean {
		for n > 0 && t.hist[t.histRoots[n-1]].start > r.row.TS {
			n--
		}
	}
	if !t.ordered || n > 0 && (r.row.TS < t.hist[t.histRoots[n-1]].start || r.end < t.hist[t.histRoots[n-1]].end) {
		// A track not in start order (the tracer package's, in end
		// order, writes a root once nothing later can enclose it: a
		// flow event in it came before it), or roots out of order
		// (recall needs them in order of start and of end): the roots
		// before are forgotten, and this one, and recall is unsure of
		// their times.
		b.histLen -= len(t.hist)
		t.hist, t.histKids, t.histRoots = t.hist[:0], t.histKids[:0], t.histRoots[:0]
		t.histForgot = true
		return
	}
	if !t.histListed {
		t.histListed = true
		b.histTracks = append(b.histTracks, t)
	}
	before := len(t.hist)
	var first []int32
	if n < len(t.histRoots) {
		first = slices.Clone(t.histRoots[n:])
	}
	t.histRoots = append(t.histRoots[:n], int32(len(t.hist)))
	t.hist = append(t.hist, histSlice{})
	t.histSlice(r, len(t.hist)-1, 0, first)
	if b.histLen += len(t.hist) - before; b.histLen > histMax {
		b.halve()
	}
}

// histSlice fills t.hist[i] with n, at depth, and adds its subtree.
// first are roots remembered already that were written in n while it
// was open (see remember), in start order: each goes under the slice of
// n's subtree it was written in.
func (t *track) histSlice(n *node, i int, depth int32, first []int32) {
	t.hist[i] = histSlice{start: n.row.TS, end: n.end, id: n.row.ID, be: n.be}
	if len(first)+len(n.children) == 0 || depth+1 >= maxDepth {
		return // trace_processor drops the slices below
	}
	if len(first) == 0 {
		// The usual case: no root was written in n while it was open.
		kids := len(t.histKids)
		t.hist[i].kids, t.hist[i].nkids = int32(kids), int32(len(n.children))
		t.histKids = append(t.histKids, make([]int32, len(n.children))...)
		for k, c := range n.children {
			j := len(t.hist)
			t.hist = append(t.hist, histSlice{})
			t.histKids[kids+k] = int32(j)
			t.histSlice(c, j, depth+1, nil)
		}
		return
	}
	// The kids in start order: the roots of first between the children,
	// and each child with those of first written in it.
	type kid struct {
		pre   int32 // a root of first, or -1
		c     *node
		first []int32
	}
	kids := make([]kid, 0, len(first)+len(n.children))
	j := 0
	for _, c := range n.children {
		for j < len(first) && t.hist[first[j]].start <= c.row.TS {
			kids = append(kids, kid{pre: first[j]})
			j++
		}
		// Those that begin in c were written in it, or in a B it holds.
		k := j
		for k < len(first) && t.hist[first[k]].start <= c.end {
			k++
		}
		kids = append(kids, kid{pre: -1, c: c, first: first[j:k]})
		j = k
	}
	for ; j < len(first); j++ {
		kids = append(kids, kid{pre: first[j]})
	}
	at := len(t.histKids)
	t.hist[i].kids, t.hist[i].nkids = int32(at), int32(len(kids))
	t.histKids = append(t.histKids, make([]int32, len(kids))...)
	for k, kd := range kids {
		if kd.pre >= 0 {
			t.histKids[at+k] = kd.pre
			continue
		}
		c := len(t.hist)
		t.hist = append(t.hist, histSlice{})
		t.histKids[at+k] = int32(c)
		t.histSlice(kd.c, c, depth+1, kd.first)
	}
}

// histFirst returns the first index in t.hist of the subtree of the
// slice at i: its own, unless its first children were remembered before
// it (see remember).
func (t *track) histFirst(i int32) int32 {
	for h := &t.hist[i]; h.nkids > 0 && t.histKids[h.kids] < i; h = &t.hist[i] {
		i = t.histKids[h.kids]
	}
	return i
}

// forget empties every track's history, at the end of a group.
func (b *Builder) forget() {
	for _, t := range b.histTracks {
		t.hist, t.histKids, t.histRoots = nil, nil, nil
		t.histListed = false
	}
	clear(b.histTracks)
	b.histTracks, b.histLen = b.histTracks[:0], 0
}

// halve makes every track forget the older half of its roots: histMax
// slices are remembered. A late flow event comes some way after the
// slices of its time in the file (Chromium's, a part of it later): most
// land in the newer half.
func (b *Builder) halve() {
	b.histLen = 0
	for _, t := range b.histTracks {
		t.halve()
		b.histLen += len(t.hist)
	}
	if b.histLen > histMax {
		// Roots too few to halve (one tree of histMax slices): forget
		// them all, or every root written would halve again.
		for _, t := range b.histTracks {
			t.hist, t.histKids, t.histRoots = t.hist[:0], t.histKids[:0], t.histRoots[:0]
			t.histForgot = true
		}
		b.histLen = 0
	}
}

// halve forgets the older half of t's roots and their slices.
func (t *track) halve() {
	k := len(t.histRoots) / 2
	if k == 0 {
		return
	}
	t.histForgot = true
	cut := t.histFirst(t.histRoots[k])
	kcut := int32(len(t.histKids))
	for i := range t.hist[cut:] {
		if h := &t.hist[int(cut)+i]; h.nkids > 0 {
			kcut = h.kids // the first of the rest's: kids are added in order
			break
		}
	}
	hist := make([]histSlice, len(t.hist)-int(cut))
	copy(hist, t.hist[cut:])
	for i := range hist {
		if hist[i].nkids > 0 {
			hist[i].kids -= kcut
		}
	}
	kids := make([]int32, len(t.histKids)-int(kcut))
	for i, c := range t.histKids[kcut:] {
		kids[i] = c - cut
	}
	roots := make([]int32, len(t.histRoots)-k)
	for i, r := range t.histRoots[k:] {
		roots[i] = r - cut
	}
	t.hist, t.histKids, t.histRoots = hist, kids, roots
}

// A recalled is what the history tells of a late flow event.
type recalled int

const (
	unsure  recalled = iota // it cannot tell: bind as in time, and count it
	bound                   // it binds to the slice recall returns
	unbound                 // it binds to no slice, as trace_processor
	inTime                  // it binds to a slice not written yet: as in time, surely
)

// recall returns the slice a flow event at ts, come after the roots of
// t around ts were written, binds to, as bindFlows would have bound it.
func (t *track) recall(ts int64, next bool) (sliceRef, recalled) {
	if t.late {
		return sliceRef{}, unsure
	}
	// The first root ts is not after, as bindFlows takes them: one
	// that ends after ts, or of no duration at ts (ends are in order).
	roots := t.histRoots
	i := sort.Search(len(roots), func(i int) bool { return t.hist[roots[i]].end >= ts })
	for i < len(roots) {
		if r := &t.hist[roots[i]]; r.end > ts || r.start == ts {
			break
		}
		i++
	}
	// A B still open, begun since the root before ts began, may be on
	// top at ts; if it is clean, the roots around ts were written in it,
	// and gapTop tells. For next, one that begins after ts may be the
	// next slice (see nextOf).
	since := int64(math.MinInt64)
	switch {
	case i < len(roots) && t.hist[roots[i]].start <= ts:
		since = t.hist[roots[i]].start
	case i > 0:
		since = t.hist[roots[i-1]].start
	}
	for _, o := range t.open {
		if o.row.TS > since && !next && o.row.TS <= ts && !o.clean {
			return sliceRef{}, unsure
		}
	}
	if i == len(roots) {
		if next {
			return sliceRef{}, inTime // the next slice to begin is still to come
		}
		return sliceRef{}, unsure
	}
	r := roots[i]
	if t.hist[r].start > ts {
		// Between two roots: on top, what the one before left there
		// (see staleTop); for next, the root after.
		if i == 0 && t.histForgot {
			return sliceRef{}, unsure // before the roots remembered: a root forgotten may hold it
		}
		if next {
			return t.nextOf(ts, roots[i])
		}
		prevEnd, stale := int64(math.MinInt64), sliceRef{}
		if i > 0 {
			prevEnd, stale = t.hist[roots[i-1]].end, t.histStale(roots[i-1])
		}
		switch top, ok := t.gapTop(ts, prevEnd, stale, afterAll); {
		case !ok:
			return sliceRef{}, unsure
		case top.id != 0:
			return top, bound
		}
		return sliceRef{}, unbound
	}
	if next {
		if n := t.histNext(r, ts); n >= 0 {
			return t.nextOf(ts, n)
		}
		if i+1 < len(roots) {
			if n := roots[i+1]; t.hist[n].start > ts {
				return t.nextOf(ts, n)
			}
			return sliceRef{}, unsure
		}
		return sliceRef{}, inTime
	}
	// topAt, on the history.
	n := r
	for {
		h := &t.hist[n]
		kids := t.histKids[h.kids : h.kids+h.nkids]
		k := sort.Search(len(kids), func(k int) bool { return t.hist[kids[k]].start > ts })
		if k == 0 {
			return h.ref(), bound
		}
		c := kids[k-1]
		if x := &t.hist[c]; x.be && (x.end < ts || x.end == ts && x.end > x.start) {
			// Popped (see node.popped): a flow event that comes once
			// the slice is written came after its E.
			return h.ref(), bound
		}
		n = c
	}
}

// histStale is staleTop, on the history of the root at r.
func (t *track) histStale(r int32) sliceRef {
	if t.hist[r].be {
		return sliceRef{}
	}
	n := r
	for t.hist[n].nkids > 0 {
		h := &t.hist[n]
		c := t.histKids[h.kids+h.nkids-1]
		if t.hist[c].be {
			break
		}
		n = c
	}
	return t.hist[n].ref()
}

// histNext is nextAfter, on the history of the root at r: the index of
// the first slice of its subtree, in start order, that begins after ts,
// or -1.
func (t *track) histNext(r int32, ts int64) int32 {
	h := &t.hist[r]
	if h.start > ts {
		return r
	}
	for _, c := range t.histKids[h.kids : h.kids+h.nkids] {
		if x := &t.hist[c]; x.end < ts && x.start <= ts {
			continue
		}
		if n := t.histNext(c, ts); n >= 0 {
			return n
		}
	}
	return -1
}

// nextOf binds a flow event at ts to the next slice to begin: the one
// remembered at n, unless a slice not written yet (a B still open, or a
// slice waiting) begins after ts and before it: then in time, as the
// slices are written (see anchorOf).
func (t *track) nextOf(ts int64, n int32) (sliceRef, recalled) {
	start := t.hist[n].start
	if t.nextOpen(ts, start, afterAll) != nil || t.waitingAfter(ts) < start {
		return sliceRef{}, inTime
	}
	return t.hist[n].ref(), bound
}

// waitingAfter returns the start of the first slice waiting that begins
// after ts, or math.MaxInt64.
func (t *track) waitingAfter(ts int64) int64 {
	first := int64(math.MaxInt64)
	i := sort.Search(len(t.roots), func(i int) bool { return t.roots[i].row.TS > ts })
	if i < len(t.roots) {
		first = t.roots[i].row.TS
	}
	if i > 0 {
		if n := nextAfter(t.roots[i-1], ts, afterAll); n != nil {
			first = min(first, n.row.TS)
		}
	}
	return first
}
