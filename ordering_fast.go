//go:build (amd64 || arm64) && !race

package tracer

// storeRelease stores val at addr with release ordering: every store the
// caller made before it is visible to a goroutine that loads addr
// atomically and sees val. sync/atomic offers only sequentially consistent
// stores, which on amd64 compile to XCHG, a full fence that costs a span
// about a tenth of its time; publishing a slot needs release only.
//
//go:noescape
func storeRelease(addr *uint64, val uint64)

// storePlain stores val at addr with no ordering of its own: for the words
// a chain's producer keeps (a token's state, the chain's next token and
// count of starts), which other goroutines read only after the chunk's
// head that the same record publishes with storeRelease, or need to see
// only eventually. An ordinary store, which the compiler inlines: three of
// them in each span start were three calls.
func storePlain(addr *uint64, val uint64) { *addr = val }
