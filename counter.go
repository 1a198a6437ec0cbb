package tracer

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
	t.record(kindCounter, 0, catScope{}, name, 0, series)
}
