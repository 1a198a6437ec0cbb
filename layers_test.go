package tracer

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stages lists the engine's stages from the top down, with their files
// (docs/internals.md has the table). A file's code may use what its own
// stage defines and what the stages below define, never what a stage above
// defines; within a stage, files use each other freely.
var stages = []struct {
	name  string
	files []string
}{
	{"API", []string{"span.go", "counter.go", "instant.go", "async.go", "flow.go", "metadata.go",
		"context.go", "enabled.go", "anyspan.go", "signal.go", "autoenable.go", "packagestate.go",
		"imported.go", "doc.go", "tracer.go", "wait.go", "flightrecorder.go"}},
	{"flusher", []string{"flusher.go", "openspans.go", "openhandles.go", "flightpairs.go", "timebase.go"}},
	{"config", []string{"options.go", "stats.go"}},
	{"encoder", []string{"encode.go", "tracknames.go", "sharedtracks.go"}},
	{"writer", []string{"writer.go", "failedwrites.go", "sink.go", "sink_file.go", "sink_writer.go", "sink_rotate.go",
		"sink_gzip.go", "sink_gzipjoin.go", "pagealign.go", "filelock.go", "filelock_unix.go",
		"filelock_other.go", "fifo_unix.go", "fifo_other.go"}},
	{"recorder", []string{"ringbuffer.go", "record.go", "spantoken.go", "assist.go", "lostends.go",
		"reentry.go", "refusal.go", "category.go", "arg.go"}},
	{"ground", []string{"errors.go", "clock.go", "clock_counter.go", "clock_nocounter.go", "progress.go", "env.go",
		"goroutine.go", "ordering.go", "ordering_fast.go", "ordering_other.go"}},
}

// TestStagesUseOnlyWhatIsBelow checks the layering of the package's files:
// every name a file's code uses (comments aside) is defined in its own
// stage or below it. It reads the source, whatever the build tags.
func TestStagesUseOnlyWhatIsBelow(t *testing.T) {
	rank := map[string]int{}
	for i, s := range stages {
		for _, f := range s.files {
			require.NotContains(t, rank, f, "%s is in two stages", f)
			rank[f] = len(stages) - i
		}
	}
	stageOf := func(file string) string { return stages[len(stages)-rank[file]].name }

	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	require.NoError(t, err)
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		_, ok := rank[name]
		assert.True(t, ok, "%s is in no stage: add it to stages and to docs/internals.md", name)
		src, err := os.ReadFile(name)
		require.NoError(t, err)
		f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
		require.NoError(t, err)
		files = append(files, f)
	}
	// Imports are not followed: a name of this package resolves without
	// them, and errors (another package's names, a file's twin for other
	// build tags) do not stop the check.
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: fakeImporter{}, Error: func(error) {}}
	pkg, _ := conf.Check("github.com/gotracer/tracer", fset, files, info)

	type use struct{ from, to string }
	found := map[use][]string{}
	for id, obj := range info.Uses {
		if obj.Pkg() != pkg || !obj.Pos().IsValid() {
			continue
		}
		from := filepath.Base(fset.Position(id.Pos()).Filename)
		to := filepath.Base(fset.Position(obj.Pos()).Filename)
		if rank[from] < rank[to] {
			u := use{from, to}
			found[u] = append(found[u], obj.Name())
		}
	}
	var wrong []string
	for u, names := range found {
		sort.Strings(names)
		wrong = append(wrong, u.from+" ("+stageOf(u.from)+") uses "+strings.Join(slices.Compact(names), ", ")+
			" of "+u.to+" ("+stageOf(u.to)+")")
	}
	sort.Strings(wrong)
	assert.Empty(t, wrong, "a stage uses a stage above it")
}

// fakeImporter gives every import an empty package.
type fakeImporter struct{}

func (fakeImporter) Import(path string) (*types.Package, error) {
	return types.NewPackage(path, filepath.Base(path)), nil
}
