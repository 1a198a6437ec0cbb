package trace

import (
	"cmp"
	"math"
	"slices"
)

// Tracks nested deeper than Perfetto keeps.
//
// Perfetto drops a slice that would be nested 512 levels deep, and the
// slices below it (slice_max_depth_exceeded). Which slices those are is
// known only once the slices around them are: in a file in end order
// (the tracer package's), the innermost slices of a deep recursion come
// first, long before the ones that make them too deep, and by then a
// track's tree has summed them up (see tracks.go). And an E whose B was
// dropped ends another B of its name, as Perfetto matches an E with the
// innermost open B of its name.
//
// So a track whose nesting went past 512 levels is read again, in a
// second Analyzer (Exact), which keeps the track's slice events as
// they are and, at the end, replays them as Perfetto's importer does:
// sorted by ts, an E first, then X events, the longer first, then the
// rest, in file order at ties; each through Perfetto's slice tracker
// (slice_tracker.cc: a stack per track, closed on the left and open on
// the right, an X that overlaps the slice it begins in moved to a track
// of its own, B events cut at the end of an X they outlive, an E ending
// the innermost open B of its name, nothing pushed past 512). It costs
// 40 bytes per slice event of such a track, and a second read of the
// file, only for a file that has one (unless its first reading kept the
// track: see keep.go); the first read may stop at the first event that
// makes a track deep (WentDeep), and a track found deep or tangled only
// further on is then replayed in a third.

// A TrackSet names tracks of an Analyzer, for another Analyzer of the
// same file.
type TrackSet map[trackKey]bool

// Deep returns the tracks nested deeper than Perfetto keeps so far, or
// nil: a slice past its 512 levels, or a B event open past them.
func (a *Analyzer) Deep() TrackSet {
	return a.tracksWhere(func(t *track) bool { return t.deep })
}

// WentDeep reports whether a track not replayed went deeper than
// Perfetto keeps: the first such event makes it true, so that a reader
// that replays such tracks (stats) can stop its first reading there and
// read the file again at once, rather than read it to its end twice.
func (a *Analyzer) WentDeep() bool { return a.deep }

func (a *Analyzer) wentDeep(t *track) { t.deep, a.deep = true, true }

// Tangled returns the tracks that only a replay follows exactly, or
// nil: those with an E at the ts of a B before it, before the file's
// first X, where Perfetto's sorter takes the E first after all (see
// Analyzer.end), those with X events moved to overflow tracks more
// than once, where a later slice may nest in one moved before, and
// those where a slice began where B events were cut (see noteCut).
func (a *Analyzer) Tangled() TrackSet {
	return a.tracksWhere(func(t *track) bool { return t.tied && a.SortsTiesAt(t.tiedAt) || t.overlaps > 1 || t.tangled })
}

func (a *Analyzer) tracksWhere(f func(*track) bool) TrackSet {
	var s TrackSet
	for k, t := range a.tracks {
		if f(t) {
			if s == nil {
				s = TrackSet{}
			}
			s[k] = true
		}
	}
	return s
}

// Union returns the tracks of s and of o.
func (s TrackSet) Union(o TrackSet) TrackSet {
	if s == nil {
		return o
	}
	for k := range o {
		s[k] = true
	}
	return s
}

// A rawSlice is a slice event of a track replayed at the end.
type rawSlice struct {
	ts, dur int64 // dur of an X; 0 for the others
	seq     int64
	name    int32
	flow    int32 // of a flow event, its index in Analyzer.flowEvs
	line    int32
	ph      byte // X (and instants), B or E; s, t or f
	named   bool // an E with a name, which ends only a B of that name
}

// record keeps a slice event of an exact track, or of a kept one (see
// keep.go); it reports whether t is exact, and so not followed as its
// events come.
func (a *Analyzer) record(t *track, ph byte, ts, dur int64, name int32, named bool) bool {
	if !t.exact && !t.keep {
		return false // the usual case, inlined
	}
	return a.recordRaw(t, rawSlice{ts: ts, dur: dur, seq: a.Events, line: a.line, name: name, ph: ph, named: named})
}

// recordRaw is record, for any event of a replay.
func (a *Analyzer) recordRaw(t *track, r rawSlice) bool {
	switch {
	case t.exact:
		t.raw.Push(r)
		return true
	case t.keep:
		a.keepEvent(t, r)
	}
	return false
}

// A simSlice is a slice in a replay: its end is -1 while it is open.
type simSlice struct {
	start, end int64
	line       int32
	name       int32
	parent     int32 // index in the replay's slices, or -1
	x          bool  // an X, whose end is known at its start
}

// FinishExact replays the slice events of the exact tracks (see above)
// and counts the slices Perfetto keeps; a B still open at the end is
// counted to end, as EndOpen does. It reports a track whose slices
// Perfetto drops for their depth (at the first), and returns how many it
// drops and how many B events were still open. Call it before EndOpen.
func (a *Analyzer) FinishExact(end int64) (dropped, open int) {
	a.stopKeeping()
	for _, t := range a.trackList {
		if !t.exact || t.raw.Len() == 0 {
			continue
		}
		d, o, line := a.replay(t, end)
		if d > 0 {
			a.problemV(int(line), KindDepth, "slice_max_depth_exceeded", "", "this slice and %d more on pid %s tid %s are nested deeper than the %d levels Perfetto keeps: it drops them (slice_max_depth_exceeded); chrome://tracing shows them", d-1, t.pid.Raw, t.tid.Raw, maxNesting)
		}
		dropped += d
		open += o
	}
	return dropped, open
}

// class orders the events of one ts as Perfetto's sorter does once the
// file has had an X (see Analyzer.end): an E first, then X events by
// duration, longest first, then the others (a B, an instant), in file
// order.
func (r *rawSlice) class() (int, int64) {
	switch r.ph {
	case 'E':
		return 0, 0
	case 'X':
		return 1, -r.dur
	}
	return 1, 0
}

// sortRaw sorts a track's events as Perfetto's sorter does, once every
// event of the file was added: by ts, and the events of one ts by class
// where it sorts them (see Analyzer.sorter), else in file order.
func (a *Analyzer) sortRaw(evs []rawSlice) {
	slices.SortFunc(evs, func(x, y rawSlice) int {
		return cmp.Or(cmp.Compare(x.ts, y.ts), cmp.Compare(x.seq, y.seq))
	})
	for i := 0; i < len(evs); {
		j := i
		for j < len(evs) && evs[j].ts == evs[i].ts {
			j++
		}
		if j-i > 1 && a.SortsTiesAt(evs[i].ts) {
			slices.SortStableFunc(evs[i:j], func(x, y rawSlice) int {
				cx, kx := x.class()
				cy, ky := y.class()
				return cmp.Or(cx-cy, cmp.Compare(kx, ky))
			})
		}
		i = j
	}
}

// replay replays t's events (see above) and returns how many slices
// Perfetto drops for their depth, the line of the first, and how many B
// events were still open at end.
func (a *Analyzer) replay(t *track, end int64) (dropped, open int, firstDropped int32) {
	evs := t.raw.Slice()
	a.sortRaw(evs)
	all := make([]simSlice, 0, len(evs)) // a slice per event at most
	// The thread's track's stack, then those of its overflow tracks:
	// indices in all.
	stacks := make([][]int32, 1)
	// Above ended[k], every slice of stacks[k] is open (a B): closeStack
	// starts there, as the loop over them would only pass them (a track
	// of B events nested 200,000 deep would otherwise cost 512 steps an
	// event). It may be above the highest that ended, never below.
	ended := []int{-1}
	// nested says that the ended slices of the thread's stack end no
	// earlier than those above them, as they do unless an E ended a B
	// below the top (a misplaced end); an overflow track holds X events
	// only, pushed where they fit, and is always so.
	nested := true
	// closeStack pops what ended before a slice at ts lasting dur (-1:
	// a B, or an E) begins from stacks[k], as MaybeCloseStack does, to
	// the letter: it pops the top of the stack where a slice below it
	// ended, and cuts every slice above one that ended with a B open
	// above it there, an X too. It reports an X that overlaps a slice it
	// begins in. On a nested stack it stops at the first slice that ends
	// after ts: none below it ends before, nor ends inside the X, so the
	// rest of the loop would change nothing (a track nested 512 deep
	// would otherwise cost 512 steps an event).
	closeStack := func(k int, ts, dur int64) (overlap bool) {
		stack := stacks[k]
		defer func() { stacks[k], ended[k] = stack, min(ended[k], len(stack)-1) }()
		pop := func() { stack = stack[:len(stack)-1] }
		top := min(ended[k], len(stack)-1)
		incomplete := top < len(stack)-1 // open slices above top
		for i := top; i >= 0; i-- {
			s := &all[stack[i]]
			if s.end < 0 {
				incomplete = true
				continue
			}
			if incomplete {
				if ts <= s.end {
					if k > 0 || nested {
						return false
					}
					continue
				}
				// A B left open inside a slice that ended: cut there
				// (misplaced_end_event), with all above it.
				if a.ReplayReports {
					inner := all[stack[len(stack)-1]]
					a.problemV(int(inner.line), KindNesting, "misplaced_end_event", "", "the B of %q is still open when %q (line %d) that it began in ends, in the order Perfetto's sorter takes the events: Perfetto ends it there (misplaced_end_event)",
						a.Names[inner.name].Name, a.Names[s.name].Name, s.line)
				}
				for j := len(stack) - 1; j > i; j-- {
					all[stack[j]].end = s.end
					pop()
				}
				pop()
				incomplete = false
				continue
			}
			if s.end < ts || s.end == ts && !(s.end == s.start && dur == 0) {
				pop()
				continue
			}
			if dur >= 0 && ts < s.end && ts+dur > s.end {
				return true
			}
			if s.end > ts && (k > 0 || nested) {
				return false
			}
		}
		return false
	}
	for i := range evs {
		ev := &evs[i]
		switch ev.ph {
		case 'X', 'B':
			dur := ev.dur
			if ev.ph == 'B' {
				dur = -1
			}
			// An X that overlaps a slice it begins in goes to the first
			// overflow track where it does not, or to a new one
			// (slice_spill_overlapping_complete_event).
			k := 0
			for closeStack(k, ev.ts, dur) {
				if k++; k == len(stacks) {
					stacks, ended = append(stacks, nil), append(ended, -1)
				}
			}
			stack := stacks[k]
			if len(stack) >= maxNesting {
				if dropped++; dropped == 1 {
					firstDropped = ev.line
				}
				continue
			}
			parent := int32(-1)
			if len(stack) > 0 {
				parent = stack[len(stack)-1]
			}
			e := int64(-1)
			if dur >= 0 {
				e = ev.ts + dur
			}
			all = append(all, simSlice{start: ev.ts, end: e, name: ev.name, parent: parent, x: dur >= 0, line: ev.line})
			if n := a.Names[ev.name]; int32(len(stack)) > n.MaxDepth {
				n.MaxDepth = int32(len(stack))
			}
			stacks[k] = append(stack, int32(len(all)-1))
			if dur >= 0 {
				ended[k] = len(stack)
			}
		case 's', 't', 'f':
			// Bound to the slice on top of the thread's stack, ended or
			// not (FlowTracker::Begin, Step, End); an f without "bp":"e"
			// waits for the next slice, without a word.
			if f := &a.flowEvs[ev.flow]; !f.next && len(stacks[0]) == 0 {
				f.unbound = true
			}
		case 'E':
			closeStack(0, ev.ts, -1)
			stack := stacks[0]
			for j := len(stack) - 1; j >= 0; j-- {
				s := &all[stack[j]]
				if s.end >= 0 || ev.named && s.name != ev.name {
					continue
				}
				s.end = max(ev.ts, s.start)
				if j == len(stack)-1 {
					stacks[0] = stack[:j]
					ended[0] = min(ended[0], j-1)
				} else {
					nested = false
					ended[0] = max(ended[0], j)
				}
				break
			}
		}
	}
	// The end of the file: a B left open inside a slice that ended is
	// cut there, as the next event would cut it; the others last to the
	// end (Perfetto leaves them open, with dur -1).
	cut := int64(math.MaxInt64)
	for _, i := range stacks[0] {
		s := &all[i]
		if s.end >= 0 {
			cut = min(cut, s.end)
		} else if cut < math.MaxInt64 {
			s.end = max(cut, s.start)
		}
	}
	for i := range all {
		if s := &all[i]; s.end < 0 {
			s.end = max(end, s.start)
			open++
		}
	}
	kids := make([]int64, len(all))
	for _, s := range all {
		if s.parent >= 0 {
			kids[s.parent] += s.end - s.start
		}
	}
	for i, s := range all {
		d := s.end - s.start
		a.count(t, s.name, d)
		a.addSelf(t, s.name, d-kids[i])
		if s.parent < 0 {
			t.busy += d
		}
		t.slices++
	}
	return dropped, open, firstDropped
}
