//go:build amd64 || arm64

package tracer

// haveCounter tells whether this architecture has a counter cputicks reads.
const haveCounter = true

// cputicks reads the CPU's counter: the time-stamp counter on amd64, the
// generic timer's virtual count on arm64.
func cputicks() int64

// cputicksOrdered is cputicks, not reordered with the instructions around
// it.
func cputicksOrdered() int64
