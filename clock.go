package tracer

import _ "unsafe" // for go:linkname

// nanotime is the runtime's monotonic clock, the one time.Since reads,
// without the wall-clock read that time.Now adds. Every timestamp the tracer
// records comes from it, so ts and dur never disagree.
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64
