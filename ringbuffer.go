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

// A recorder is the record path's state: the chains that recording
// goroutines append to, the pool their chunks come from, and the counts of
// what they could not record. The flusher reads the chains; the record path
// reaches the flusher only through helper, to help it (assist.go).
type recorder struct {
	recording  atomic.Bool                    // false once Close began: events are refused
	categories atomic.Pointer[categoryFilter] // nil: every category is recorded
	lateDrops  atomic.Uint64                  // events refused because the tracer was closed
	dropped    atomic.Uint64                  // events dropped: full buffers on a stalled sink
	refused    atomic.Uint64                  // events and counter series refused: see refuse
	unmatched  atomic.Uint64                  // span ends that ended nothing: see spantoken.go
	refusal    refusal
	kept       keptEnds // span ends that found no room: see keepEnd
	chains      atomic.Pointer[chains]
	chainsMu    sync.Mutex // serialises addLane only
	pool       chunkPool
	waiting    atomic.Int64   // sealed chunks the flusher has not read yet
	wake       chan struct{}  // wakes the flusher when a chunk is sealed
	progress   progressSignal // wakes recording goroutines waiting for room
	own        ownGoroutines  // the goroutines that run user code: see reentry.go
	stop       chan struct{}  // closed when Close begins: no more waiting for room
	lossless   bool           // WithLossless: wait for room however long it takes
	helper     helper         // the flusher, as the record path sees it
}

// chains is the set of per-P chains, indexed by P id. It is replaced, never
// modified, when a P without a chain first records.
type chains []*chain

// nop is what recording calls return when tracing is off.
func nop(...Arg) {}

// record appends one event of goroutine gid, the caller, to the calling
// P's chain. It returns the function that ends a span it started, nop for
// other events it recorded, and nil if it recorded nothing (a disabled
// category, a closed tracer, or a full buffer on a stalled sink, which it
// counts). cs holds the category and scope ids of async and flow events,
// which their handle carries (and whose category was checked when it was
// made); other events take them from their Category and Namespace args, a
// span's end none.
func (r *recorder) record(gid uint64, k kind, flags uint8, cs catScope, name string, id uint64, args []Arg) func(...Arg) {
	n := uint64(1)
	if len(args) > 0 {
		if len(args) > maxArgs {
			args = args[:maxArgs]
		}
		slots := argSlots(args)
		if k < kindAsyncBegin && k != kindEnd {
			// Only args give these events a category: an event
			// without args has nothing to filter.
			if cs = cs.from(args); cs.cat != 0 && !r.allows(cs.cat) {
				r.late() // counted if Close began, whatever its category
				return nil
			}
		}
		if slots&hasStringer != 0 {
			return r.recordFormatted(gid, k, flags, cs, name, id, args)
		}
		n += slots
	}
	extra := cs != (catScope{}) || k.hasID()
	if extra {
		n++
	}
	if n == 1 {
		return r.put(gid, k, flags, name, id, 1, nil)
	}
	return r.put(gid, k, flags, name, id, n, &eventRest{args: args, cs: cs, extra: extra})
}

// recordFormatted is record for an event whose args hold a Stringer: it
// formats them (formatArgs), unless Close began, and records the text. It
// is apart from record so that the array it formats into takes no room
// on record's stack.
//
//go:noinline
func (r *recorder) recordFormatted(gid uint64, k kind, flags uint8, cs catScope, name string, id uint64, args []Arg) func(...Arg) {
	if !r.recording.Load() {
		return r.put(gid, k, flags, name, id, 1, nil) // refused and counted as late
	}
	var buf [maxArgs]Arg
	args = formatArgs(&buf, args)
	n := argSlots(args)
	extra := cs != (catScope{}) || k.hasID()
	if extra {
		n++
	}
	return r.put(gid, k, flags, name, id, n+1, &eventRest{args: args, cs: cs, extra: extra})
}

// An eventRest is what an event holds besides its head: see slot.
type eventRest struct {
	args  []Arg
	cs    catScope
	extra bool
}

// put writes an event of n slots, its head and rest (nil when n is 1),
// into the calling P's chain, and returns what record does; it refuses
// and counts an event once Close began (record does only for one its
// category leaves out, which never gets here). A span's start
// and end without args, the most common events, come here from Span and
// the end function directly: record's longer list of parameters, which
// does not fit the registers, and its checks of args cost a bare Span
// about 12% (BenchmarkSpan/on).
func (r *recorder) put(gid uint64, k kind, flags uint8, name string, id, n uint64, rest *eventRest) func(...Arg) {
	if r.late() {
		return nil
	}
	for {
		p := procPin()
		if ls := *r.chains.Load(); p < len(ls) && ls[p] != nil {
			l := ls[p]
			c := l.cur.Load()
			if h := loadAcquire(&c.head); h+n <= chunkSlots {
				end := nop
				head := &c.slots[h]
				// now(), by hand: two calls are past the inliner's budget.
				if loadAcquire(&counterOn) != 0 {
					head.num = uint64(cputicks())
				} else {
					head.num = uint64(nanotime()) | rawNanotime
				}
				head.meta = headMeta(k, flags, n, rest != nil && rest.extra, gid)
				if k == kindEnd {
					head.n, head.p = id, nil // the token
				} else {
					head.setStr(name)
				}
				if k <= kindBegin {
					var tok uint64
					tok, end = l.take(gid)
					head.n |= tok << 32
				}
				if n > 1 {
					if k == kindEnd {
						putArgs(c.slots[h+1:h+n], rest.args)
					} else {
						putEvent(c.slots[h:h+n], rest.extra, rest.cs, id, rest.args)
					}
				}
				storeRelease(&c.head, h+n)
				procUnpin()
				return end
			}
		}
		procUnpin()
		if k == kindEnd {
			// The slow path of an end: read the clock before refill may
			// wait, in case the end must be kept aside (see keepEnd).
			if at := now(); !r.refill(p, n, true) {
				r.keepEnd(gid, id, at)
				return nil
			}
			continue
		}
		if !r.refill(p, n, false) {
			return nil
		}
	}
}

// late reports whether Close began, counting the event it then refuses.
func (r *recorder) late() bool {
	if r.recording.Load() {
		return false
	}
	r.lateDrops.Inc()
	return true
}

// allows reports whether t records events of category cat. Async and flow
// events are checked once, when their operation or flow begins: every
// later event of it is recorded, so that none is left without its end.
func (r *recorder) allows(cat uint16) bool {
	f := r.categories.Load()
	return f == nil || cat == 0 || f.allows(cat)
}

// refill gives the chain of P p, or of the P the goroutine runs on now, a
// chunk with room for n slots. It runs once per chunk, not pinned, so it
// may take locks, help the flusher and wait. It returns false, having
// counted the drop, if the event cannot be recorded: the buffers are full
// and the sink is stalled (default mode) or the tracer is closing. The
// end of a span is not counted here: keepEnd keeps it, or counts it.
func (r *recorder) refill(p int, n uint64, end bool) bool {
	if ls := *r.chains.Load(); p >= len(ls) || ls[p] == nil {
		r.addChain(p)
		return true
	}
	c := r.pool.get(r.chainCount(), 0, r.helper.sinkBehind())
	if c == nil {
		if c = r.waitForChunk(); c == nil {
			switch {
			case end: // keepEnd keeps it, or counts it
			case r.recording.Load():
				r.dropped.Inc()
			default:
				r.lateDrops.Inc() // Close began while it waited
			}
			return false
		}
	}
	for {
		p := procPin()
		ls := *r.chains.Load()
		if p >= len(ls) || ls[p] == nil {
			procUnpin()
			r.addChain(p)
			continue
		}
		l := ls[p]
		old := l.cur.Load()
		if loadAcquire(&old.head)+n <= chunkSlots {
			// Another goroutine on this P refilled it meanwhile.
			procUnpin()
			r.pool.put(c)
			return true
		}
		l.cur.Store(c)
		if old == full {
			l.first.Store(c)
		} else {
			old.next.Store(c) // seals old: see the ordering note above
		}
		procUnpin()
		if old != full {
			r.sealed(old)
		}
		return true
	}
}

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
		c.next.Store(nil)
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

// put takes back a chunk the flusher read to its end.
func (cp *chunkPool) put(c *chunk) {
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
