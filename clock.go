package tracer

import (
	"bytes"
	"math"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"
	_ "unsafe" // for go:linkname
)

// The clock.
//
// Every event is stamped on the record path with a raw reading, converted
// to nanotime (the runtime's monotonic clock, the one time.Since reads)
// by the flusher, off the hot path. Where the CPU has a counter that runs
// at a constant rate, in step on every CPU, and that the OS itself keeps
// time with (Linux's clocksource "tsc" on amd64, or the constant_tsc and
// nonstop_tsc flags; the generic timer on arm64), the raw reading is the
// counter's: RDTSC costs 10 ns on the 2-core VM the project is measured
// on, where runtime.nanotime costs 26, and a span reads the clock twice.
// Elsewhere, with TRACER_CLOCK=nanotime, or once the flusher has found
// the counter unreliable, it is nanotime, marked as such.
//
// The flusher converts a counter reading by interpolating between
// anchors: pairs of a counter reading and a nanotime reading taken
// together, one at the start of the trace and one at each pass's cut.
// Every event a pass takes was stamped before its cut, so it lies between
// two anchors, and its conversion is within the anchors' own error (tens
// of nanoseconds) plus however far nanotime strays from a straight line
// between them (NTP's adjustments: well under a microsecond over a pass).
// A conversion never changes once made, the function is increasing, and
// anchors are nanotime readings, so timestamps stay monotonic per
// goroutine and agree with nanotime, which is what the goruntime
// module's alignment with the Go runtime's own events relies on.

//go:linkname nanotime runtime.nanotime
func nanotime() int64

// wallAt returns the wall-clock time at nanotime ns, a moment close to
// now. The file gives it as ts 0's wall time, which `tracer merge` aligns
// processes by, so it must be the wall time of that nanotime and not of a
// moment next to it: a goroutine stopped between reading one clock and
// the other (for milliseconds on a busy machine) would shift the whole
// file against every other process's. So time.Now is read between two
// nanotime readings, and the narrowest of a few tries is kept.
func wallAt(ns int64) time.Time {
	var wall time.Time
	var mid, width int64
	for try := 0; try < 3 || try < 12 && width > wallWidth; try++ {
		n1 := nanotime()
		w := time.Now()
		n2 := nanotime()
		if try == 0 || n2-n1 < width {
			wall, mid, width = w, n1+(n2-n1)/2, n2-n1
		}
	}
	return wall.Add(time.Duration(ns - mid))
}

// wallWidth is, in nanoseconds, many times the width of a try of wallAt
// that nothing cut into (60-90 ns, median 80, over 10,000 tries on the VM
// the project is measured on).
const wallWidth = 2000

// Marks in a raw reading's top bits. Counter readings and nanotime are
// below 2^62 for a century of uptime.
const (
	rawNanotime = 1 << 63 // a nanotime reading, not the counter's
	rawDone     = 1 << 62 // converted by the flusher: the rest is nanotime
)

// counterOn, when not 0, tells the record path to read the counter rather
// than nanotime. It is set once, by the first tracer, if the counter can
// be trusted, and cleared for good if a flusher finds it unreliable. A
// plain word (see ordering.go): atomic.Bool's Load costs now the
// inliner's budget.
var counterOn uint64

// now returns the raw reading that stamps an event.
func now() uint64 {
	if loadAcquire(&counterOn) != 0 {
		return uint64(cputicks())
	}
	return uint64(nanotime()) | rawNanotime
}

var counterOnce sync.Once

// chooseClock decides, once per process, whether the record path reads the
// counter.
func chooseClock() {
	counterOnce.Do(func() {
		if counterTrusted() {
			storeWord(&counterOn, 1)
		}
	})
}

// counterTrusted reports whether this machine's counter can stamp events:
// the OS keeps time with it, so it is invariant and in step across CPUs,
// and the user did not ask for nanotime.
func counterTrusted() bool {
	if !haveCounter || runtime.GOOS != "linux" || os.Getenv(EnvClock) == "nanotime" {
		return false
	}
	src, _ := os.ReadFile("/sys/devices/system/clocksource/clocksource0/current_clocksource")
	switch strings.TrimSpace(string(src)) {
	case "tsc":
		return runtime.GOARCH == "amd64"
	case "arch_sys_counter":
		return runtime.GOARCH == "arm64"
	}
	if runtime.GOARCH != "amd64" {
		return false
	}
	// A guest whose kernel keeps time with its hypervisor's clock, on a
	// CPU that says its counter is invariant.
	info, _ := os.ReadFile("/proc/cpuinfo")
	flags := fieldOf(info, "flags")
	return hasWord(flags, "constant_tsc") && hasWord(flags, "nonstop_tsc")
}

// fieldOf returns the value of the first "name : value" line of info.
func fieldOf(info []byte, name string) string {
	for line := range bytes.Lines(info) {
		k, v, ok := bytes.Cut(line, []byte(":"))
		if ok && string(bytes.TrimSpace(k)) == name {
			return string(bytes.TrimSpace(v))
		}
	}
	return ""
}

func hasWord(s, w string) bool {
	for f := range strings.FieldsSeq(s) {
		if f == w {
			return true
		}
	}
	return false
}

// notYet is what at() reads for a counter reading the flusher cannot
// convert yet: later than any cut so far.
const notYet = math.MaxInt64
