package tracer

import "sync/atomic"

// Plain words shared between goroutines.
//
// The package's shared atomic state uses go.uber.org/atomic's types. A
// few words cannot: a chunk's head, a chain's next token and count of span
// starts, a token's state, and whether the clock reads the CPU's counter
// (clock.go). A chunk's head is published with storeRelease (see
// ordering_fast.go), a plain store on amd64 and arm64 where sync/atomic's
// store is a full fence that costs a span about a tenth of its time; the
// producer's own words, stored just before it, with storePlain. Both need
// the word's address, which the wrapper types do not give. So they are
// plain uint64s, read and swapped through the functions below, which with
// ordering_other.go are the only users of sync/atomic in the package.

// loadAcquire loads *addr atomically: it sees what storeRelease published
// there, and every store made before it.
func loadAcquire(addr *uint64) uint64 { return atomic.LoadUint64(addr) }

// storeWord stores val at *addr with a full fence, for a word nobody else
// can be writing but that others may read.
func storeWord(addr *uint64, val uint64) { atomic.StoreUint64(addr, val) }

// swapWord sets *addr to new if it holds old, atomically, and reports
// whether it did.
func swapWord(addr *uint64, old, new uint64) bool {
	return atomic.CompareAndSwapUint64(addr, old, new)
}
