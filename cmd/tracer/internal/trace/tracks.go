package trace

// Nesting on a track.
//
// The viewers nest the slices of a thread (X events, and B/E pairs) by
// time: a slice that begins inside another must end inside it, or
// Perfetto moves it to an overflow track and chrome://tracing draws it
// wrongly. Checking this, and computing self time (a slice's duration
// less its direct children's) and busy time (the union of a track's
// slices), needs the slices of a track in some order. The tracer package
// writes an X event when its span ends, so a track's slices come in order
// of their ends, children before their parent; other producers write
// them in order of their starts, parents first. A track keeps a stack of
// the slices that may still matter, sorted by start, which serves both:
//
//   - a slice collapses the slices above it on the stack that it
//     contains: they arrived before it, they are its direct children
//     (their own children were collapsed into them), and no later slice
//     can need them apart from it;
//   - a slice that begins inside a slice on the stack is that slice's
//     child; slices between them on the stack ended before it began, and
//     are dropped: in start order, nothing can need them again.
//
// Either way the stack holds, per track, the chain of slices around the
// latest one plus, in end order, the top-level slices not yet enclosed by
// a later one. That last set can grow with the file (a goroutine whose
// whole life is one span holds every span of its life until it ends), so
// past maxStack entries the oldest are folded into one summary entry
// that keeps their extent and total duration: a later slice that contains
// them all still gets its self and busy time right; one that begins among
// them is not checked for overlap with them. A track whose slices come in
// neither order is checked against the stack as it stands: no overlap is
// made up, but some can go unreported.

// maxStack is the most slices a track keeps apart; see above.
const maxStack = 4096

// A slice is a completed slice on a track's stack.
type slice struct {
	start, end int64
	maxEnd     int64 // the latest end at or below this entry
	sum        int64 // the duration it stands for: end-start, or a fold's total
	name       int32 // index in Analyzer.names, or -1 for a fold
	line       int32
}

// An openSpan is a B event waiting for its E.
type openSpan struct {
	ts   int64
	name int32
	line int32
}

// A pendingFlow is a flow event not yet known to be inside a slice: the
// slice around it may come later in the file (an X is written when it
// ends).
type pendingFlow struct {
	ts   int64
	line int32
	next bool // an f without "bp":"e", which binds to the next slice too
}

// A track is the state kept per thread (pid, tid).
type track struct {
	pid, tid Num // as first seen, for reports
	name     string
	stack    []slice
	open     []openSpan
	pending  []pendingFlow
	busy     int64
	slices   int64
	last     int64 // latest end
}

// add records the completed slice [s, e) named name (an index in
// a.names) on t, found at line, and returns a problem, if any.
func (a *Analyzer) add(t *track, s, e int64, name int32, line int) {
	dur := e - s
	if t.slices == 0 || e > t.last {
		t.last = e
	}
	t.slices++
	st := t.stack
	var child int64
	// Children that came first.
	for len(st) > 0 && st[len(st)-1].start >= s && st[len(st)-1].end <= e {
		child += st[len(st)-1].sum
		st = st[:len(st)-1]
	}
	// The innermost slice still open at s, if any, skipping slices that
	// ended before s.
	j := len(st) - 1
	for j >= 0 && st[j].end <= s && st[j].maxEnd > s {
		j--
	}
	inside := false
	if j >= 0 && st[j].end > s {
		p := &st[j]
		switch {
		case p.name < 0:
			// Among folded slices: not checked.
		case p.start <= s && e <= p.end:
			// p contains [s, e): a child, in start order. The slices
			// above p ended before s: p's children, already counted.
			inside = true
			a.subSelf(p.name, dur)
			st = st[:j+1]
		case p.start < s:
			// p began before s and ends inside (s, e).
			a.overlap(t, line, name, s, e, p)
		case p.start < e && p.end > e:
			// p begins inside [s, e) and ends after it.
			a.overlap(t, line, name, s, e, p)
		}
	}
	a.addSelf(name, dur-child)
	if !inside {
		// Top-level so far. A later slice around it (or the E of an
		// open B) collapses it and adds only its own extra time.
		t.busy += dur - child
	}
	maxEnd := e
	if len(st) > 0 {
		maxEnd = max(maxEnd, st[len(st)-1].maxEnd)
	}
	st = append(st, slice{start: s, end: e, maxEnd: maxEnd, sum: dur, name: name, line: int32(line)})
	if len(st) > maxStack {
		st = fold(st)
	}
	t.stack = st
	a.resolveFlows(t, s, e)
}

// fold folds the older half of st into one entry.
func fold(st []slice) []slice {
	n := len(st) / 2
	f := slice{start: st[0].start, end: st[0].end, maxEnd: st[n-1].maxEnd, name: -1}
	for _, x := range st[:n] {
		f.end = max(f.end, x.end)
		f.sum += x.sum
	}
	st[0] = f
	copy(st[1:], st[n:])
	return st[:len(st)-n+1]
}

// encloses reports whether a slice on t's stack, or an open B, covers ts.
func (t *track) encloses(ts int64) bool {
	for _, o := range t.open {
		if o.ts <= ts {
			return true
		}
	}
	for j := len(t.stack) - 1; j >= 0 && t.stack[j].maxEnd >= ts; j-- {
		if x := t.stack[j]; x.start <= ts && ts <= x.end {
			return true
		}
	}
	return false
}

// resolveFlows drops the pending flows that the slice [s, e] binds.
func (a *Analyzer) resolveFlows(t *track, s, e int64) {
	if len(t.pending) == 0 {
		return
	}
	kept := t.pending[:0]
	for _, f := range t.pending {
		if !(s <= f.ts && f.ts <= e || f.next && s >= f.ts) {
			kept = append(kept, f)
		}
	}
	t.pending = kept
}
