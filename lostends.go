package tracer

import (
	"sync"
)

// Ends kept aside.
//
// An event is dropped when the buffers are full while the sink is stalled
// (default mode). The end of a span is not: its start is recorded, perhaps
// already written as a B event, and a B without its E draws a span to the
// end of the trace that swallows every later span of its goroutine. So an
// end that finds no room is kept aside, in a list the flusher takes at
// each pass and merges with the chains in time order, as if it had been
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

// take appends the ends kept aside to dst, forgets them and returns dst.
func (k *keptEnds) take(dst []slot) []slot {
	k.mu.Lock()
	defer k.mu.Unlock()
	dst = append(dst, k.ends...)
	clear(k.ends)
	k.ends = k.ends[:0]
	return dst
}

// drop forgets the ends kept aside and returns how many there were.
func (k *keptEnds) drop() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	n := len(k.ends)
	k.ends = nil
	return n
}
