package trace

import "github.com/gotracer/tracer/cmd/tracer/internal/chunk"

// Tracks kept, to replay without reading the file again.
//
// A track is replayed (see exact.go) when its stream cannot follow what
// Perfetto makes of it, which is known only later: an E at the ts of a B
// before it, before the file's first X, is taken after that B unless an
// event further on makes Perfetto's sorter sort that ts (Tangled). The
// replay needs the track's slice events from its start, so stats and
// check used to read such a file again (webpack's traces are written
// so: a B and E at one ts, and an X at an early ts at the end).
//
// With Keep, an Analyzer keeps the slice events of every track from
// the file's start to its first X, beside following them as they come:
// at the first X it drops those of the tracks that are neither tied nor
// tangled (no later event can make them so by a tie), and keeps those
// of the others to the end. A track kept counts its slices in numbers of
// its own, added to Names when it is dropped from the keep or at
// ReplayKept: so a track replayed from what was kept counts only its
// replay. The events and the tracks kept are bounded (keepMax,
// keepTracksMax); past a bound every track is dropped from the keep, and
// a track Tangled further on is read again as before.

// keepMax is the most slice events an Analyzer keeps (40 bytes each),
// and keepTracksMax the most tracks (a few hundred bytes each, before
// their events: a file may have thousands of threads before its first
// X, tens of thousands, each with a few events).
var keepMax, keepTracksMax = 1 << 20, 4096

// newTrack notes that t, new, is kept if the Analyzer keeps tracks.
func (a *Analyzer) newTrack(t *track) {
	if !a.Keep || t.exact || a.sawX || a.keepOff {
		return
	}
	if a.keptTracks++; a.keptTracks > keepTracksMax {
		a.dropKeep()
		return
	}
	t.keep = true
}

// dropKeep drops every track from the keep, for good.
func (a *Analyzer) dropKeep() {
	a.keepOff = true
	for _, t := range a.trackList {
		a.unkeep(t)
	}
}

// keepEvent keeps r of t, a kept track.
func (a *Analyzer) keepEvent(t *track, r rawSlice) {
	t.raw.Push(r)
	if a.kept++; a.kept > keepMax {
		a.dropKeep()
	}
}

// firstX drops from the keep the tracks no later event can make
// replayed for a tie: called at the file's first X.
func (a *Analyzer) firstX() {
	if !a.Keep || a.keepOff {
		return
	}
	for _, t := range a.trackList {
		if !t.tied && !t.tangled {
			a.unkeep(t)
		}
	}
}

// unkeep drops t from the keep: its numbers go to Names.
func (a *Analyzer) unkeep(t *track) {
	if !t.keep {
		return
	}
	for name, n := range t.local {
		a.Names[name].merge(n)
	}
	a.kept -= t.raw.Len()
	t.keep, t.local, t.raw = false, nil, chunk.Stack[rawSlice]{}
}

// Kept reports whether the slice events of every track of s were kept
// from their start (see Keep), so that ReplayKept can replay them.
func (a *Analyzer) Kept(s TrackSet) bool {
	for k := range s {
		if t := a.tracks[k]; t == nil || !t.keep {
			return false
		}
	}
	return s != nil
}

// ReplayKept makes the tracks of s, all Kept, replayed by FinishExact as
// if they were Exact from the start: what their slices added to the
// numbers as they came is dropped, and EndOpen leaves their open B
// events to the replay. What was reported of them as they came stands.
// The other tracks are dropped from the keep. Call it once every event
// was added.
func (a *Analyzer) ReplayKept(s TrackSet) {
	for k := range s {
		t := a.tracks[k]
		t.keep, t.exact, t.local = false, true, nil
		t.stack, t.roots, t.busy, t.slices = nil, 0, 0, 0
		a.kept -= t.raw.Len()
		t.raw.Each(func(r *rawSlice) {
			if r.ph == 's' || r.ph == 't' || r.ph == 'f' {
				a.flowEvs[r.flow].exact = true
			}
		})
	}
	a.stopKeeping()
}

// stopKeeping drops every track from the keep, once every event was
// added: EndOpen, FinishExact and Finish count in Names.
func (a *Analyzer) stopKeeping() {
	if a.Keep && !a.keepOff {
		a.dropKeep()
	}
}

// names returns the numbers t's slices of name count in: its own while
// it is kept, else those of Names.
func (a *Analyzer) names(t *track, name int32) *NameStats {
	if !t.keep {
		return a.Names[name] // the usual case, inlined
	}
	return t.localNames(name)
}

// localNames returns t's own numbers of name.
func (t *track) localNames(name int32) *NameStats {
	n := t.local[name]
	if n == nil {
		if t.local == nil {
			t.local = map[int32]*NameStats{}
		}
		n = &NameStats{}
		t.local[name] = n
	}
	return n
}

// remapKept renames the numbers of the kept tracks after names were
// grouped.
func (a *Analyzer) remapKept(remap []int32) {
	for _, t := range a.trackList {
		if len(t.local) == 0 {
			continue
		}
		local := make(map[int32]*NameStats, len(t.local))
		for old, n := range t.local {
			if g := local[remap[old]]; g != nil {
				g.merge(n)
			} else {
				local[remap[old]] = n
			}
		}
		t.local = local
	}
}

// merge adds the numbers of o to n.
func (n *NameStats) merge(o *NameStats) {
	n.Count += o.Count
	n.Total += o.Total
	n.Self += o.Self
	n.Max = max(n.Max, o.Max)
	n.MaxDepth = max(n.MaxDepth, o.MaxDepth)
	n.Durations.Merge(&o.Durations)
}
