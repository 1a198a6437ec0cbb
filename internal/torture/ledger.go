//go:build linux

package main

import (
	"sync/atomic"

	"github.com/gotracer/tracer"
)

// The ledger: what the workload recorded, counted by the workload itself.
//
// Every event the workload records carries one arg, "id", that names it:
// which tracer it went to, which worker recorded it, its class and its
// sequence number among that worker's events of that class. The checker
// reads the ids back from the files and compares them with the counts the
// child reports. An id fits in 53 bits, so that any JSON reader reads it
// exactly.
//
//	tracer (3 bits) | worker (12 bits) | class (4 bits) | seq (34 bits)

// class sorts recorded events by what the files must show of them.
type class uint8

const (
	clSpan     class = iota // a span ended on its goroutine, in order: X, or B and E
	clHeld                  // a span held for a goroutine's life, a LongSpan, one never ended: B (and E), or X
	clInstant               // an instant on the recording goroutine: i
	clHandle                // a SpanHandle: X, B and E, or b and e
	clAsync                 // an async operation's b or n
	clFlow                  // a flow's s
	clCounter               // a counter: C
	clHook                  // recorded by the tracer's hooks (String, the error handler, the writer)
	clOptional              // perhaps not recorded: its category may be off, or no default tracer was running
	numClasses
)

var classNames = [numClasses]string{"span", "held", "instant", "handle", "async", "flow", "counter", "hook", "optional"}

func (c class) String() string { return classNames[c] }

// durable reports whether an event of class c is in a killed child's
// file once it was recorded more than a flush interval (two, for held
// spans, which are written as B at the first flush they are older than an
// interval) before the kill. Handles wait for their end, hooks run when
// the flusher encodes, and optional events may never be recorded.
func (c class) durable() bool {
	return c == clSpan || c == clHeld || c == clInstant || c == clAsync || c == clFlow || c == clCounter
}

const (
	seqBits    = 34
	classBits  = 4
	workerBits = 12
	tracerBits = 3
	maxWorkers = 1 << workerBits
	// rivalTracer is the tracer index of the rival process's events.
	rivalTracer = 1<<tracerBits - 1
)

// makeID returns the id of an event.
func makeID(tr, worker int, c class, seq uint64) int64 {
	return int64(tr)<<(workerBits+classBits+seqBits) | int64(worker)<<(classBits+seqBits) | int64(c)<<seqBits | int64(seq)
}

// splitID is makeID's inverse.
func splitID(id int64) (tr, worker int, c class, seq uint64) {
	seq = uint64(id) & (1<<seqBits - 1)
	c = class(id >> seqBits & (1<<classBits - 1))
	worker = int(id >> (classBits + seqBits) & (1<<workerBits - 1))
	tr = int(id >> (workerBits + classBits + seqBits))
	return
}

// A ledger counts what the workload recorded into one tracer.
type ledger struct {
	tracer      int
	allOptional bool // every event may have gone nowhere (Start/Stop cycles)
	workers     []atomic.Pointer[worker]
	nworkers    atomic.Int32

	// Misuse the workload commits, which the tracer must count.
	staleEnds   atomic.Uint64 // span end functions called a second time, or late on a goroutine holding no span
	handleEnds2 atomic.Uint64 // SpanHandles ended a second time
}

func newLedger(tr, workers int, allOptional bool) *ledger {
	return &ledger{tracer: tr, allOptional: allOptional, workers: make([]atomic.Pointer[worker], workers)}
}

// A worker is one recorder of events: a goroutine, or a group of
// short-lived goroutines that share its counters (a server's requests).
type worker struct {
	l    *ledger
	idx  int
	name string
	seq  [numClasses]atomic.Uint64
	// started counts span starts, for the memory check's growth test.
	started atomic.Uint64
	prog    *progress
	// The worker's own (one goroutine): the counts last sent in a
	// durability mark, and when.
	marked   [numClasses]uint64
	lastMark int64
}

// newWorker adds a worker to l.
func (l *ledger) newWorker(name string, prog *progress) *worker {
	i := int(l.nworkers.Add(1)) - 1
	if i >= maxWorkers || i >= len(l.workers) {
		panic("torture: too many workers for one tracer")
	}
	w := &worker{l: l, idx: i, name: name, prog: prog}
	l.workers[i].Store(w)
	return w
}

// id returns the "id" arg of the next event of class c the worker records.
func (w *worker) id(c class) tracer.Arg { return tracer.Int64("id", w.idValue(c)) }

// idValue returns the id of the next event of class c the worker records.
func (w *worker) idValue(c class) int64 {
	if w.l.allOptional {
		c = clOptional
	}
	n := w.seq[c].Add(1) - 1
	return makeID(w.l.tracer, w.idx, c, n)
}

// spanID is id for a span start, which the growth test counts.
func (w *worker) spanID(c class) tracer.Arg {
	w.started.Add(1)
	return w.id(c)
}

// counts returns the worker's counts per class.
func (w *worker) counts() [numClasses]uint64 {
	var n [numClasses]uint64
	for c := range n {
		n[c] = w.seq[c].Load()
	}
	return n
}

// each calls f for every worker of the ledger.
func (l *ledger) each(f func(*worker)) {
	n := min(int(l.nworkers.Load()), len(l.workers))
	for i := range n {
		if w := l.workers[i].Load(); w != nil {
			f(w)
		}
	}
}

// spansStarted sums the span starts of every worker.
func (l *ledger) spansStarted() uint64 {
	var n uint64
	l.each(func(w *worker) { n += w.started.Load() })
	return n
}
