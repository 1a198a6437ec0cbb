package tracer

// Async operations open at a file's end.
//
// An async operation's "b" and "e" events are written as they come. One
// still open when the file ends, at Close or at a rotation, leaves a "b"
// without its "e", which chrome://tracing warns of and leaves out (Perfetto
// draws it to the end of the trace); and with rotation, its "e" in a
// later file is one without its "b" there, which neither viewer draws.
// So the flusher keeps each open operation's "b" until its "e" comes:
// a file that ends ends the operations still open (an "e" at that time,
// as a flight recording's dump does), and with rotation the next file
// begins them again (the "b" at its time, with its args), as it does a
// span's B event. It keeps at most maxOpenAsyncs: past them, it forgets
// half of them (they stay without an "e" there).

// maxOpenAsyncs is the most async operations the flusher keeps the "b"
// of: about 100 bytes each.
const maxOpenAsyncs = 1 << 16

// An asyncOp names an async operation: its id and the extra slot's
// category, scope and track, as its events carry them.
type asyncOp struct{ id, meta uint64 }

// An openAsync is the "b" of an open async operation: its head, its extra
// slot (id, category, scope), and, with rotation, its args, copied out of
// the chain.
type openAsync struct {
	head  slot
	extra slot
	args  []slot
}

// openAsyncs holds the open async operations' "b" events. Operations
// nest on one id (a child begun with Async.Begin shares its parent's), so
// an id holds a stack of them, outermost first.
type openAsyncs struct {
	m        map[asyncOp][]openAsync
	count    int  // the operations held
	keepArgs bool // for reopen: the files rotate
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
		op := openAsync{head: *h, extra: *x}
		if o.keepArgs && len(rest) > 1 {
			op.args = append([]slot(nil), rest[1:]...)
		}
		o.m[k] = append(o.m[k], op)
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
func (o *openAsyncs) reopen(enc *encoder) { o.begins(enc, false, 0) }

// reopenFrom appends the "b" of each open async operation at the head of
// a tee's trace whose window starts at from: one that began before it
// begins just before it, a nanosecond before the operation nested in it
// on the same id (see attachedTee.clips).
func (o *openAsyncs) reopenFrom(enc *encoder, from int64) { o.begins(enc, true, from) }

// begins appends the "b" of each open async operation, outermost first,
// clipped to from if clip is set.
func (o *openAsyncs) begins(enc *encoder, clip bool, from int64) {
	var rest []slot
	for _, st := range o.m {
		for i := range st {
			rest = append(append(rest[:0], st[i].extra), st[i].args...)
			h := st[i].head
			if clip {
				h.setNanotime(max(h.at(), from-int64(len(st)-i)))
			}
			enc.event(&h, rest)
		}
	}
}

// cut appends an "e" at nanotime at, without args, for each open async
// operation, at the end of a file: one that rotation ends, or Close.
func (o *openAsyncs) cut(enc *encoder, at int64) {
	for _, st := range o.m {
		for i := len(st) - 1; i >= 0; i-- { // innermost first
			e := st[i].head.asyncEndAt(at)
			x := [1]slot{st[i].extra}
			enc.event(&e, x[:])
		}
	}
}
