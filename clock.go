package tracer

import (
	"bytes"
	"math"
	"math/bits"
	"os"
	"runtime"
	"strings"
	"sync"
	_ "unsafe" // for go:linkname
)

// The clock.
//
// Every event is stamped on the record path with a raw reading, converted
// to nanotime (the runtime's monotonic clock, the one time.Since reads)
// by the flusher, off the hot path. Where the CPU has a counter that runs
// at a constant rate, in step on every CPU, and that the OS itself keeps
// time with (Linux's clocksource "tsc" on amd64, or the constant_tsc and
// nonstop_tsc flags; the generic timer on arm64), the raw reading is the
// counter's: RDTSC costs 10 ns on the 2-core VM the project is measured
// on, where runtime.nanotime costs 26, and a span reads the clock twice.
// Elsewhere, with TRACER_CLOCK=nanotime, or once the flusher has found
// the counter unreliable, it is nanotime, marked as such.
//
// The flusher converts a counter reading by interpolating between
// anchors: pairs of a counter reading and a nanotime reading taken
// together, one at the start of the trace and one at each pass's cut.
// Every event a pass takes was stamped before its cut, so it lies between
// two anchors, and its conversion is within the anchors' own error (tens
// of nanoseconds) plus however far nanotime strays from a straight line
// between them (NTP's adjustments: well under a microsecond over a pass).
// A conversion never changes once made, the function is increasing, and
// anchors are nanotime readings, so timestamps stay monotonic per
// goroutine and agree with nanotime, which is what the goruntime
// module's alignment with the Go runtime's own events relies on.

//go:linkname nanotime runtime.nanotime
func nanotime() int64

// Marks in a raw reading's top bits. Counter readings and nanotime are
// below 2^62 for a century of uptime.
const (
	rawNanotime = 1 << 63 // a nanotime reading, not the counter's
	rawDone     = 1 << 62 // converted by the flusher: the rest is nanotime
)

// counterOn, when not 0, tells the record path to read the counter rather
// than nanotime. It is set once, by the first tracer, if the counter can
// be trusted, and cleared for good if a flusher finds it unreliable. A
// plain word (see ordering.go): atomic.Bool's Load costs now the
// inliner's budget.
var counterOn uint64

// now returns the raw reading that stamps an event.
func now() uint64 {
	if loadAcquire(&counterOn) != 0 {
		return uint64(cputicks())
	}
	return uint64(nanotime()) | rawNanotime
}

var counterOnce sync.Once

// chooseClock decides, once per process, whether the record path reads the
// counter.
func chooseClock() {
	counterOnce.Do(func() {
		if counterTrusted() {
			storeWord(&counterOn, 1)
		}
	})
}

// counterTrusted reports whether this machine's counter can stamp events:
// the OS keeps time with it, so it is invariant and in step across CPUs,
// and the user did not ask for nanotime.
func counterTrusted() bool {
	if !haveCounter || runtime.GOOS != "linux" || os.Getenv(EnvClock) == "nanotime" {
		return false
	}
	src, _ := os.ReadFile("/sys/devices/system/clocksource/clocksource0/current_clocksource")
	switch strings.TrimSpace(string(src)) {
	case "tsc":
		return runtime.GOARCH == "amd64"
	case "arch_sys_counter":
		return runtime.GOARCH == "arm64"
	}
	if runtime.GOARCH != "amd64" {
		return false
	}
	// A guest whose kernel keeps time with its hypervisor's clock, on a
	// CPU that says its counter is invariant.
	info, _ := os.ReadFile("/proc/cpuinfo")
	flags := fieldOf(info, "flags")
	return hasWord(flags, "constant_tsc") && hasWord(flags, "nonstop_tsc")
}

// fieldOf returns the value of the first "name : value" line of info.
func fieldOf(info []byte, name string) string {
	for line := range bytes.Lines(info) {
		k, v, ok := bytes.Cut(line, []byte(":"))
		if ok && string(bytes.TrimSpace(k)) == name {
			return string(bytes.TrimSpace(v))
		}
	}
	return ""
}

func hasWord(s, w string) bool {
	for f := range strings.FieldsSeq(s) {
		if f == w {
			return true
		}
	}
	return false
}

// anchors is how many anchors a timebase keeps: the events a pass takes
// were stamped after the oldest, unless the writer held the flusher up for
// that many passes; those are converted at the long-run rate.
const anchors = 256

// An anchor is a counter reading and the nanotime of the same moment, and
// the rate to the next anchor, in nanoseconds per tick as a 32.32 fixed
// point number.
type anchor struct {
	tick, ns int64
	mult     uint64
	width    int64 // ticks between the two counter readings around ns
}

// A timebase converts a tracer's raw readings to nanotime. It belongs to
// the flusher, under the flusher's mu.
type timebase struct {
	ring   [anchors]anchor
	n      int    // anchors taken; the newest is ring[(n-1)%anchors]
	first  anchor // the trace's start, for the long-run rate
	long   uint64 // the long-run rate, first to newest, 32.32
	failed bool   // the counter was found unreliable
}

// start takes the first anchor and returns its nanotime, the trace's ts 0.
func (tb *timebase) start() int64 {
	a := readAnchor()
	tb.ring[0], tb.first, tb.n = a, a, 1
	return a.ns
}

// readAnchor reads the counter and nanotime at one moment: the counter's
// reading is the middle of two that bracket nanotime's, the closest of a
// few tries (a try the scheduler or the hypervisor cut into is wide), and
// of more while the closest is wider than a good try by far.
func readAnchor() anchor {
	var best anchor
	for try := 0; try < 3 || try < 12 && best.width > anchorWidth; try++ {
		t1 := cputicksOrdered()
		ns := nanotime()
		t2 := cputicksOrdered()
		if a := (anchor{tick: t1 + (t2-t1)/2, ns: ns, width: t2 - t1}); try == 0 || a.width < best.width {
			best = a
		}
	}
	return best
}

// anchorWidth is, in ticks, several times the width of an anchor that
// nothing cut into: 130-180 ticks (50-70 ns) on the VM the project is
// measured on, for a nanotime read and two ordered counter reads; a
// slower counter (arm64's runs at 24 MHz to 1 GHz) rarely needs more
// than three tries anyway.
const anchorWidth = 1000

// newest returns the newest anchor.
func (tb *timebase) newest() *anchor { return &tb.ring[(tb.n-1)%anchors] }

// cut takes an anchor for a pass and returns its nanotime: every event
// stamped before it converts to less, every later one to at least that.
// add also checks the counter against nanotime and, should the counter
// have gone backwards or changed pace, stops the record path reading it.
func (tb *timebase) cut() int64 { return tb.add(readAnchor()) }

// add adds a, the anchor of a pass's cut, and returns its nanotime.
func (tb *timebase) add(a anchor) int64 {
	prev := tb.newest()
	dt, dns := a.tick-prev.tick, a.ns-prev.ns
	if dt <= 0 {
		// The counter stood still or went back: no new anchor (the
		// events after the last one keep converting from it), and no
		// counter from now on. The cut is nanotime: the events not yet
		// converted all read nanotime from here.
		tb.fail()
		return a.ns
	}
	prev.mult = rate(dns, dt)
	tb.ring[tb.n%anchors] = a
	tb.n++
	if span := a.ns - tb.first.ns; span >= 10e6 {
		tb.long = rate(span, a.tick-tb.first.tick)
		// Over a millisecond or more, the counter keeps nanotime's pace
		// to a few parts per million; 1% off is a counter that stopped
		// or jumped (a VM paused without its clock told, a CPU whose
		// counter is not invariant after all).
		// Only where the two anchors' own uncertainty is far less.
		sure := (prev.width+a.width)*500 < dt
		if dns >= 1e6 && sure && (prev.mult > tb.long+tb.long/100 || prev.mult < tb.long-tb.long/100) {
			tb.fail()
		}
	}
	return a.ns
}

// fail stops the record path reading the counter, for every tracer.
func (tb *timebase) fail() {
	tb.failed = true
	storeWord(&counterOn, 0)
}

// longRate returns the long-run rate, or while the trace is young the
// newest segment's.
func (tb *timebase) longRate() uint64 {
	if tb.long != 0 || tb.n < 2 {
		return tb.long
	}
	return tb.ring[(tb.n-2)%anchors].mult
}

// rate returns dns/dt as a 32.32 fixed-point number.
func rate(dns, dt int64) uint64 {
	if dns <= 0 {
		return 0
	}
	q, _ := bits.Div64(uint64(dns)>>32, uint64(dns)<<32, uint64(dt))
	return q
}

// scale returns dt ticks at rate mult, in nanoseconds.
func scale(dt uint64, mult uint64) int64 {
	hi, lo := bits.Mul64(dt, mult)
	return int64(hi<<32 | lo>>32)
}

// fix converts s's raw reading to nanotime, unless it was converted
// already or is a counter reading at or after the newest anchor: that
// one's anchor after it is yet to come, and at() reads it as not before
// any cut.
func (tb *timebase) fix(s *slot) {
	raw := s.num
	switch {
	case raw&rawDone != 0:
		return
	case raw&rawNanotime != 0:
		s.num = raw&^rawNanotime | rawDone
		return
	}
	t := int64(raw)
	newest := tb.newest()
	if t >= newest.tick {
		if tb.failed {
			// Stamped around the failure: no anchor will come after
			// it. Placed on from the newest at the long-run rate.
			s.num = uint64(newest.ns+scale(uint64(t-newest.tick), tb.longRate())) | rawDone
		}
		return
	}
	oldest := tb.n - anchors
	if oldest < 0 {
		oldest = 0
	}
	for i := tb.n - 2; i >= oldest; i-- {
		if a := &tb.ring[i%anchors]; t >= a.tick {
			s.num = uint64(a.ns+scale(uint64(t-a.tick), a.mult)) | rawDone
			return
		}
	}
	// Older than every anchor kept: back from the oldest at the long-run
	// rate, or the oldest segment's while the trace is young.
	a := &tb.ring[oldest%anchors]
	s.num = uint64(max(a.ns-scale(uint64(a.tick-t), tb.longRate()), 0)) | rawDone
}

// notYet is what at() reads for a counter reading the flusher cannot
// convert yet: later than any cut so far.
const notYet = math.MaxInt64
