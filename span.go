package tracer

// Span starts a span on the calling goroutine's track and returns the
// function that ends it. The usual form measures the rest of the function:
//
//	defer tracer.Span("decode", tracer.Int("bytes", n))()
//
// Mind the final (): defer tracer.Span("decode") compiles too, but starts
// the span when the function returns and never ends it.
//
// What is known only when the span ends, a status or a size, goes to the
// returned function, and joins the span's args (Category and Namespace args
// there are ignored):
//
//	end := tracer.Span("request", tracer.String("route", route))
//	...
//	end(tracer.Int("status", code), tracer.Int("bytes", n))
//
// Calling it with args costs one allocation (Go cannot see that a function
// value keeps nothing of its args); without args, nothing.
//
// Spans nest on their goroutine's track, so they end in the reverse order
// they began: a span still open when one begun before it ends cannot be
// drawn nested, and is not written (counted in Stats.Forgotten and
// reported once to the error handler) unless its begin event was already
// written, in which case it ends with the outer span.
//
// Call the returned function once, on the goroutine that started the
// span. A second call (a deferred end after an early one on an error
// path), a call on another goroutine, or a call after the span was
// forgotten ends nothing: it is counted in Stats.Unmatched and reported
// once to the error handler, and no other span is touched. A span never
// ended is written with its start and no end, and Close reports it.
//
// Any number of spans may be open at once, up to a million, at about 200
// bytes each while they are open. A span that ends within a flush
// interval is written as one complete ("X") event; one still open when a
// flush comes and older than the flush interval is written as a begin
// ("B") event at once and an end ("E") event later, so a crash in the
// middle of long work still shows what was running.
//
// Span allocates nothing, on or off: the returned function is made in
// advance. When the default tracer is not running, or its buffers are full
// on a stalled sink, Span returns a no-op function.
func Span(name string, args ...Arg) func(...Arg) {
	if t := (*Tracer)(std.Load()); t != nil {
		return t.startSpan(name, args)
	}
	return nop
}

// Span starts a span on t; see the package-level Span.
func (t *Tracer) Span(name string, args ...Arg) func(...Arg) {
	if t == nil {
		return nop
	}
	return t.startSpan(name, args)
}

// LongSpan is Span for work you want to see while it runs: a migration, a
// phase of a batch job, a request you expect to hang. Its start is in the
// file from the next flush, so a trace read before it ends, or left by a
// crash, shows it running from its start to the end of the trace. (Span
// shows that too, but only once the span is older than the flush
// interval.) Spans still open inside it when its start is written become B and E
// events too, so that B and E events nest in file order. It costs one
// event more in the file than a short Span: a start and an end (B and E
// events, the end repeating the name, which Chrome's DevTools needs).
func LongSpan(name string, args ...Arg) func(...Arg) {
	if t := (*Tracer)(std.Load()); t != nil {
		return t.startBegin(name, args)
	}
	return nop
}

// LongSpan starts a span on t that is written as B and E; see the
// package-level LongSpan.
func (t *Tracer) LongSpan(name string, args ...Arg) func(...Arg) {
	if t == nil {
		return nop
	}
	return t.startBegin(name, args)
}

// startSpan and startBegin record the start of a span. Their short
// parameter lists keep Span and LongSpan within the inliner's budget, so that
// when tracing is off they cost one atomic load and a branch in the caller.
//
//go:noinline
func (t *Tracer) startSpan(name string, args []Arg) func(...Arg) {
	var end func(...Arg)
	if len(args) == 0 {
		end = t.put(goroutineID(), kindSpan, 0, name, 0, 1, nil)
	} else {
		end = t.record(goroutineID(), kindSpan, 0, catScope{}, name, 0, args)
	}
	if end != nil {
		return end
	}
	return nop
}

//go:noinline
func (t *Tracer) startBegin(name string, args []Arg) func(...Arg) {
	if end := t.record(goroutineID(), kindBegin, 0, catScope{}, name, 0, args); end != nil {
		return end
	}
	return nop
}
