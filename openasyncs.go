package tracer

// Async operations open across a rotation.
//
// An async operation's "b" and "e" events are written as they come. With
// rotation, an operation begun in one file and ended in a later one would
// leave a "b" without its "e" in the first and an "e" without its "b" in
// the other: chrome://tracing warns of both, and neither viewer draws the
// operation in the second. So when the files rotate, the flusher keeps
// each open operation's "b" until its "e" comes: a file that ends ends
// the operations still open (an "e" at the cut, as a flight recording's
// dump does), and the next file begins them again (the "b" at its time),
// as it does a span's B event. It keeps at most maxOpenAsyncs: past them,
// it forgets half of them (their "e" in a later file is unmatched there).

// maxOpenAsyncs is the most async operations the flusher keeps the "b"
// of, open across a rotation: about 100 bytes each.
const maxOpenAsyncs = 1 << 16

// An asyncOp names an async operation: its id and the extra slot's
// category, scope and track, as its events carry them.
type asyncOp struct{ id, meta uint64 }

// An openAsync is the "b" of an open async operation: its head and the
// rest of its slots, copied out of the chain.
type openAsync struct {
	head slot
	rest []slot
}

// openAsyncs holds the open async operations' "b" events. Operations
// nest on one id (a child begun with Async.Begin shares its parent's), so
// an id holds a stack of them, outermost first.
type openAsyncs struct {
	m     map[asyncOp][]openAsync
	count int // the operations held
}

// note remembers the "b" of an async operation, and forgets it at its
// "e"; other events it leaves alone.
func (o *openAsyncs) note(h *slot, rest []slot) {
	switch h.kind() {
	case kindAsyncBegin:
		if o.m == nil {
			o.m = map[asyncOp][]openAsync{}
		}
		if o.count >= maxOpenAsyncs {
			for k, st := range o.m {
				if o.count <= maxOpenAsyncs/2 {
					break
				}
				o.count -= len(st)
				delete(o.m, k)
			}
		}
		x := &rest[0]
		k := asyncOp{x.num, x.meta}
		o.m[k] = append(o.m[k], openAsync{head: *h, rest: append([]slot(nil), rest...)})
		o.count++
	case kindAsyncEnd:
		x := &rest[0]
		k := asyncOp{x.num, x.meta}
		if st := o.m[k]; len(st) > 1 {
			o.m[k] = st[:len(st)-1]
			o.count--
		} else if len(st) == 1 {
			delete(o.m, k)
			o.count--
		}
	}
}

// reopen appends again the "b" of each open async operation, at the top
// of a new file.
func (o *openAsyncs) reopen(enc *encoder) {
	for _, st := range o.m {
		for i := range st {
			enc.event(&st[i].head, st[i].rest)
		}
	}
}

// cut appends an "e" at nanotime at, without args, for each open async
// operation, at the end of a file that rotation ends.
func (o *openAsyncs) cut(enc *encoder, at int64) {
	for _, st := range o.m {
		for i := len(st) - 1; i >= 0; i-- { // innermost first
			e := st[i].head.asyncEndAt(at)
			enc.event(&e, st[i].rest[:1])
		}
	}
}
