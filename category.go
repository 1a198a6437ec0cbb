package tracer

import (
	"fmt"
	"strings"
	"sync"

	"go.uber.org/atomic"
)

// Categories and scopes are interned: an Arg carries a small id, records
// carry the id, and the flusher writes the name. Lookups read an immutable
// map through an atomic pointer, so naming a category on the record path
// takes no lock and allocates nothing; only the first use of a new name
// copies the map under a mutex.
type registry struct {
	mu    sync.Mutex
	ids   atomic.Pointer[map[string]uint16]
	names atomic.Pointer[[]string] // names[id]; id 0 is "none"
}

var categories, scopes registry

// maxNames bounds each registry: names are meant to be a fixed set chosen
// in code, not data.
const maxNames = 1 << 12

func (r *registry) id(name string) uint16 {
	if m := r.ids.Load(); m != nil {
		if id, ok := (*m)[name]; ok {
			return id
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	old := map[string]uint16{}
	if m := r.ids.Load(); m != nil {
		old = *m
	}
	if id, ok := old[name]; ok {
		return id
	}
	names := []string{""}
	if n := r.names.Load(); n != nil {
		names = *n
	}
	if len(names) >= maxNames {
		return 0 // written without a category rather than failing the caller
	}
	id := uint16(len(names))
	ids := make(map[string]uint16, len(old)+1)
	for k, v := range old {
		ids[k] = v
	}
	ids[name] = id
	names = append(names[:len(names):len(names)], name)
	r.names.Store(&names)
	r.ids.Store(&ids)
	return id
}

func (r *registry) name(id uint16) string {
	if n := r.names.Load(); n != nil && int(id) < len(*n) {
		return (*n)[id]
	}
	return ""
}

// Category returns an Arg that puts an event in the named category, the
// "cat" field the viewers group and filter by. Any recording call accepts
// it among its args:
//
//	var catDB = tracer.Category("db") // once, at package level
//
//	defer tracer.Span("query", catDB, tracer.String("table", t))()
//
// Categories can be switched on and off while the program runs with
// WithCategories and SetCategories. The first call for a name registers it;
// later calls find it without locking, but hoisting the Arg into a variable
// saves even that lookup. At most 4095 distinct names are kept; events
// naming more are written without a category.
func Category(name string) Arg {
	return Arg{kind: argCategory, num: uint64(categories.id(name))}
}

// Namespace returns an Arg that puts the id of an async operation or a
// flow in a namespace, so that operations whose ids the caller chose
// cannot collide with unrelated ones using the same ids: id 7 in "db" and
// id 7 in "http" are two operations. It is taken from the args of
// AsyncBegin, AsyncBeginID and FlowBegin, and ignored elsewhere (on other
// events, and on an operation's or a flow's later events, which keep
// their first event's). In the file it is the event's "scope" field, and
// a prefix of an async event's id ("id2":{"local":"db:0x7"}), because
// Perfetto tells operations apart by category and id alone.
func Namespace(name string) Arg {
	return Arg{kind: argScope, num: uint64(scopes.id(name))}
}

// A categoryFilter is the set of enabled categories, as a bitset by id.
type categoryFilter struct {
	enabled [maxNames / 64]uint64
}

func (f *categoryFilter) allows(cat uint16) bool {
	return f.enabled[cat/64]&(1<<(cat%64)) != 0
}

func newCategoryFilter(names []string) (*categoryFilter, error) {
	f := &categoryFilter{}
	for _, n := range names {
		if n == "" || strings.ContainsRune(n, ',') {
			return nil, fmt.Errorf("tracer: invalid category name %q", n)
		}
		id := categories.id(n)
		if id == 0 {
			return nil, fmt.Errorf("tracer: too many categories to enable %q", n)
		}
		f.enabled[id/64] |= 1 << (id % 64)
	}
	return f, nil
}
