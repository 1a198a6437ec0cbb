package tables

import (
	"runtime"
	"unsafe"

	"github.com/gotracer/tracer/internal/tracefile"
)

// The read-ahead: a file's JSON is read (tracefile.Reader, about a third
// of an export's CPU) on a goroutine of its own, which hands the events
// to the Builder in batches, so that reading, building the rows and
// encoding them (Pipe) run as three stages on two cores.
//
// The Reader's events point into its read buffer, valid until its next
// Next: the reading goroutine copies each event, its bytes and its args
// into a batch, and a batch goes back to the reader (a bounded pool of
// them) only once the Builder has added all its events. The Builder
// keeps nothing of an event past Add (it interns or copies what it
// keeps), as with a Reader's own events.
const (
	readBatchEvents = 1024      // the most events in a batch
	readBatchBytes  = 256 << 10 // and of their JSON text, but for one larger event
	readBatches     = 4         // the batches in the pool: read, queued and being added
)

// An eventBatch is events copied out of a Reader: their byte slices
// point into raw, their Args into args.
type eventBatch struct {
	evs  []tracefile.Event
	args []tracefile.Arg
	raw  []byte
	err  error // after the events: io.EOF at the end, or the error that stopped the reader
}

func newEventBatch(events, bytes int) *eventBatch {
	return &eventBatch{
		evs:  make([]tracefile.Event, 0, events),
		args: make([]tracefile.Arg, 0, events*4),
		raw:  make([]byte, 0, bytes),
	}
}

// fits reports whether e can be copied into the batch without growing
// its buffers (which would move the events copied before).
func (b *eventBatch) fits(e *tracefile.Event) bool {
	return len(b.evs) < cap(b.evs) && len(b.raw)+len(e.Raw) <= cap(b.raw) && len(b.args)+len(e.Args) <= cap(b.args)
}

// add copies e into the batch, which must be empty unless e fits.
func (b *eventBatch) add(e *tracefile.Event) {
	if len(b.evs) == 0 {
		if len(e.Raw) > cap(b.raw) {
			b.raw = make([]byte, 0, len(e.Raw))
		}
		if len(e.Args) > cap(b.args) {
			b.args = make([]tracefile.Arg, 0, len(e.Args))
		}
	}
	off := len(b.raw)
	b.raw = append(b.raw, e.Raw...)
	to := b.raw[off:len(b.raw):len(b.raw)]
	from := e.Raw
	b.evs = append(b.evs, *e)
	c := &b.evs[len(b.evs)-1]
	c.Raw = to
	c.Ph = rebase(e.Ph, from, to)
	rebaseStr(&c.Name, from, to)
	rebaseStr(&c.Cat, from, to)
	rebaseNum(&c.Pid, from, to)
	rebaseNum(&c.Tid, from, to)
	c.ID = rebase(e.ID, from, to)
	rebaseStr(&c.Scope, from, to)
	rebaseStr(&c.BP, from, to)
	rebaseStr(&c.S, from, to)
	if e.Args != nil {
		start := len(b.args)
		b.args = append(b.args, e.Args...)
		args := b.args[start:len(b.args):len(b.args)]
		for i := range args {
			a := &args[i]
			rebaseStr(&a.Key, from, to)
			a.Value = rebase(a.Value, from, to)
			rebaseStr(&a.Str, from, to)
		}
		c.Args = args
	}
}

func rebaseStr(s *tracefile.Str, from, to []byte) { s.Raw = rebase(s.Raw, from, to) }

func rebaseNum(n *tracefile.Num, from, to []byte) {
	n.Str = rebase(n.Str, from, to)
	n.Raw = rebase(n.Raw, from, to)
}

// rebase returns the bytes of s, a slice of from, in to, a copy of from;
// a copy of its own if s is not in from (the scanner takes every value
// from the event's text: not expected), nil if s is nil.
func rebase(s, from, to []byte) []byte {
	if s == nil {
		return nil
	}
	if len(from) > 0 {
		d := uintptr(unsafe.Pointer(unsafe.SliceData(s))) - uintptr(unsafe.Pointer(unsafe.SliceData(from)))
		if d <= uintptr(len(from)) && d+uintptr(len(s)) <= uintptr(len(from)) {
			i := int(d)
			return to[i : i+len(s) : i+len(s)]
		}
	}
	return append(make([]byte, 0, len(s)), s...)
}

// reset empties the batch for reuse. Its events keep their slices,
// which point into raw and args, the batch's own (clearing them cost 1%
// of an export's CPU).
func (b *eventBatch) reset() {
	b.evs, b.args, b.raw, b.err = b.evs[:0], b.args[:0], b.raw[:0], nil
}

// readAhead is the size of the read-ahead: events and bytes a batch,
// batches in the pool; zero values are the defaults, batches < 0 reads
// on the Builder's goroutine.
type readAhead struct {
	events, bytes, batches int
}

func (ra readAhead) inline() bool {
	if ra.batches == 0 {
		// Only worth it with a core for each of reading and building.
		return runtime.GOMAXPROCS(0) < 2
	}
	return ra.batches < 0
}

// each calls add with each event r reads, in order, read ahead on a
// goroutine of its own; it returns the first error of add or of r
// (io.EOF at the end, after the last event), and whether it was r's.
func (ra readAhead) each(r *tracefile.Reader, add func(*tracefile.Event) error) (read bool, err error) {
	if ra.inline() {
		for {
			ev, err := r.Next()
			if err != nil {
				return true, err
			}
			if err := add(ev); err != nil {
				return false, err
			}
		}
	}
	events, bytes, batches := ra.events, ra.bytes, ra.batches
	if events <= 0 {
		events = readBatchEvents
	}
	if bytes <= 0 {
		bytes = readBatchBytes
	}
	if batches <= 0 {
		batches = readBatches
	}
	free := make(chan *eventBatch, batches)
	full := make(chan *eventBatch, batches)
	stop := make(chan struct{})
	done := make(chan struct{})
	for range batches {
		free <- newEventBatch(events, bytes)
	}
	go func() {
		defer close(done)
		// take is the next batch from the pool, nil once stopped.
		take := func() *eventBatch {
			select {
			case b := <-free:
				b.reset()
				return b
			case <-stop:
				return nil
			}
		}
		give := func(b *eventBatch) bool {
			select {
			case full <- b:
				return true
			case <-stop:
				return false
			}
		}
		b := take()
		for b != nil {
			ev, err := r.Next()
			if err != nil {
				b.err = err
				give(b)
				return
			}
			if len(b.evs) > 0 && !b.fits(ev) {
				// Hand over what is read; ev goes into the next batch.
				if !give(b) {
					return
				}
				if b = take(); b == nil {
					return
				}
			}
			b.add(ev)
		}
	}()
	defer func() {
		close(stop)
		<-done // the reader is the goroutine's until it stops
	}()
	for b := range full {
		for i := range b.evs {
			if err := add(&b.evs[i]); err != nil {
				return false, err
			}
		}
		if b.err != nil {
			return true, b.err
		}
		free <- b // only now: the Builder is done with its events
	}
	panic("unreachable: the last batch holds an error")
}
