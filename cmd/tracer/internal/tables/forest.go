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
//     latest start, with no B open before it;
//   - at the end of the files of its process, every root;
//   - past Builder.MaxPending slices waiting over all tracks, the
//     oldest roots of the track that grew, which bounds memory: their
//     depth counts only the ancestors come so far, and Report.Unsure
//     counts them.
//
// Memory is thus bounded by MaxPending slices (about 200 bytes each),
// and a file's slices come out with trace_processor's depths as long as
// the slices under one top-level slice, on all tracks at once, fit in it.

// A node is a slice waiting for its depth.
type node struct {
	row      Slice
	end      int64 // math.MaxInt64 for a B never ended
	children []*node
}

// before reports whether a sorts before b: by start, the longer first.
func before(a, b *node) bool {
	return a.row.TS < b.row.TS || a.row.TS == b.row.TS && a.end > b.end
}

// contains reports whether p encloses c as trace_processor's stack
// nests them: c begins inside p (a slice beginning where p ends is not
// p's child) and ends in it.
func contains(p, c *node) bool {
	return p.row.TS <= c.row.TS && c.end <= p.end && c.row.TS < p.end
}

// enclosed reports whether a slice of list encloses n.
func enclosed(list []*node, n *node) bool {
	i := sort.Search(len(list), func(i int) bool { return before(n, list[i]) })
	return i > 0 && contains(list[i-1], n)
}

// insert adds n to the forest list, sorted by start, and returns it.
func insert(list []*node, n *node) []*node {
	i := sort.Search(len(list), func(i int) bool { return before(n, list[i]) })
	if i > 0 && contains(list[i-1], n) {
		p := list[i-1]
		p.children = insert(p.children, n)
		return list
	}
	j := i
	for j < len(list) && contains(n, list[j]) {
		j++
	}
	if j > i {
		n.children = append(n.children, list[i:j]...)
		list = slices.Delete(list, i, j)
	}
	return slices.Insert(list, i, n)
}

// size returns the number of slices in n's subtree.
func (n *node) size() int {
	s := 1
	for _, c := range n.children {
		s += c.size()
	}
	return s
}

// A track is a timeline of slices: a thread's, an async track, or the
// instants of a process or of the trace.
type track struct {
	id    int64
	roots []*node
	open  []*node // B events (thread) or b events (async) not yet ended

	ordered  bool  // every slice so far began at or after the one before
	xSeen    bool  // an X or an instant came, which may come before its parent
	parents  bool  // a slice came after one that encloses it: parents first
	maxStart int64 // latest start so far
	emitted  int64 // latest end of a root written out, MinInt64 before

	points []*flowPoint // flow events waiting for their slice
	listed bool         // in Builder.waiting
}

func newTrack(id int64) *track {
	return &track{id: id, ordered: true, maxStart: math.MinInt64, emitted: math.MinInt64}
}

// seeStart notes a slice (or B) beginning at ts, in file order.
func (t *track) seeStart(ts int64) {
	if ts < t.maxStart {
		t.ordered = false
	} else {
		t.maxStart = ts
	}
}

// safe returns how many roots at the front can be written: none unless
// the track has come in start order.
func (t *track) safe() int {
	if !t.ordered || t.xSeen && !t.parents {
		// X events in start order look like siblings in end order
		// until a parent comes after its child or before it.
		return 0
	}
	n := 0
	for n < len(t.roots) {
		r := t.roots[n]
		if r.end > t.maxStart {
			break
		}
		for _, b := range t.open {
			if b.row.TS <= r.row.TS {
				return n
			}
		}
		n++
	}
	return n
}
