package benchmarks

// Peer "chrometracing": github.com/google/chrometracing, the existing Go
// writer of the same file format. Each span is Event(name) ... Done(): a
// begin and an end event, each marshalled with encoding/json and written
// to the file with two write calls under a mutex, on the caller's
// goroutine.
//
// It has no off mode the benchmark can use: tracing is switched on for the
// whole process, irreversibly, by CHROMETRACING_DIR at start-up or by
// EnableTracing. It has no args, counters or instants: the args scenario
// folds the args into the event name, as its own documentation does
// (Event("initialize " + cmd.Name)), and the counter and instant scenarios
// are left out (n/a in the report).

import (
	"os"
	"strconv"
	"testing"

	"github.com/google/chrometracing"
)

func init() {
	register(&peer{
		name:  "chrometracing",
		modes: []string{modeOn},
		start: func(b *testing.B, sc, mode string) func(*testing.B) {
			chrometracing.EnableTracing() // idempotent; opens one file per process
			if chrometracing.Path() == "" {
				b.Fatal("chrometracing did not enable tracing")
			}
			return nil
		},
		loops: map[string]func(*testing.B){
			scSpan:             func(b *testing.B) { intLoop(b, ctSpan) },
			scSpanArgs:         func(b *testing.B) { intLoop(b, ctSpanArgs) },
			scNested:           func(b *testing.B) { intLoop(b, ctNested) },
			scSpanParallel:     func(b *testing.B) { intParallel(b, ctSpan) },
			scSpanArgsParallel: func(b *testing.B) { intParallel(b, ctSpanArgs) },
			scNestedParallel:   func(b *testing.B) { intParallel(b, ctNested) },
		},
	})
}

// setupChrometracing points chrometracing at dir, so its file lands in the
// benchmark's temporary directory when a benchmark enables it.
func setupChrometracing(dir string) {
	if os.Getenv("CHROMETRACING_DIR") == "" {
		os.Setenv("CHROMETRACING_DIR", dir)
	}
}

//go:noinline
func ctSpan(i int) { defer chrometracing.Event("span").Done() }

//go:noinline
func ctSpanArgs(i int) {
	defer chrometracing.Event("span " + argKey + "=" + argVal + " " + argNKey + "=" + strconv.Itoa(i)).Done()
}

//go:noinline
func ctNested(i int) {
	defer chrometracing.Event("outer").Done()
	ctNested2(i)
}

//go:noinline
func ctNested2(i int) {
	defer chrometracing.Event("middle").Done()
	ctNested3(i)
}

//go:noinline
func ctNested3(i int) { defer chrometracing.Event("inner").Done() }
