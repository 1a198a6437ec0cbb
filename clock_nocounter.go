//go:build !(amd64 || arm64)

package tracer

// haveCounter tells whether this architecture has a counter cputicks reads.
const haveCounter = false

func cputicks() int64        { return nanotime() }
func cputicksOrdered() int64 { return nanotime() }
