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
