package tracecheck

import (
	"bytes"
	"encoding/csv"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// PerfettoSQL runs query over the trace at path in Perfetto's
// trace_processor_shell and returns the rows of its result, header
// first, as text. It skips the test when the importers are not set up.
func PerfettoSQL(t testing.TB, path, query string) [][]string {
	t.Helper()
	dir := importers()
	if dir == "" {
		t.Skip("trace_processor_shell is not set up: run /work/shared/importers/setup (or set TRACER_IMPORTERS to its directory)")
	}
	q := filepath.Join(t.TempDir(), "query.sql")
	require.NoError(t, os.WriteFile(q, []byte(query), 0o644))
	cmd := exec.Command(filepath.Join(dir, "perfetto", "trace_processor_shell"), "-q", q, path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "trace_processor_shell: %s", stderr.Bytes())
	rows, err := csv.NewReader(bytes.NewReader(out)).ReadAll()
	require.NoError(t, err, "trace_processor_shell's output: %s", out)
	return rows
}
