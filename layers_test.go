package tracer

import (
	"bufio"
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

// The engine's stages, from the top down, with their files, are the table
// of docs/internals.md, the one list of them: a file's code may use what
// its own stage defines and what the stages below define, never what a
// stage above defines; within a stage, files use each other freely. And a
// stage changes another's state only through the other's methods.

// A stage is a row of that table.
type stage struct {
	name  string
	files []string // names and patterns (sink_*.go)
}

// readStages reads the table of stages in docs/internals.md: the rows
// after the header row "| stage | files | ...", the files a comma-separated
// list of names in backquotes.
func readStages(t *testing.T) []stage {
	t.Helper()
	f, err := os.Open(filepath.Join("docs", "internals.md"))
	require.NoError(t, err)
	defer f.Close()
	var stages []stage
	in := false
	for sc := bufio.NewScanner(f); sc.Scan(); {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "| stage | files |"):
			in = true
		case in && strings.HasPrefix(line, "|---"):
		case in && strings.HasPrefix(line, "|"):
			cells := strings.Split(line, "|")
			require.GreaterOrEqual(t, len(cells), 3, "a row of the stages table: %s", line)
			s := stage{name: strings.TrimSpace(cells[1])}
			for _, name := range strings.Split(cells[2], ",") {
				s.files = append(s.files, strings.Trim(strings.TrimSpace(name), "`"))
			}
			stages = append(stages, s)
		case in:
			require.NotEmpty(t, stages, "the stages table of docs/internals.md has no rows")
			return stages
		}
	}
	require.NotEmpty(t, stages, "docs/internals.md has no stages table (a header row \"| stage | files | ...\")")
	return stages
}

// packageFiles parses the package's files, tests aside, whatever their
// build tags, and returns them with the rank of each file's stage (the
// bottom stage is 1). It fails the test for a file in no stage or in two.
func packageFiles(t *testing.T) (*token.FileSet, []*ast.File, map[string]int, func(string) string) {
	t.Helper()
	stages := readStages(t)
	names, err := filepath.Glob("*.go")
	require.NoError(t, err)
	rank := map[string]int{}
	for i, s := range stages {
		for _, pattern := range s.files {
			matched := false
			for _, name := range names {
				if ok, _ := filepath.Match(pattern, name); ok && !strings.HasSuffix(name, "_test.go") {
					require.NotContains(t, rank, name, "%s is in two stages", name)
					rank[name] = len(stages) - i
					matched = true
				}
			}
			assert.True(t, matched, "%s, in the stage %s of docs/internals.md, names no file", pattern, s.name)
		}
	}
	stageOf := func(file string) string { return stages[len(stages)-rank[file]].name }

	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		_, ok := rank[name]
		require.True(t, ok, "%s is in no stage: add it to the table in docs/internals.md", name)
		src, err := os.ReadFile(name)
		require.NoError(t, err)
		f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
		require.NoError(t, err)
		files = append(files, f)
	}
	return fset, files, rank, stageOf
}

// checkPackage type-checks files with their uses and selections recorded.
// Imports are not followed: a name of this package resolves without them,
// and errors (another package's names, a file's twin for other build
// tags) do not stop the check.
func checkPackage(fset *token.FileSet, files []*ast.File) (*types.Package, *types.Info) {
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}
	conf := types.Config{Importer: fakeImporter{}, Error: func(error) {}}
	pkg, _ := conf.Check("github.com/gotracer/tracer", fset, files, info)
	return pkg, info
}

// TestStagesUseOnlyWhatIsBelow checks the layering of the package's files:
// every name a file's code uses (comments aside) is defined in its own
// stage or below it.
func TestStagesUseOnlyWhatIsBelow(t *testing.T) {
	fset, files, rank, stageOf := packageFiles(t)
	pkg, info := checkPackage(fset, files)
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

// values are the struct types that are plain values, filled by whoever
// holds one, not a stage's state.
var values = map[string]string{
	"Stats":       "what Stats returns",
	"options":     "the options, built before any stage runs, then read",
	"sinkOptions": "the sink's part of the options",
	"trackName":   "a track's name and sort index, copied",
	"catScope":    "an event's category and scope ids, passed by value",
}

// mutators are the methods of the atomic types that change their value.
var mutators = map[string]bool{
	"Store": true, "Add": true, "Sub": true, "Inc": true, "Dec": true,
	"Swap": true, "CompareAndSwap": true, "Toggle": true, "And": true, "Or": true,
}

// stageWrites returns, for the files given, each place where one stage's
// code assigns to or increments a field of a struct type that another
// stage declares, or changes it through an atomic type's method, as
// "file:line: field of file (stage)".
func stageWrites(fset *token.FileSet, files []*ast.File, rank map[string]int, stageOf func(string) string) []string {
	pkg, info := checkPackage(fset, files)
	var wrong []string
	for _, f := range files {
		from := filepath.Base(fset.Position(f.Pos()).Filename)
		check := func(x ast.Expr) {
			sel, ok := ast.Unparen(x).(*ast.SelectorExpr)
			if !ok {
				return
			}
			s := info.Selections[sel]
			if s == nil || s.Kind() != types.FieldVal || s.Obj().Pkg() != pkg {
				return
			}
			recv := s.Recv()
			if p, ok := recv.(*types.Pointer); ok {
				recv = p.Elem()
			}
			if n, ok := recv.(*types.Named); ok && values[n.Obj().Name()] != "" {
				return
			}
			to := filepath.Base(fset.Position(s.Obj().Pos()).Filename)
			if rank[to] != rank[from] {
				pos := fset.Position(sel.Pos())
				wrong = append(wrong, pos.Filename+":"+itoa(pos.Line)+": "+from+" ("+stageOf(from)+") changes "+
					sel.Sel.Name+" of "+to+" ("+stageOf(to)+")")
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				if n.Tok != token.DEFINE {
					for _, lhs := range n.Lhs {
						check(lhs)
					}
				}
			case *ast.IncDecStmt:
				check(n.X)
			case *ast.CallExpr:
				if sel, ok := ast.Unparen(n.Fun).(*ast.SelectorExpr); ok && mutators[sel.Sel.Name] {
					check(sel.X)
				}
			}
			return true
		})
	}
	sort.Strings(wrong)
	return wrong
}

// TestStagesOwnTheirState checks that every stage changes another's state
// only through the other's methods: no stage's code assigns to or
// increments a field of a type another stage declares, or changes one
// through an atomic type's method.
func TestStagesOwnTheirState(t *testing.T) {
	fset, files, rank, stageOf := packageFiles(t)
	assert.Empty(t, stageWrites(fset, files, rank, stageOf), "a stage changes another's state: give the owner a method")

	// The check finds a write planted in the flusher's code to a field of
	// the recorder, in every form it looks for.
	planted := `package tracer

func (f *flusher) planted() {
	f.r.lossless = true
	f.r.waiting.Inc()
	f.r.dropped.Add(1)
}
`
	p, err := parser.ParseFile(fset, "planted.go", planted, parser.SkipObjectResolution)
	require.NoError(t, err)
	rank["planted.go"] = rank["flusher.go"]
	got := stageWrites(fset, append(files, p), rank, stageOf)
	var fromPlanted []string
	for _, w := range got {
		if strings.HasPrefix(w, "planted.go:") {
			fromPlanted = append(fromPlanted, w)
		}
	}
	assert.Equal(t, []string{
		"planted.go:4: planted.go (flusher) changes lossless of record.go (recorder)",
		"planted.go:5: planted.go (flusher) changes waiting of record.go (recorder)",
		"planted.go:6: planted.go (flusher) changes dropped of record.go (recorder)",
	}, fromPlanted)
}

// fakeImporter gives every import an empty package.
type fakeImporter struct{}

func (fakeImporter) Import(path string) (*types.Package, error) {
	return types.NewPackage(path, filepath.Base(path)), nil
}
