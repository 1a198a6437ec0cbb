package tracer

import (
	"slices"
	"strconv"
)

// A rotated file and a flight recorder's dump must each name the goroutines
// whose events they hold, but a goroutine's thread_name event was written
// once, when it was set, perhaps several files ago or long out of the
// window. So the flusher of such a tracer remembers the name and sort index
// of every goroutine that set one, and writes them again where they are
// needed: a rotated file gets a goroutine's name with the first batch that
// holds one of its events; a dump gets every remembered name.
//
// A goroutine's exit cannot be observed, so the memory is bounded instead:
// it holds at most maxTrackNames goroutines. When it is full, the half (or
// more) that recorded nothing for the longest time is forgotten; a
// forgotten goroutine that records again shows in later files as a number
// instead of its name.

// maxTrackNames bounds how many goroutines' names a flusher remembers:
// about 100 bytes each, plus the names.
const maxTrackNames = 4096

// A trackName is what the viewers need to label one goroutine's track.
type trackName struct {
	name    string
	sort    int64
	hasName bool
	hasSort bool
	file    uint64 // the file it was last written to
	seen    uint64 // when its goroutine last recorded, in flushes
}

// trackNames remembers goroutine names for the flusher. seen is called for
// every event the encoder writes, so it caches the last goroutine looked
// up: events come in runs of one goroutine.
type trackNames struct {
	m       map[uint64]*trackName
	file    uint64   // the current file; 0 when names are only dumped
	tick    uint64   // flushes so far
	pending []uint64 // goroutines with events in this batch, not yet named in this file

	lastGid uint64
	last    *trackName
}

func newTrackNames() *trackNames {
	return &trackNames{m: map[uint64]*trackName{}}
}

// len returns how many goroutines' names it remembers.
func (n *trackNames) len() int { return len(n.m) }

// nextBatch counts a batch queued: names not seen for many are forgotten
// first (see forget).
func (n *trackNames) nextBatch() { n.tick++ }

// note remembers the name or sort index the event with head h sets; it is
// about to be written to the current file.
func (n *trackNames) note(h *slot, rest []slot) {
	k := h.kind()
	if k != kindThreadName && k != kindThreadSort {
		return
	}
	gid := h.gid()
	tn := n.m[gid]
	if tn == nil {
		if len(n.m) >= maxTrackNames {
			n.forget()
		}
		tn = &trackName{}
		n.m[gid] = tn
	}
	if k == kindThreadName {
		tn.name, tn.hasName = h.str(), true
	} else {
		tn.sort, tn.hasSort = int64(rest[0].num), true
	}
	tn.seen, tn.file = n.tick, n.file
	n.lastGid, n.last = gid, tn
}

// adopt remembers a name given before the tracer started (see
// adoptDefaults), as written in the current file.
func (n *trackNames) adopt(gid uint64, tn trackName) {
	if len(n.m) >= maxTrackNames {
		n.forget()
	}
	tn.seen, tn.file = n.tick, n.file
	n.m[gid] = &tn
}

// seen records that goroutine gid has an event in the batch being encoded.
func (n *trackNames) see(gid uint64) {
	tn := n.last
	if tn == nil || n.lastGid != gid {
		tn = n.m[gid]
		if tn == nil {
			return
		}
		n.lastGid, n.last = gid, tn
	}
	tn.seen = n.tick
	if tn.file != n.file {
		tn.file = n.file
		n.pending = append(n.pending, gid)
	}
}

// forget drops the half of the names whose goroutines recorded nothing for
// the longest time.
func (n *trackNames) forget() {
	ticks := make([]uint64, 0, len(n.m))
	for _, tn := range n.m {
		ticks = append(ticks, tn.seen)
	}
	slices.Sort(ticks)
	limit := ticks[len(ticks)/2]
	for gid, tn := range n.m {
		if tn.seen <= limit {
			delete(n.m, gid)
		}
	}
	n.last = nil
	n.pending = slices.DeleteFunc(n.pending, func(gid uint64) bool { return n.m[gid] == nil })
}

// newFile starts a file, or forgets which names the current file holds
// after a write failed: every name is written again where it is needed.
func (n *trackNames) newFile() {
	n.file++
	n.pending = n.pending[:0]
}

// forPending calls f with each goroutine seen in this batch and not yet
// named in this file, and its name, and forgets them.
func (n *trackNames) forPending(f func(gid uint64, tn *trackName)) {
	for _, gid := range n.pending {
		if tn := n.m[gid]; tn != nil {
			f(gid, tn)
		}
	}
	n.pending = n.pending[:0]
}

// forAll calls f with every remembered goroutine and its name.
func (n *trackNames) forAll(f func(gid uint64, tn *trackName)) {
	for gid, tn := range n.m {
		f(gid, tn)
	}
}

// Goroutines that never set a name still get one, "goroutine N", written
// before their first event, so that no track of the trace is unnamed in
// either viewer (Perfetto would show the bare number, catapult a "tid"),
// and the goroutine id reads as such. The flusher remembers which
// goroutines it named, or which the program named, up to maxAutoNamed:
// past it, it forgets those it named itself, which are named again should
// they record again (a second, identical thread_name event, harmless).

// maxAutoNamed bounds the goroutines the flusher remembers naming.
const maxAutoNamed = 1 << 16

// autoNames is the flusher's memory of named goroutines: true for a name
// the program set, false for one the flusher gave.
type autoNames struct {
	named   map[uint64]bool
	lastGid uint64 // events come in runs of one goroutine
}

// program records that the program named goroutine gid.
func (a *autoNames) program(gid uint64) {
	if a.named == nil {
		a.named = map[uint64]bool{}
	}
	a.named[gid] = true
}

// autoName is the name the flusher gives goroutine gid.
func autoName(gid uint64) trackName {
	return trackName{name: "goroutine " + strconv.FormatUint(gid, 10), hasName: true}
}

// has reports whether it remembers a name or sort index for goroutine gid.
func (n *trackNames) has(gid uint64) bool { return n.m[gid] != nil }

// forgetOwn forgets the goroutines the flusher named, which it names
// again should they record again: in a tee's trace, which starts after
// their names were written.
func (a *autoNames) forgetOwn() {
	for g, byProgram := range a.named {
		if !byProgram {
			delete(a.named, g)
		}
	}
	a.lastGid = 0
}

// need reports whether goroutine gid is yet to be named, and remembers
// it as named from now on.
func (a *autoNames) need(gid uint64) bool {
	if gid == a.lastGid {
		return false
	}
	a.lastGid = gid
	if _, ok := a.named[gid]; ok {
		return false
	}
	if a.named == nil {
		a.named = map[uint64]bool{}
	}
	if len(a.named) >= maxAutoNamed {
		a.forgetOwn()
	}
	a.named[gid] = false
	return true
}
