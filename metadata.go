package tracer

// SetGoroutineName names the calling goroutine's track in the viewers
// (thread_name metadata). Goroutines without a name show as their id. The
// name is remembered: set before Start, or before a Stop and Start, it is
// in the next default tracer's file too.
func SetGoroutineName(name string) {
	noteName(goroutineID(), name, 0, false)
	loadStd().SetGoroutineName(name)
}

// SetGoroutineSortIndex sets where the calling goroutine's track sits among
// the process's tracks: lower indexes come first (thread_sort_index
// metadata). Tracks without an index follow in id order. Like the name, it
// is remembered for later default tracers.
func SetGoroutineSortIndex(index int) {
	noteName(goroutineID(), "", int64(index), true)
	loadStd().SetGoroutineSortIndex(index)
}

// SetGoroutineName names the calling goroutine's track in t.
func (t *Tracer) SetGoroutineName(name string) {
	if t == nil {
		return
	}
	t.record(goroutineID(), kindThreadName, 0, catScope{}, name, 0, nil)
}

// SetGoroutineSortIndex sets the calling goroutine's track position in t.
func (t *Tracer) SetGoroutineSortIndex(index int) {
	if t == nil {
		return
	}
	t.record(goroutineID(), kindThreadSort, 0, catScope{}, "", uint64(index), nil)
}
