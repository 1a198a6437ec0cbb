package tracervet_test

import (
	"testing"

	"github.com/gotracer/tracer/tracervet"
	"golang.org/x/tools/go/analysis/analysistest"
)

func TestAnalyzer(t *testing.T) {
	analysistest.RunWithSuggestedFixes(t, analysistest.TestData(), tracervet.Analyzer, "a")
}
