package tracer

import (
	"sync"
	_ "unsafe" // for go:linkname

	"go.uber.org/atomic"
)

// Pinning the goroutine to its P makes the running goroutine the only writer
// of that P's buffer for the few nanoseconds of a write: the scheduler cannot
// preempt a pinned goroutine, so no other goroutine runs on that P until it
// unpins. The runtime keeps these two symbols reachable for sync.Pool-style
// users and promises not to change their signatures.

//go:linkname procPin runtime.procPin
func procPin() int

//go:linkname procUnpin runtime.procUnpin
func procUnpin()

// Buffers.
//
// Each P records into a chain: a list of fixed-size chunks that the P fills
// one after the other, and the flusher reads and hands back, the way the
// runtime's execution tracer and the Perfetto SDK buffer their events. A
// P that fills its chunk takes a fresh one from the tracer's pool, so a
// burst grows the buffers, up to the pool's limit (WithBufferLimit), and
// the pool gives memory back once the burst is over. Memory is bounded by
// the limit, whatever the number of goroutines.
//
// Memory ordering: the producer fills slots [head, head+n) of its chunk
// and then stores head+n with storeRelease; the consumer loads head
// atomically before it reads any slot below it. That store/load pair is
// the release/acquire edge that makes the slot contents visible to the
// flusher. head is a plain uint64 rather than an atomic type because
// storeRelease needs its address. A full chunk is sealed by storing the
// next chunk in its next field (an atomic store, after every head store
// to it); the consumer, having seen next, loads head once more and gets
// the chunk's final length. Successive producers on one P see each other's
// head: they run on the same thread, or the P passed between threads
// through the runtime's locked instructions; under the race detector
// storeRelease is an atomic store, which is also what tells it about the
// hand-off. The consumer gives a chunk back to the pool only once it has
// read past its end and keeps no pointer into it: what it needs later
// (open span starts) it copies.

// chunkSlots is the number of slots in a chunk: 64 KiB, 1024 bare spans.
const (
	chunkSlots = 2048
	chunkBytes = chunkSlots * 32
)

// A chunk is a run of slots filled by one P.
type chunk struct {
	head  uint64 // next slot to write; written by the producer only
	_     [56]byte
	next  atomic.Pointer[chunk] // the chunk that follows, once this one is sealed
	slots [chunkSlots]slot
}

// full is the chunk of a chain that has none yet: it has no room, so the
// first event on a new chain takes the refill path.
var full = &chunk{head: chunkSlots}

// A chain is one P's chain of chunks.
type chain struct {
	// Producer side: touched only by a goroutine pinned to the chain's P.
	// Pinning is what orders the accesses of successive goroutines; they
	// are atomic (a plain move on amd64 and arm64, but for the store of
	// cur, once per chunk) so that the race detector sees the order too.
	cur    atomic.Pointer[chunk] // the chunk being filled
	next   uint64                // the token to try first: see take
	starts uint64                // spans started: see reuseAfter; read by any end

	lapStarts, lapPassed uint64 // starts before this lap of the tokens, and tokens it passed over: see take
	_                    [24]byte

	// Consumer side: touched only by the flusher, under the flusher's mu.
	read *chunk // the oldest chunk not read to its end, nil before the first
	pos  uint64 // next slot to read in read

	first atomic.Pointer[chunk] // the chain's first chunk, for read to start on
	id    uint64

	// The tokens of the spans started on this chain (see spantoken.go).
	// Only the producer adds blocks; the flusher reads them to take back
	// the tokens of spans it forgot.
	blocks atomic.Pointer[[]*tokenBlock]
	r      *recorder
}

func newChain(r *recorder, p int) *chain {
	l := &chain{id: uint64(p), r: r}
	blocks := []*tokenBlock{newTokenBlock(l, 0)}
	l.blocks.Store(&blocks)
	l.cur.Store(full)
	return l
}

// The consumer side of a chain: the flusher reads it, under its mu,
// through these.

// nextEvent returns the head slot of the chain's next event, or nil if none is
// published; head is the reader's last load of the chunk's published
// slots (see cursor). It moves on to the next chunk when the reader has
// read one to its end, and gives the one it leaves back to the pool.
func (l *chain) nextEvent(head *uint64) *slot {
	for {
		if l.pos < *head {
			return &l.read.slots[l.pos]
		}
		if l.read == nil {
			if l.read = l.first.Load(); l.read == nil {
				return nil
			}
			l.first.Store(nil) // read holds it now, and it goes back to the pool
			l.pos, *head = 0, 0
		}
		if *head = loadAcquire(&l.read.head); l.pos < *head {
			continue
		}
		next := l.read.next.Load()
		if next == nil {
			return nil
		}
		// Sealed: its head is final now.
		if *head = loadAcquire(&l.read.head); l.pos < *head {
			continue
		}
		l.r.pool.put(l.read)
		l.r.waiting.Dec()
		l.read, l.pos, *head = next, 0, 0
	}
}

// chunk returns the slots of the chunk being read and the position of
// the next event in it.
func (l *chain) chunk() (*[chunkSlots]slot, uint64) { return &l.read.slots, l.pos }

// published loads how many slots of the chunk being read are published.
func (l *chain) published() uint64 { return loadAcquire(&l.read.head) }

// skip moves past n slots the reader has read.
func (l *chain) skip(n uint64) { l.pos += n }

// addChain gives P p a chain. It runs once per P for the tracer's life, so
// a mutex is fine here; the record path never takes it.
func (r *recorder) addChain(p int) {
	r.chainsMu.Lock()
	defer r.chainsMu.Unlock()
	old := *r.chains.Load()
	if p < len(old) && old[p] != nil {
		return
	}
	grown := make(chains, max(len(old), p+1))
	copy(grown, old)
	grown[p] = newChain(r, p)
	r.chains.Store(&grown)
}

// chainCount returns how many chains there are.
func (r *recorder) chainCount() int { return len(*r.chains.Load()) }

// A chunkPool hands chunks to the chains and takes them back from the
// flusher. It allocates chunks as they are needed, up to its limit, and
// frees those that a burst left unused.
type chunkPool struct {
	mu     sync.Mutex
	free   []*chunk
	count  int // chunks allocated and not freed
	limit  int // most chunks, however many chains; see get
	unused int // fewest free chunks since the last trim
}

// get returns a chunk with nothing in it, or nil if the pool is at its
// limit, or at its soft mark unless grow (see softChunks). The limit is
// raised to two chunks more than there are chains, so that every P can
// hold a chunk while the flusher reads a full one, and by reserve more for
// the tracer's own goroutines (see reentry.go).
func (cp *chunkPool) get(chains, reserve int, grow bool) *chunk {
	cp.mu.Lock()
	if n := len(cp.free); n > 0 {
		c := cp.free[n-1]
		cp.free[n-1] = nil
		cp.free = cp.free[:n-1]
		cp.unused = min(cp.unused, len(cp.free))
		cp.mu.Unlock()
		// Atomic, though no one else can use c now: a goroutine that found
		// c full when it was a chain's chunk read its head without writing
		// to it, and only the P it was pinned to orders that read before
		// this write, which the race detector does not see.
		storeWord(&c.head, 0)
		return c
	}
	limit := cp.limit
	if !grow {
		limit = softChunks(limit, chains)
	}
	if cp.count >= max(limit, chains+2)+reserve {
		cp.mu.Unlock()
		return nil
	}
	cp.count++
	cp.unused = 0
	cp.mu.Unlock()
	return new(chunk)
}

// put takes back a chunk the flusher read to its end. It forgets the
// chunk after it: a free chunk that pointed to the rest of its chain
// would keep alive every chunk of a burst that trim frees.
func (cp *chunkPool) put(c *chunk) {
	c.next.Store(nil)
	cp.mu.Lock()
	cp.free = append(cp.free, c)
	cp.mu.Unlock()
}

// trim frees the chunks that stayed unused since the last trim, keeping
// keep of them for the next burst.
func (cp *chunkPool) trim(keep int) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	drop := min(cp.unused, len(cp.free)-keep)
	if drop > 0 {
		n := len(cp.free) - drop
		clear(cp.free[n:])
		cp.free = cp.free[:n]
		cp.count -= drop
	}
	cp.unused = len(cp.free)
}
