package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gotracer/tracer/internal/tracecheck"
	"github.com/gotracer/tracer/internal/tracefile"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// corpusDir holds traces in the ways other tools write them (clang's
// -ftime-trace, ninjatracing, PyTorch's profiler, Rust's tracing-chrome,
// Chrome DevTools, catapult's own, Bazel, pretty-printed JSON, numbers in
// strings...) and in the ways they go wrong, made here from the format
// spec and what the importers accept. verdicts.json records what each
// viewer makes of each: "ok", or what it refuses, drops or warns of.
const corpusDir = "testdata/others"

var updateVerdicts = flag.Bool("update-verdicts", false, "record what the importers make of "+corpusDir)

// A verdict is what the two viewers make of a file.
type verdict struct {
	Perfetto string `json:"perfetto"`
	Catapult string `json:"catapult"`
}

// clean reports whether both viewers load the file whole and say nothing.
func (v verdict) clean() bool { return v.Perfetto == "ok" && v.Catapult == "ok" }

// verdictOf sums up the importers' reports of one file.
func verdictOf(perfetto, catapult tracecheck.Report) verdict {
	say := func(r tracecheck.Report, field, key string) string {
		if r["ok"] != true {
			return "refuses the file"
		}
		var what []string
		items, _ := r[field].([]any)
		for _, it := range items {
			if m, ok := it.(map[string]any); ok {
				what = append(what, fmt.Sprint(m[key]))
			}
		}
		slices.Sort(what)
		what = slices.Compact(what)
		if len(what) == 0 {
			return "ok"
		}
		return strings.Join(what, ", ")
	}
	v := verdict{Perfetto: say(perfetto, "importErrors", "name"), Catapult: say(catapult, "warnings", "type")}
	// Perfetto loads a file it does not recognise as JSON without a word,
	// and shows nothing.
	p, c := perfetto.Totals(), catapult.Totals()
	if v.Perfetto == "ok" && p["slices"]+p["counter_samples"] == 0 && c["slices"]+c["counters"] > 0 {
		v.Perfetto = "shows nothing"
	}
	return v
}

// TestOtherToolsCorpus runs check on every file of the corpus and
// compares what it says with what the viewers do: a file check calls ok
// must be one both viewers load whole and without a word, and a file it
// finds a problem in must be one a viewer refuses, changes or complains
// of. Where the importers are set up, the recorded verdicts are checked
// against them first. The agreement must be 95% at least.
func TestOtherToolsCorpus(t *testing.T) {
	t.Parallel()
	paths, err := filepath.Glob(filepath.Join(corpusDir, "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	data, err := os.ReadFile(filepath.Join(corpusDir, "verdicts.json"))
	require.NoError(t, err)
	var want map[string]verdict
	require.NoError(t, json.Unmarshal(data, &want))
	delete(want, "verdicts.json")
	paths = slices.DeleteFunc(paths, func(p string) bool { return filepath.Base(p) == "verdicts.json" })

	t.Run("verdicts are the importers'", func(t *testing.T) {
		perfetto, catapult := tracecheck.Load(t, paths...)
		got := map[string]verdict{}
		for i, p := range paths {
			got[filepath.Base(p)] = verdictOf(perfetto[i], catapult[i])
		}
		if *updateVerdicts {
			data, err := json.MarshalIndent(got, "", "  ")
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(corpusDir, "verdicts.json"), append(data, '\n'), 0o644))
			want = got
		}
		assert.Equal(t, want, got)
	})

	agree := 0
	var disagree []string
	for _, p := range paths {
		name := filepath.Base(p)
		v, ok := want[name]
		require.True(t, ok, "%s has no recorded verdict", name)
		var said []string
		_, _, err := checkFile(p, true, func(pr tracefile.Problem) { said = append(said, pr.Msg) })
		require.NoError(t, err)
		if (len(said) == 0) == v.clean() {
			agree++
			continue
		}
		disagree = append(disagree, fmt.Sprintf("%s: viewers %+v, check %q", name, v, said))
	}
	share := float64(agree) / float64(len(paths))
	t.Logf("check agrees with both viewers on %d of %d files (%.1f%%)", agree, len(paths), 100*share)
	for _, d := range disagree {
		t.Log(d)
	}
	assert.GreaterOrEqual(t, share, 0.95)
}
