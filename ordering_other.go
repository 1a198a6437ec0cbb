//go:build !(amd64 || arm64) || race

package tracer

import "sync/atomic"

// storeRelease stores val at addr with (at least) release ordering. Under
// the race detector, and on architectures without an assembly version, it
// is an ordinary atomic store, which the race detector understands.
func storeRelease(addr *uint64, val uint64) { atomic.StoreUint64(addr, val) }

// storePlain stores val at addr. Under the race detector, and on
// architectures without the fast path, it is an atomic store, which the
// race detector understands.
func storePlain(addr *uint64, val uint64) { atomic.StoreUint64(addr, val) }
