package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gotracer/tracer/cmd/tracer/internal/tracegen"
	"github.com/gotracer/tracer/internal/tracecheck"
)

// TestMain runs two parallel tests a core at once: most of them wait for
// trace_processor, catapult's importer or a child process (see
// tracecheck.Main).
func TestMain(m *testing.M) { tracecheck.Main(m) }

// runCmd runs the command line args and returns its exit status, standard
// output and standard error.
func runCmd(args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// workload and generate record traces of a small service: see tracegen.
var (
	workload = tracegen.Workload
	generate = tracegen.Generate
)

// heavyRun reports whether this is a heavy run (tracecheck.Heavy), as
// .ci/run makes every run. The tests whose files are checked strictly
// here anyway load them in both importers then only, so that the quick
// run starts fewer browsers; the tests whose point is what the importers
// make of a file load it always.
func heavyRun() bool { return tracecheck.Heavy() }

// The comparisons with trace_processor over many random traces or a whole
// corpus start one trace_processor a file, some 30 ms of CPU each and
// hundreds a run. A heavy run makes them all; the quick run (the README's
// test command) a part of each, the same part every run: quickOr picks a
// count, sampled the items.

// quickOr returns quick in a quick run, heavy in a heavy one.
func quickOr[T any](quick, heavy T) T {
	if heavyRun() {
		return heavy
	}
	return quick
}

// sampled reports whether the i-th item of a corpus comparison runs:
// every one in a heavy run, every other one in a quick run.
func sampled(i int) bool { return heavyRun() || i%2 == 0 }

// writeFile writes a hand-made file in dir and returns its path.
func writeFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	return path
}

// timeout bounds the waits of the tests that run child processes.
const timeout = 20 * time.Second
