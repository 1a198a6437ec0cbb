package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gotracer/tracer/cmd/tracer/internal/tracegen"
)

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

// heavyRun reports whether TRACER_HEAVY is set, as .ci/run sets it. The
// tests whose files are checked strictly here anyway load them in both
// importers then only, so that the quick run starts fewer browsers; the
// tests whose point is what the importers make of a file load it always.
func heavyRun() bool { return os.Getenv("TRACER_HEAVY") != "" }

// writeFile writes a hand-made file in dir and returns its path.
func writeFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	return path
}

// timeout bounds the waits of the tests that run child processes.
const timeout = 20 * time.Second
