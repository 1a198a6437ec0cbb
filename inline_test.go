package tracer

import (
	"os/exec"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOffPathInlines asks the compiler which recording functions it can
// inline. Tracing off costs one atomic load and a branch only while they
// inline into the caller; a change that pushes one over the inliner's
// budget makes it a function call, which no other test would notice.
func TestOffPathInlines(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the package")
	}
	out, err := exec.Command("go", "build", "-gcflags=-m", ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, fn := range []string{
		"Span", "LongSpan", "Instant", "InstantProcess", "InstantGlobal", "Counter",
		"AsyncBegin", "AsyncBeginID", "FlowBegin", `\(\*Tracer\)\.Span`, `\(\*Tracer\)\.LongSpan`,
	} {
		assert.Regexp(t, regexp.MustCompile(`(?m): can inline `+fn+`$`), string(out), fn+" must stay inlinable")
	}
}
