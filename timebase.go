package tracer

import "math/bits"

// The timebase: the flusher's conversion of the record path's raw clock
// readings (clock.go) to nanotime.

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

	// seg is the segment between two anchors that the last conversion
	// used: a pass converts its events from one or two segments, so most
	// conversions take it without a search (see quick).
	seg segment
}

// A segment converts the readings in [from, from+width) as
// ns + scale(t-from, mult). The zero segment converts none.
type segment struct {
	from, width uint64
	ns          int64
	mult        uint64
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
	if tb.n >= anchors {
		tb.seg = segment{} // its anchor may be the one a overwrites
	}
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

// quick converts s's raw reading, and reports whether it did, if it is
// a counter reading in the segment of the last conversion, as most are.
// It is fix's first step, small enough to inline into the loops that
// convert every event (peek, takeRun), which call fix only when it fails.
// A reading converted already, or of nanotime, has a flag bit set and is
// past every segment.
func (tb *timebase) quick(s *slot) bool {
	dt := s.num - tb.seg.from
	if dt >= tb.seg.width {
		return false
	}
	s.setNanotime(tb.seg.ns + scale(dt, tb.seg.mult))
	return true
}

// fix converts s's raw reading to nanotime, unless it was converted
// already or is a counter reading at or after the newest anchor: that
// one's anchor after it is yet to come, and at() reads it as not before
// any cut.
func (tb *timebase) fix(s *slot) {
	if tb.quick(s) {
		return
	}
	raw := s.num
	switch {
	case raw&rawDone != 0:
		return
	case raw&rawNanotime != 0:
		s.setNanotime(int64(raw &^ rawNanotime))
		return
	}
	t := int64(raw)
	newest := tb.newest()
	if t >= newest.tick {
		if tb.failed {
			// Stamped around the failure: no anchor will come after
			// it. Placed on from the newest at the long-run rate.
			s.setNanotime(newest.ns + scale(uint64(t-newest.tick), tb.longRate()))
		}
		return
	}
	oldest := tb.n - anchors
	if oldest < 0 {
		oldest = 0
	}
	for i := tb.n - 2; i >= oldest; i-- {
		if a := &tb.ring[i%anchors]; t >= a.tick {
			// Its mult is final: the anchor after it is taken.
			tb.seg = segment{from: uint64(a.tick), width: uint64(tb.ring[(i+1)%anchors].tick - a.tick), ns: a.ns, mult: a.mult}
			s.setNanotime(a.ns + scale(uint64(t-a.tick), a.mult))
			return
		}
	}
	// Older than every anchor kept: back from the oldest at the long-run
	// rate, or the oldest segment's while the trace is young.
	a := &tb.ring[oldest%anchors]
	s.setNanotime(max(a.ns-scale(uint64(a.tick-t), tb.longRate()), 0))
}
