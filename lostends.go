package tracer

import (
	"slices"
	"sync"
)

// Ends kept aside.
//
// An event is dropped when the buffers are full while the sink is stalled
// (default mode). The end of a span is not: its start is recorded, perhaps
// already written as a B event, and a B without its E draws a span to the
// end of the trace that swallows every later span of its goroutine. So an
// end that finds no room is kept aside, in a list the flusher takes at
// each pass and merges with the lanes in time order, as if it had been
// recorded in one. It is the slow path of a stalled sink, so a mutex is
// fine; the list is bounded (only recorded starts can be ended), and an
// end past the bound is dropped and counted after all.

// maxKeptEnds bounds the ends kept aside: 32 bytes each. An end kept
// aside loses the args given to it.
const maxKeptEnds = 1 << 20

// keptEnds is the list of ends kept aside, taken by the flusher.
type keptEnds struct {
	mu   sync.Mutex
	ends []slot
}

// keepEnd keeps the end, at raw clock reading at (see clock.go), of the
// span whose token is id on goroutine gid, which found no room in the
// buffers.
func (r *recorder) keepEnd(gid, id, at uint64) {
	if !r.recording.Load() {
		r.lateDrops.Inc() // Close began: it would not be written
		return
	}
	k := &r.kept
	k.mu.Lock()
	defer k.mu.Unlock()
	if r.helper.isClosed() {
		r.lateDrops.Inc() // after Close's last pass: see lateKeptEnds
		return
	}
	if len(k.ends) >= maxKeptEnds {
		r.dropped.Inc()
		return
	}
	k.ends = append(k.ends, slot{num: at, meta: headMeta(kindEnd, 0, 1, false, gid), n: id})
}

// takeKeptEnds moves the ends kept aside so far to f.kept, in time order.
// The flusher calls it after reading a pass's cut: an end kept after that
// belongs to a goroutine whose later events are all after the cut.
func (f *flusher) takeKeptEnds() {
	k := &f.r.kept
	k.mu.Lock()
	if len(k.ends) == 0 {
		k.mu.Unlock()
		return
	}
	f.kept = append(f.kept, k.ends...)
	clear(k.ends)
	k.ends = k.ends[:0]
	k.mu.Unlock()
	for i := range f.kept { // those kept in earlier passes too: see timebase.fix
		f.clock.fix(&f.kept[i])
	}
	slices.SortStableFunc(f.kept, func(a, b slot) int {
		switch {
		case a.at() < b.at():
			return -1
		case a.at() > b.at():
			return 1
		}
		return 0
	})
}

// popKeptEnds pairs the ends kept aside that happened before before with
// their starts.
func (f *flusher) popKeptEnds(before int64) {
	i := 0
	for ; i < len(f.kept) && f.kept[i].at() < before; i++ {
		f.pop(&f.kept[i], nil)
	}
	if i > 0 {
		n := copy(f.kept, f.kept[i:])
		clear(f.kept[n:])
		f.kept = f.kept[:n]
	}
}

// lateKeptEnds counts, once Close's last pass is done, the ends kept aside
// too late for it.
func (f *flusher) lateKeptEnds() {
	k := &f.r.kept
	k.mu.Lock()
	f.r.lateDrops.Add(uint64(len(k.ends) + len(f.kept)))
	k.ends, f.kept = nil, nil
	k.mu.Unlock()
}
