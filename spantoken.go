package tracer

import (
	"fmt"
	"unsafe"
)

// Span tokens: what makes a span's end function safe to misuse.
//
// The function Span returns must cost no allocation, so it cannot be made
// for each span: it is one of a chain's tokens' end functions, made in
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
// A chain hands its tokens out in turn, and a freed token is handed out
// again only once reuseAfter more spans have started on its chain: the end
// that frees it stamps it with the chain's count of span starts, and take
// passes over a free token whose stamp is younger. (Handing tokens out in
// turn is not enough on its own: while most of a chain's tokens are held,
// as on a server with thousands of requests in flight, the turn comes
// round after far fewer starts than there are tokens.) The one misuse a
// token cannot tell apart from a real end is a stale end function called
// by the goroutine that now holds the same token for a newer span: it
// needs reuseAfter spans started on the P between the first end and the
// newer span's start, and the newer span still open when the stale call
// comes, which a deferred end never meets (deferred calls run in reverse
// order, so spans begun after it have ended).
//
// A chain hands its tokens out in laps: take moves a cursor through the
// blocks and passes over the tokens it cannot hand out (held, or freed
// too recently). Each lap visits every token once, so the chain knows at
// a lap's end how many it passed over; when they outnumber those it
// handed out, it adds enough blocks for the next lap to hand out at least
// as many as it passes over. A run of held tokens, however long, costs
// its length once a lap, never a block. What a lap passes over is at most
// the spans open at once (held) plus the tokens freed within the last
// reuseAfter starts (at most reuseAfter plus the spans open), so the
// blocks are bounded by the spans open at once, never by the spans
// started: see maxTokens. Tokens of spans the flusher forgot (see
// maxOpenSpans) are taken back, so a program that never ends its spans
// does not hold them either.
//
// Why not a larger reuse bound: the end function must be made in advance
// (an allocation per span would cost more than the span), one per token,
// and a token's end function and state take 48 bytes; a block a P is
// what the bound costs in memory, 192 KiB a P for 4000 spans.

// tokenBlockSize is the number of tokens a chain gets at a time.
const tokenBlockSize = 4096

// reuseAfter is how many spans must start on a chain before a token freed
// there is handed out again: a little less than a block, so that a chain
// whose spans end as they start (a tight loop) cycles through one block.
const reuseAfter = 4000

// A spanToken names an open span: its chain and its index there.
type spanToken struct {
	// gid<<1|1 while goroutine gid's span holds it; when free, 0 if never
	// used, else (starts+1)<<1 with starts the chain's count of span starts
	// when it was freed (see free).
	state uint64
	l     *chain
	id    uint64 // chain id << 32 | index in the chain
}

// A tokenBlock is a block of a chain's tokens, with their end functions
// made once.
type tokenBlock struct {
	tokens   [tokenBlockSize]spanToken
	ends     [tokenBlockSize]func(...Arg)
	closures [tokenBlockSize]endClosure // what ends point to: see newTokenBlock
}

// newTokenBlock makes a block of tokens, the first numbered first, with
// their end functions, in one allocation.
//
// A token's end function is the method value tok.end: a closure Go
// allocates, a pointer to two words, the code of a wrapper that calls the
// method and the receiver. Made one a token, a block's end functions
// would take 4,096 allocations (which a chain's first span, or a block
// added while pinned, would wait for, and the collector would scan); the
// block holds the closures instead, laid out as Go lays them out, which
// endCode checks once (a Go that lays them out otherwise gets method
// values).
func newTokenBlock(l *chain, first int) *tokenBlock {
	b := new(tokenBlock)
	for i := range b.tokens {
		b.tokens[i] = spanToken{l: l, id: l.id<<32 | uint64(first+i)}
		if endCode == 0 {
			b.ends[i] = b.tokens[i].end
			continue
		}
		b.closures[i] = endClosure{code: endCode, tok: &b.tokens[i]}
		p := unsafe.Pointer(&b.closures[i])
		b.ends[i] = *(*func(...Arg))(unsafe.Pointer(&p))
	}
	return b
}

// An endClosure is laid out as the closure of a method value tok.end.
type endClosure struct {
	code uintptr
	tok  *spanToken
}

// endCode is the code of the wrapper of the method value tok.end, read
// from one Go made, or 0 if that one is not laid out as an endClosure.
var endCode uintptr

func init() {
	tok := new(spanToken)
	f := tok.end
	if c := *(**endClosure)(unsafe.Pointer(&f)); c.tok == tok {
		endCode = c.code
	}
}

// held is the state of a token held by goroutine gid's span.
func held(gid uint64) uint64 { return gid<<1 | 1 }

// free is the state of a token freed after starts span starts on its chain.
func free(starts uint64) uint64 { return (starts + 1) << 1 }

// reusable reports whether a token in state st may be handed out after
// starts span starts on its chain.
func reusable(st, starts uint64) bool {
	return st == 0 || st&1 == 0 && starts-(st>>1-1) >= reuseAfter
}

// take hands out a free token of l to goroutine gid and returns its index
// and end function. It runs pinned to l's P: its only producer.
func (l *chain) take(gid uint64) (uint64, func(...Arg)) {
	blocks := *l.blocks.Load()
	i := loadAcquire(&l.next)
	for {
		if i >= uint64(len(blocks))*tokenBlockSize {
			blocks, i = l.lapEnd(blocks)
		}
		b := blocks[i/tokenBlockSize]
		tok := &b.tokens[i%tokenBlockSize]
		if starts := l.starts; reusable(loadAcquire(&tok.state), starts) {
			storePlain(&tok.state, held(gid)) // published with the head; the end's CAS orders it
			storePlain(&l.next, i+1)
			storePlain(&l.starts, starts+1)
			return i, b.ends[i%tokenBlockSize]
		}
		l.lapPassed++
		i++
	}
}

// lapEnd ends a lap of l's tokens: it returns the blocks and the index
// the next lap starts at, after adding blocks if the lap passed over more
// tokens than it handed out (see the note above).
func (l *chain) lapEnd(blocks []*tokenBlock) ([]*tokenBlock, uint64) {
	passed, taken := l.lapPassed, l.starts-l.lapStarts
	l.lapPassed, l.lapStarts = 0, l.starts
	if passed <= taken {
		return blocks, 0
	}
	// Allocating while pinned is allowed; it happens only as the spans
	// open at once on this P reach a new high.
	first := len(blocks) * tokenBlockSize
	grown := blocks[:len(blocks):len(blocks)]
	for n := (passed - taken + tokenBlockSize - 1) / tokenBlockSize; n > 0; n-- {
		grown = append(grown, newTokenBlock(l, len(grown)*tokenBlockSize))
	}
	l.blocks.Store(&grown)
	return grown, uint64(first)
}

// token returns l's token at index i.
func (l *chain) token(i uint64) *spanToken {
	return &(*l.blocks.Load())[i/tokenBlockSize].tokens[i%tokenBlockSize]
}

// end records the end of the span holding s, if the caller's goroutine
// holds it: see the note above.
func (s *spanToken) end(args ...Arg) {
	gid := goroutineID()
	if !swapWord(&s.state, held(gid), free(loadAcquire(&s.l.starts))) {
		s.l.r.unmatchedEnd(gid, loadAcquire(&s.state))
		return
	}
	if len(args) == 0 {
		s.l.r.put(gid, kindEnd, 0, "", s.id, 1, nil)
		return
	}
	s.l.r.record(gid, kindEnd, 0, catScope{}, "", s.id, args)
}

// unmatchedEnd counts an end function called by goroutine gid on a token
// whose state is state, and keeps the first such misuse for the error
// handler.
func (r *recorder) unmatchedEnd(gid, state uint64) {
	r.unmatched.Inc()
	r.refusal.keep(misuseEnd, func() error {
		switch {
		case state&1 == 0:
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
func (r *recorder) release(token, gid uint64) {
	lp := r.chains.Load()
	if lp == nil {
		return
	}
	if ls, p := *lp, token>>32; p < uint64(len(ls)) && ls[p] != nil {
		l := ls[p]
		swapWord(&l.token(token&(1<<32-1)).state, held(gid), free(loadAcquire(&l.starts)))
	}
}

// maxTokens is the most tokens a chain holds while at most held of its
// spans are open at once (see take): a whole number of blocks.
func maxTokens(held int) int {
	return ((4*held+2*reuseAfter)/tokenBlockSize + 2) * tokenBlockSize
}
