package trace

// Depth per span name.
//
// Perfetto's slice table gives each slice its depth: how many slices of
// its track enclose it. Stats reports the deepest of each name. A
// slice's depth is known only when nothing that comes later in the file
// can enclose it: in end order (the tracer package's), a parent comes
// after its children and takes them, and their subtrees, one level down.
// Depths never shrink as the file is read, so the deepest of a name is
// the largest depth its slices have at the end.
//
// A track's tree holds each slice it keeps with its depth as it is now.
// The slices it drops to stay small (see collapse and foldOlder) leave
// their levels in the entry kept above them: a depthSet, per name the
// deepest level below that entry, relative to it, which moves down with
// the entry when a later slice takes it. When an entry with a set is
// itself dropped, its set is merged into its kept ancestor's, shifted by
// the levels between them: the smaller set into the larger, with an
// offset that makes the shift of a whole set one addition, so that a
// chain of nested slices of distinct names, written children first,
// costs time linear in its depth (each name moves to a larger set at
// most a logarithmic number of times). The sets are read at the end
// (resolveDepths): an entry's depth then, plus each level of its set.
//
// A set holds a name once, so the memory is per entry kept and per
// distinct name below it, never per slice.

// A depthSet is, per span name, the deepest level of the slices dropped
// below a tree entry, relative to it (a child is level 1): each level is
// the stored one plus off. Entries whose sets hold the same few names at
// the same levels share one (the requests of a service, each with the
// same children): a set is changed only while one entry holds it, and
// one that several hold is copied where it is merged (see belowMerge).
type depthSet struct {
	off   int32
	refs  int32           // the entries that hold it
	small []nameLevel     // while few names
	big   map[int32]int32 // past smallSet names
}

// smallSet is how many names a depthSet holds in a slice before a map.
const smallSet = 8

type nameLevel struct{ name, level int32 }

// raiseSmall raises name's level in small to at least level, or adds it
// while small holds fewer than smallSet names; it reports false when
// small is full without name, for the caller to move to a map.
func raiseSmall(small *[]nameLevel, name, level int32) bool {
	for i := range *small {
		if nl := &(*small)[i]; nl.name == name {
			nl.level = max(nl.level, level)
			return true
		}
	}
	if len(*small) < smallSet {
		*small = append(*small, nameLevel{name, level})
		return true
	}
	return false
}

func (s *depthSet) len() int {
	if s.big != nil {
		return len(s.big)
	}
	return len(s.small)
}

// add notes a slice named name at level (relative to the set's entry).
func (s *depthSet) add(name, level int32) {
	v := level - s.off
	if s.big != nil {
		if old, ok := s.big[name]; !ok || v > old {
			s.big[name] = v
		}
		return
	}
	if raiseSmall(&s.small, name, v) {
		return
	}
	s.big = make(map[int32]int32, 2*smallSet)
	for _, nl := range s.small {
		s.big[nl.name] = nl.level
	}
	s.small = s.small[:0]
	s.big[name] = v
}

// each calls f with each name of s and its level.
func (s *depthSet) each(f func(name, level int32)) {
	if s.big != nil {
		for n, v := range s.big {
			f(n, v+s.off)
		}
		return
	}
	for _, nl := range s.small {
		f(nl.name, nl.level+s.off)
	}
}

// newSet returns the id of an empty set held by one entry (an entry's
// below: an index in a.sets plus one).
func (a *Analyzer) newSet() int32 {
	var id int32
	if n := len(a.freeSets); n > 0 {
		id = a.freeSets[n-1]
		a.freeSets = a.freeSets[:n-1]
	} else {
		a.sets = append(a.sets, depthSet{})
		id = int32(len(a.sets))
	}
	a.set(id).refs = 1
	return id
}

func (a *Analyzer) set(id int32) *depthSet { return &a.sets[id-1] }

// release drops an entry's hold of set id, which is emptied for reuse
// when no entry holds it.
func (a *Analyzer) release(id int32) {
	s := a.set(id)
	if s.refs--; s.refs > 0 {
		return
	}
	s.off, s.small, s.big = 0, s.small[:0], nil
	a.freeSets = append(a.freeSets, id)
}

// A below gathers the levels of the entries dropped below one entry
// kept, before they are given to it (give): a few names in small, or a
// set it holds alone (id), once they are many or it took a dropped
// entry's set.
type below struct {
	small []nameLevel
	id    int32
}

// belowName notes a slice named name at level.
func (a *Analyzer) belowName(name, level int32) {
	b := &a.below
	if b.id != 0 {
		a.set(b.id).add(name, level)
		return
	}
	if raiseSmall(&b.small, name, level) {
		return
	}
	a.belowSet()
	a.set(b.id).add(name, level)
}

// belowSet moves what a.below holds in small to a set of its own.
func (a *Analyzer) belowSet() {
	b := &a.below
	b.id = a.newSet()
	s := a.set(b.id)
	for _, nl := range b.small {
		s.add(nl.name, nl.level)
	}
	b.small = b.small[:0]
}

// belowMerge notes the levels of set src, which an entry dropped held,
// shifted by shift: the smaller of it and what a.below holds is merged
// into the larger, so that a name moves to a larger set each time it
// moves.
func (a *Analyzer) belowMerge(src, shift int32) {
	b := &a.below
	s := a.set(src)
	n := len(b.small)
	if b.id != 0 {
		n = a.set(b.id).len()
	}
	if s.refs == 1 && s.len() > n {
		// Take src, and merge what a.below held into it.
		s.off += shift
		old, small := b.id, b.small
		b.id, b.small = src, small[:0]
		for _, nl := range small {
			s.add(nl.name, nl.level)
		}
		if old != 0 {
			a.steps += int64(a.set(old).len())
			a.set(old).each(s.add)
			a.release(old)
		}
		a.steps += int64(len(small))
		return
	}
	a.steps += int64(s.len())
	if s.big == nil {
		for _, nl := range s.small {
			a.belowName(nl.name, nl.level+s.off+shift)
		}
	} else {
		s.each(func(name, level int32) { a.belowName(name, level+shift) })
	}
	a.release(src)
}

// dropped notes that the tree entry c, and what it stands for, is
// dropped below an entry kept rel levels above it.
func (a *Analyzer) dropped(c *slice, rel int32) {
	if c.below != 0 {
		a.belowMerge(c.below, rel)
		c.below = 0
	}
	if c.name >= 0 {
		a.belowName(c.name, rel)
	}
}

// give gives x what a.below gathered, and empties it. A few names go to
// a set made before that holds the same (see depthSet), if one of those
// made recently does: found by the hash of what they hold.
func (a *Analyzer) give(x *slice) {
	b := &a.below
	if x.below != 0 {
		if b.id == 0 && len(b.small) == 0 {
			return
		}
		a.belowMerge(x.below, 0)
		x.below = 0
	}
	if b.id != 0 {
		x.below, b.id = b.id, 0
		return
	}
	if len(b.small) == 0 {
		return
	}
	h := uint64(len(b.small))
	for _, nl := range b.small {
		h = (h ^ uint64(uint32(nl.name))<<32 ^ uint64(uint32(nl.level))) * 0x9e3779b97f4a7c15
	}
	slot := &a.shared[h>>56]
	if l := *slot; l != 0 {
		if s := a.set(l); s.refs > 0 && s.big == nil && sameLevels(s, b.small) {
			s.refs++
			x.below = l
			b.small = b.small[:0]
			return
		}
	}
	a.belowSet()
	x.below, b.id = b.id, 0
	*slot = x.below
}

// sameLevels reports whether s holds the names of small, at their
// levels, in their order.
func sameLevels(s *depthSet, small []nameLevel) bool {
	if len(s.small) != len(small) {
		return false
	}
	for i, nl := range small {
		if o := s.small[i]; o.name != nl.name || o.level+s.off != nl.level {
			return false
		}
	}
	return true
}

// dropBelow notes that the tree entry c, and what it stands for, is
// dropped below the entry dst that is kept above it.
func (a *Analyzer) dropBelow(dst, c *slice) {
	if a.Stats {
		a.dropped(c, c.depth-dst.depth)
		a.give(dst)
	}
}

// resolveDepths sets each name's deepest depth from the trees of the
// tracks, once every slice is in: each entry's depth, and the levels of
// its set below it (once per set and depth: entries share sets).
func (a *Analyzer) resolveDepths() {
	var lastSet, lastDepth int32
	for _, t := range a.trackList {
		for i := range t.stack {
			x := &t.stack[i]
			if x.name >= 0 {
				n := a.Names[x.name]
				n.MaxDepth = max(n.MaxDepth, x.depth)
			}
			if x.below == 0 {
				continue
			}
			if x.below != lastSet || x.depth != lastDepth {
				lastSet, lastDepth = x.below, x.depth
				a.set(x.below).each(func(name, level int32) {
					n := a.Names[name]
					n.MaxDepth = max(n.MaxDepth, x.depth+level)
				})
			}
		}
	}
}

// remapSets renames the names of every set after names were grouped:
// names that become one keep the deepest level.
func (a *Analyzer) remapSets(remap []int32) {
	for i := range a.sets {
		s := &a.sets[i]
		old := *s
		s.off, s.small, s.big = 0, nil, nil
		old.each(func(name, level int32) { s.add(remap[name], level) })
	}
}
