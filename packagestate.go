package tracer

import (
	"slices"
	"sync"
)

// What the program says of its goroutines and categories through the
// package-level functions outlives the default tracer: a goroutine named
// before Start, or before a Stop and Start, keeps its name in the next
// file, and the categories set with SetCategories apply to the next
// default tracer that was not given WithCategories. So the package-level
// SetGoroutineName, SetGoroutineSortIndex and SetCategories also note what
// they set here, and Start and SetDefault pass it on.
var pkgState struct {
	mu         sync.Mutex
	names      map[uint64]*trackName // by goroutine id, at most maxTrackNames
	categories []string              // none: every category
}

// noteName remembers goroutine gid's name (or sort index, if sort).
func noteName(gid uint64, name string, index int64, sort bool) {
	pkgState.mu.Lock()
	defer pkgState.mu.Unlock()
	if pkgState.names == nil {
		pkgState.names = map[uint64]*trackName{}
	}
	tn := pkgState.names[gid]
	if tn == nil {
		if len(pkgState.names) >= maxTrackNames {
			// Goroutine exits cannot be observed: past the bound, the
			// oldest ids (the goroutines started first) are forgotten.
			forgetOldestNames()
		}
		tn = &trackName{}
		pkgState.names[gid] = tn
	}
	if sort {
		tn.sort, tn.hasSort = index, true
	} else {
		tn.name, tn.hasName = name, true
	}
}

// forgetOldestNames drops the half of the remembered names with the lowest
// goroutine ids. Called with pkgState.mu held.
func forgetOldestNames() {
	ids := make([]uint64, 0, len(pkgState.names))
	for gid := range pkgState.names {
		ids = append(ids, gid)
	}
	slices.Sort(ids)
	for _, gid := range ids[:len(ids)/2] {
		delete(pkgState.names, gid)
	}
}

// noteCategories remembers the categories last set for the default tracer.
func noteCategories(names []string) {
	pkgState.mu.Lock()
	defer pkgState.mu.Unlock()
	pkgState.categories = append([]string(nil), names...)
}

// adoptDefaults gives t, about to become the default tracer, the names and
// categories set through the package-level functions. userCats tells
// whether t was given WithCategories, which then wins.
func (t *Tracer) adoptDefaults(userCats bool) {
	pkgState.mu.Lock()
	names := make(map[uint64]trackName, len(pkgState.names))
	for gid, tn := range pkgState.names {
		names[gid] = *tn
	}
	cats := pkgState.categories
	pkgState.mu.Unlock()

	if len(cats) > 0 && !userCats {
		_ = t.SetCategories(cats...) // checked when they were set
	}
	if len(names) == 0 {
		return
	}
	t.flusher.mu.Lock()
	defer t.flusher.mu.Unlock()
	t.flusher.nameGoroutines(names)
}
