// Package mutextrace is the baseline the tracer improves on: the Timer design
// of the C++ "Introduction to Chrome Tracing" post
// (shared/reference/chrome-tracing-cpp-timer.txt), written in Go.
//
// As in that design, a Timer keeps its name and start time; Stop reads the
// clock again, takes one global mutex and appends a record to one global
// slice (the C++ std::vector), and WriteTrace encodes everything at the end
// of the run. Nothing reaches a file before WriteTrace, memory grows with
// every event, and a crash loses the whole trace.
//
// The port is faithful where it matters for cost and kind where Go allows:
// std::chrono::steady_clock becomes the monotonic clock behind time.Since
// (the cheapest clock read Go offers), std::this_thread::get_id becomes the
// goroutine id (petermattis/goid, 1-2 ns), and records hold strings without
// copying them, since Go strings are immutable. Args, counters and instants
// are not in the C++ post; they are added in the same style (a record
// appended under the mutex) so the baseline can run every scenario.
package mutextrace

import (
	"bufio"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/petermattis/goid"
)

// An Arg is a key and a string or integer value attached to an event.
type Arg struct {
	Key   string
	Str   string
	Num   int64
	IsNum bool
}

// String returns a string Arg.
func String(key, value string) Arg { return Arg{Key: key, Str: value} }

// Int returns an integer Arg.
func Int(key string, value int) Arg { return Arg{Key: key, Num: int64(value), IsNum: true} }

// eventRecord is the C++ EventRecord: times in seconds since program start.
// Args, which the C++ record does not have, live in a second slice that
// grows alongside, so the record stays as small as the C++ one.
type eventRecord struct {
	timestamp float64 // seconds
	duration  float64 // seconds, 'X' only
	name      string
	tid       int64
	argOff    uint32 // first arg in eventArgs
	nargs     uint16
	eventType byte
}

var (
	programStart = time.Now()

	eventMu   sync.Mutex
	events    []eventRecord
	eventArgs []Arg
)

// inlineArgs is how many args a Timer holds without allocating.
const inlineArgs = 2

// A Timer measures one span, as the C++ Timer class does. It lives on the
// caller's stack.
type Timer struct {
	start time.Duration // since programStart, monotonic
	name  string
	nargs int
	args  [inlineArgs]Arg
	more  []Arg // args past inlineArgs, rare
}

// Start starts a Timer; call Stop on it to record the span:
//
//	t := mutextrace.Start("decode")
//	defer t.Stop()
func Start(name string, args ...Arg) Timer {
	t := Timer{name: name}
	t.nargs = copy(t.args[:], args)
	if len(args) > inlineArgs {
		t.more = append([]Arg(nil), args[inlineArgs:]...)
	}
	t.start = time.Since(programStart)
	return t
}

// Stop records the span as a complete ('X') event.
func (t *Timer) Stop() {
	stop := time.Since(programStart)
	tid := goid.Get()
	eventMu.Lock()
	events = append(events, eventRecord{
		timestamp: t.start.Seconds(),
		duration:  (stop - t.start).Seconds(),
		name:      t.name,
		tid:       tid,
		argOff:    uint32(len(eventArgs)),
		nargs:     uint16(t.nargs + len(t.more)),
		eventType: 'X',
	})
	eventArgs = append(append(eventArgs, t.args[:t.nargs]...), t.more...)
	eventMu.Unlock()
}

// Instant records a thread-scoped instant ('i') event.
func Instant(name string, args ...Arg) { add('i', name, args) }

// Counter records a counter ('C') event, one series per Arg.
func Counter(name string, series ...Arg) { add('C', name, series) }

func add(kind byte, name string, args []Arg) {
	now := time.Since(programStart)
	tid := goid.Get()
	eventMu.Lock()
	events = append(events, eventRecord{
		timestamp: now.Seconds(),
		name:      name,
		tid:       tid,
		argOff:    uint32(len(eventArgs)),
		nargs:     uint16(len(args)),
		eventType: kind,
	})
	eventArgs = append(eventArgs, args...)
	eventMu.Unlock()
}

// Len returns the number of events recorded so far.
func Len() int {
	eventMu.Lock()
	defer eventMu.Unlock()
	return len(events)
}

// Reset forgets every event recorded so far and releases their memory. The
// C++ design has no such call; the benchmarks use it between runs so one
// run's events do not weigh on the next.
func Reset() {
	eventMu.Lock()
	events, eventArgs = nil, nil
	eventMu.Unlock()
}

// Reserve makes room for events more events and args more args without
// growing the slices, and touches the new memory so its pages are mapped.
// The C++ design has no such call: its vector grows as events come. The
// benchmarks use it so they measure the recording path and not the
// kernel's page faults on freshly grown memory, which on a VM cost several
// times the recording itself and would flatter every competitor.
func Reserve(nevents, nargs int) {
	eventMu.Lock()
	defer eventMu.Unlock()
	events = reserve(events, nevents)
	eventArgs = reserve(eventArgs, nargs)
}

func reserve[T any](s []T, n int) []T {
	if cap(s)-len(s) >= n {
		return s
	}
	grown := make([]T, len(s)+n)
	copy(grown, s)
	var zero T
	for i := len(s); i < len(grown); i++ {
		grown[i] = zero // a write to every page maps it now
	}
	return grown[:len(s)]
}

// WriteTrace writes every event recorded so far as a Chrome Trace Event
// Format JSON object, mapping goroutine ids to small track numbers as the
// C++ writeTrace maps thread ids.
func WriteTrace(w io.Writer) error {
	eventMu.Lock()
	defer eventMu.Unlock()
	bw := bufio.NewWriter(w)
	tids := map[int64]int{}
	var b []byte
	b = append(b, "{\n\"traceEvents\": [\n"...)
	for i := range events {
		er := &events[i]
		small, ok := tids[er.tid]
		if !ok {
			small = len(tids)
			tids[er.tid] = small
		}
		b = append(b, `{"name":`...)
		b = strconv.AppendQuote(b, er.name)
		b = append(b, `,"ph":"`...)
		b = append(b, er.eventType)
		b = append(b, `","pid":1,"tid":`...)
		b = strconv.AppendInt(b, int64(small), 10)
		b = append(b, `,"ts":`...)
		b = strconv.AppendFloat(b, er.timestamp*1e6, 'f', 3, 64)
		switch er.eventType {
		case 'X':
			b = append(b, `,"dur":`...)
			b = strconv.AppendFloat(b, er.duration*1e6, 'f', 3, 64)
		case 'i':
			b = append(b, `,"s":"t"`...)
		}
		if er.nargs > 0 {
			b = append(b, `,"args":{`...)
			for j, a := range eventArgs[er.argOff : er.argOff+uint32(er.nargs)] {
				if j > 0 {
					b = append(b, ',')
				}
				b = strconv.AppendQuote(b, a.Key)
				b = append(b, ':')
				if a.IsNum {
					b = strconv.AppendInt(b, a.Num, 10)
				} else {
					b = strconv.AppendQuote(b, a.Str)
				}
			}
			b = append(b, '}')
		}
		b = append(b, '}')
		if i < len(events)-1 {
			b = append(b, ',')
		}
		b = append(b, '\n')
		if len(b) > 32<<10 {
			if _, err := bw.Write(b); err != nil {
				return err
			}
			b = b[:0]
		}
	}
	b = append(b, "]\n}\n"...)
	if _, err := bw.Write(b); err != nil {
		return err
	}
	return bw.Flush()
}
