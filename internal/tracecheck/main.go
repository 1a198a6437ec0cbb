package tracecheck

import (
	"flag"
	"os"
	"runtime"
	"strconv"
	"testing"
)

// Main runs m, as a package's TestMain, with twice as many parallel tests
// at once as go test would (its -parallel defaults to GOMAXPROCS), unless
// -parallel is given. It suits a package whose parallel tests wait more
// than they compute: for the real importers, a child process, a stalled
// sink. At one test a core they hold the cores' turns while they wait:
// on a 2-core machine the root package's tests took 26 s so, and 19 at
// two a core.
func Main(m *testing.M) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		if err := flag.Set("test.parallel", strconv.Itoa(2*runtime.GOMAXPROCS(0))); err != nil {
			panic("tracecheck: the testing package's -parallel flag: " + err.Error())
		}
	}
	os.Exit(m.Run())
}
