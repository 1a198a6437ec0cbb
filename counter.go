package tracer

import (
	"fmt"
	"math"
)

// Counter records the current value of one or more series of the named
// counter, drawn by the viewers as a graph per series on the process's
// tracks ("queue depth", "queue inflight"):
//
//	tracer.Counter("queue", tracer.Int("depth", len(q)), tracer.Int("inflight", n))
//
// Each Int, Int64, Uint64 or Float64 arg is one series; a Category arg sets
// the category. Counters belong to the process, not to the goroutine that
// records them. Like every recording call it takes no lock and allocates
// nothing.
//
// The viewers draw numbers only, and Perfetto refuses the whole file if a
// counter holds anything else. So a series the viewers cannot draw as the
// value given (a String or Bool, a NaN or infinite Float64) is left out, a counter left with no series is not recorded, and both are
// counted in Stats.Refused and reported once to the error handler. A
// Uint64 above math.MaxInt64, which Perfetto reads as a negative number,
// is written as a float.
func Counter(name string, series ...Arg) {
	if t := loadStd(); t != nil {
		t.counter(name, series)
	}
}

// Counter records counter values on t; see the package-level Counter.
func (t *Tracer) Counter(name string, series ...Arg) { t.counter(name, series) }

//go:noinline
func (t *Tracer) counter(name string, series []Arg) {
	if t == nil {
		return
	}
	drawable := 0
	for i := range series {
		switch counterSeries(&series[i]) {
		case seriesBad:
			t.counterSlow(name, series)
			return
		case seriesOK:
			drawable++
		}
	}
	if drawable == 0 {
		t.counterSlow(name, series)
		return
	}
	t.record(goroutineID(), kindCounter, 0, catScope{}, name, 0, series)
}

// What Counter makes of an arg.
const (
	seriesOK    = iota // a series the viewers draw as given
	seriesOther        // not a series: Category, Scope or the zero Arg
	seriesBad          // a series to convert or leave out
)

func counterSeries(a *Arg) int {
	switch a.kind {
	case argInt:
		return seriesOK
	case argUint:
		if a.num > math.MaxInt64 {
			return seriesBad
		}
		return seriesOK
	case argFloat:
		if f := math.Float64frombits(a.num); math.IsNaN(f) || math.IsInf(f, 0) {
			return seriesBad
		}
		return seriesOK
	case argCategory, argScope, 0: // the zero Arg is ignored, as everywhere
		return seriesOther
	}
	return seriesBad
}

// counterSlow records a counter some of whose series Counter must convert
// or leave out, or that has none. It is off the common path, so it may
// take a copy of the args (on the stack: at most maxArgs).
func (t *Tracer) counterSlow(name string, series []Arg) {
	var kept [maxArgs]Arg
	n, drawable := 0, 0
	for i := range series {
		if n == len(kept) {
			break
		}
		a := series[i]
		switch counterSeries(&a) {
		case seriesBad:
			if a.kind != argUint {
				t.refuse(func() error {
					return fmt.Errorf("tracer: Counter %q: series %q is %s; counters take Int, Int64, Uint64 and finite Float64 values (left out, counted in Stats.Refused)",
						name, a.key, describeArg(&a))
				})
				continue
			}
			a = Float64(a.key, float64(a.num))
			drawable++
		case seriesOK:
			drawable++
		}
		kept[n] = a
		n++
	}
	if drawable == 0 {
		t.refuse(func() error {
			return fmt.Errorf("tracer: Counter %q has no series to draw (not recorded, counted in Stats.Refused)", name)
		})
		return
	}
	t.record(goroutineID(), kindCounter, 0, catScope{}, name, 0, kept[:n])
}

// describeArg says what kind of value a refused arg holds.
func describeArg(a *Arg) string {
	switch a.kind {
	case argString:
		return "a string"
	case argBool:
		return "a bool"
	case argFloat:
		return fmt.Sprint(math.Float64frombits(a.num))
	case argDuration:
		return "a Duration (use Int64 of its nanoseconds, or Float64 of its seconds)"
	case argTime, argTimeSec:
		return "a Time"
	case argStringer:
		return "a Stringer"
	}
	return "not a number"
}
