package tracer

import (
	"fmt"
	"sync/atomic"
)

// Span tokens: what makes a span's end function safe to misuse.
//
// The function Span returns must cost no allocation, so it cannot be made
// for each span: it is one of a lane's tokens' end functions, made in
// advance, and the end it records carries the token so the flusher knows
// which start it ends. A token is held by one open span at a time: its
// state is the id of the goroutine whose span holds it, and the end
// function frees it (a compare-and-swap from that goroutine's id to free)
// before it records anything. So an end function called a second time, or
// on another goroutine than the one that started the span, or after its
// token went to another goroutine's span, finds a state that is not its
// caller's, records nothing and touches no span: it is counted in
// Stats.Unmatched and reported once to the error handler.
//
// A lane hands its tokens out in turn, skipping those still held, so a
// freed token comes back only after every other one of its lane has been
// handed out (4096 at least). The one misuse a token cannot tell apart from
// a real end is a stale end function called by the goroutine that now
// holds the same token for a newer span: it needs that many spans started
// on the P in between, and the newer span still open when the stale call
// comes, which a deferred end never meets (deferred calls run in reverse
// order, so spans begun after it have ended).
//
// A lane whose tokens are mostly held (a server with many slow requests)
// gets another block of them; tokens of spans the flusher forgot (see
// maxOpenSpans) are taken back, so a program that never ends its spans
// does not grow the blocks without bound.

// tokenBlockSize is the number of tokens a lane gets at a time.
const tokenBlockSize = 4096

// tokenTries is how many held tokens a start skips before its lane gets a
// new block: with a lane's tokens half held, one start in 65536 finds
// sixteen in a row held.
const tokenTries = 16

// A spanToken names an open span: its lane and its index there.
type spanToken struct {
	state uint64 // 0 when free, gid<<1|1 while goroutine gid's span holds it
	t     *Tracer
	id    uint64 // lane id << 32 | index in the lane
}

// A tokenBlock is a block of a lane's tokens, with their end functions
// made once.
type tokenBlock struct {
	tokens [tokenBlockSize]spanToken
	ends   [tokenBlockSize]func(...Arg)
}

func newTokenBlock(t *Tracer, lane uint64, first int) *tokenBlock {
	b := new(tokenBlock)
	for i := range b.tokens {
		b.tokens[i] = spanToken{t: t, id: lane<<32 | uint64(first+i)}
		b.ends[i] = b.tokens[i].end
	}
	return b
}

// held is the state of a token held by goroutine gid's span.
func held(gid uint64) uint64 { return gid<<1 | 1 }

// take hands out a free token of l to goroutine gid and returns its index
// and end function. It runs pinned to l's P: its only producer.
func (l *lane) take(gid uint64) (uint64, func(...Arg)) {
	blocks := *l.blocks.Load()
	i := atomic.LoadUint64(&l.next)
	for tries := 0; ; tries++ {
		if i >= uint64(len(blocks))*tokenBlockSize {
			i = 0
		}
		if tries == tokenTries {
			// Allocating while pinned is allowed; it happens once per
			// 4096 spans held at once on this P.
			i = uint64(len(blocks)) * tokenBlockSize
			grown := append(blocks[:len(blocks):len(blocks)], newTokenBlock(l.t, l.id, int(i)))
			l.blocks.Store(&grown)
			blocks = grown
		}
		b := blocks[i/tokenBlockSize]
		tok := &b.tokens[i%tokenBlockSize]
		if atomic.LoadUint64(&tok.state) == 0 {
			storeRelease(&tok.state, held(gid)) // the end's CAS orders it
			storeRelease(&l.next, i+1)
			return i, b.ends[i%tokenBlockSize]
		}
		i++
	}
}

// token returns l's token at index i.
func (l *lane) token(i uint64) *spanToken {
	return &(*l.blocks.Load())[i/tokenBlockSize].tokens[i%tokenBlockSize]
}

// end records the end of the span holding s, if the caller's goroutine
// holds it: see the note above.
func (s *spanToken) end(args ...Arg) {
	gid := goroutineID()
	if !atomic.CompareAndSwapUint64(&s.state, held(gid), 0) {
		s.t.unmatchedEnd(gid, atomic.LoadUint64(&s.state))
		return
	}
	s.t.record(kindEnd, 0, catScope{}, "", s.id, args)
}

// unmatchedEnd counts an end function called by goroutine gid on a token
// whose state is state, and keeps the first such misuse for the error
// handler.
func (t *Tracer) unmatchedEnd(gid, state uint64) {
	t.unmatched.Inc()
	t.refusal.keep(misuseEnd, func() error {
		switch {
		case state == 0:
			return fmt.Errorf("tracer: a span's end function was called on goroutine %d after the span had ended "+
				"(called twice?), or after the tracer gave up on it (see Span): ignored, counted in Stats.Unmatched", gid)
		default:
			return fmt.Errorf("tracer: a span's end function was called on goroutine %d, but the span it ends is not that goroutine's "+
				"(ended on another goroutine, or called again after the span ended): ignored, counted in Stats.Unmatched", gid)
		}
	})
}

// release frees the token of a span the flusher forgot, unless its end
// came meanwhile: the forgotten span's own end, should it come, is then
// unmatched.
func (t *Tracer) release(token, gid uint64) {
	lp := t.lanes.Load()
	if lp == nil {
		return
	}
	if ls, p := *lp, token>>32; p < uint64(len(ls)) && ls[p] != nil {
		atomic.CompareAndSwapUint64(&ls[p].token(token&(1<<32-1)).state, held(gid), 0)
	}
}
