package doccode

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// root is the repository's root, from this package's directory.
const root = "../.."

// TestDocBlocksCompile compiles every ```go block of README.md and
// docs/*.md, as the package doc says.
func TestDocBlocksCompile(t *testing.T) {
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	docs = append([]string{filepath.Join(root, "README.md")}, docs...)
	var blocks []Block
	for _, doc := range docs {
		text, err := os.ReadFile(doc)
		require.NoError(t, err)
		rel, err := filepath.Rel(root, doc)
		require.NoError(t, err)
		bs, err := Extract(filepath.ToSlash(rel), string(text))
		require.NoError(t, err)
		blocks = append(blocks, bs...)
	}
	skipped := 0
	for _, b := range blocks {
		if b.Skip != "" {
			skipped++
			t.Logf("%s:%d: not compiled: %s", b.Doc, b.Line, b.Skip)
		}
	}
	require.NotEmpty(t, blocks, "no ```go block found: the check reads nothing")
	// A skip is for what cannot be code; most blocks are.
	require.LessOrEqual(t, skipped*10, len(blocks), "%d of %d blocks skipped", skipped, len(blocks))

	problems, err := Check(root, t.TempDir(), blocks)
	require.NoError(t, err)
	require.Empty(t, problems, "Go blocks of the docs that do not compile (a fragment's assumptions go in a doccode comment: see the package doc)")
	t.Logf("%d blocks compiled, %d skipped", len(blocks)-skipped, skipped)
}

// TestCheckFindsProblems plants blocks that do not compile, each the way
// a doc goes wrong, and checks that each is reported at its line.
func TestCheckFindsProblems(t *testing.T) {
	doc := strings.Join([]string{
		/* 1 */ "# Planted",
		/* 2 */ "```go",
		/* 3 */ `import "github.com/gotracer/tracer"`,
		/* 4 */ "",
		/* 5 */ "func main() {",
		/* 6 */ `	if err := tracer.Start("trace.json"); err != nil {`,
		/* 7 */ "		log.Fatal(err)",
		/* 8 */ "	}",
		/* 9 */ "	run()",
		/* 10 */ "}",
		/* 11 */ "```",
		/* 12 */ "<!-- doccode",
		/* 13 */ "var jobs chan int",
		/* 14 */ "-->",
		/* 15 */ "```go",
		/* 16 */ "for j := range jobs {",
		/* 17 */ `	defer tracer.Span("job", tracer.Int("id", j))()`,
		/* 18 */ "	process(j)",
		/* 19 */ "}",
		/* 20 */ "```",
		/* 21 */ "```go",
		/* 22 */ `t, err := tracer.New("a.json")`,
		/* 23 */ `t, err := tracer.New("b.json")`,
		/* 24 */ "```",
		/* 25 */ "```go",
		/* 26 */ `defer tracer.Span("fine", tracer.String("k", "v"))()`,
		/* 27 */ `rec, err := tracer.NewFlightRecorder(tracer.FlightRecorderConfig{})`,
		/* 28 */ "```",
		/* 29 */ "<!-- doccode: skip not Go -->",
		/* 30 */ "```go",
		/* 31 */ "Span(name string, args ...Arg) func(...Arg)",
		/* 32 */ "```",
	}, "\n")
	blocks, err := Extract("planted.md", doc)
	require.NoError(t, err)
	require.Len(t, blocks, 5)

	problems, err := Check(root, t.TempDir(), blocks)
	require.NoError(t, err)
	t.Log(problems)
	assert.Contains(t, problems, "planted.md:7:3: undefined: log", "an import missing from a block that lists its imports")
	assert.Contains(t, problems, "planted.md:9:2: undefined: run", "a function the block does not declare")
	assert.Contains(t, problems, "planted.md:18:2: undefined: process", "a name neither the block nor its comment declares")
	assert.Contains(t, problems, "planted.md:23:8: no new variables", "alternatives written as one block of statements")
	assert.NotContains(t, problems, "planted.md:26", "the block that compiles")
	assert.NotContains(t, problems, "planted.md:27", "the block that compiles")
	assert.NotContains(t, problems, "planted.md:31", "the skipped block")

	// What compiles goes on to go vet.
	blocks, err = Extract("vetted.md", "```go\nfmt.Printf(\"%d spans\\n\", \"many\")\n```\n")
	require.NoError(t, err)
	problems, err = Check(root, t.TempDir(), blocks)
	require.NoError(t, err)
	assert.Contains(t, problems, "vetted.md:2:13: fmt.Printf format %d has arg \"many\" of wrong type string")
}

func TestExtract(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []Block // Doc is "t.md" in each
		err  string
	}{
		{
			name: "a block",
			doc:  "text\n\n```go\nx := 1\n```\n",
			want: []Block{{Line: 4, Code: "x := 1"}},
		},
		{
			name: "other languages are not read",
			doc:  "```sh\ngo test\n```\n```json\n{}\n```\n```\nplain\n```\n",
		},
		{
			name: "a skip and its reason",
			doc:  "<!-- doccode: skip a signature -->\n\n```go\nSpan(name string)\n```",
			want: []Block{{Line: 4, Code: "Span(name string)", Skip: "a signature"}},
		},
		{
			name: "declarations on the comment's lines",
			doc:  "<!-- doccode\nvar mux *http.ServeMux\nfunc run() {}\n-->\n```go\nrun()\n```",
			want: []Block{{Line: 6, Code: "run()", Given: "var mux *http.ServeMux\nfunc run() {}", GivenLine: 2}},
		},
		{
			name: "declarations on the comment's first line",
			doc:  "a\n<!-- doccode: var k string -->\n```go\nuse(k)\n```",
			want: []Block{{Line: 4, Code: "use(k)", Given: "var k string", GivenLine: 2}},
		},
		{
			name: "another comment is not the block's",
			doc:  "<!-- a note -->\n```go\nx()\n```",
			want: []Block{{Line: 3, Code: "x()"}},
		},
		{
			name: "a comment with text after it is not the block's",
			doc:  "<!-- doccode: skip why -->\nSome text.\n```go\nx()\n```",
			want: []Block{{Line: 4, Code: "x()"}},
		},
		{
			name: "two blocks",
			doc:  "```go\na()\n```\n\n```go\nb()\n\nc()\n```\n",
			want: []Block{{Line: 2, Code: "a()"}, {Line: 6, Code: "b()\n\nc()"}},
		},
		{name: "a skip without a reason", doc: "<!-- doccode: skip -->\n```go\nx\n```", err: "t.md:1: a doccode skip without a reason"},
		{name: "never closed", doc: "```go\nx()\n", err: "t.md:1: a ```go block that is never closed"},
		{name: "indented", doc: "- item\n\n  ```go\n  x()\n  ```\n", err: "t.md:3: an indented"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Extract("t.md", tt.doc)
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			for i := range tt.want {
				tt.want[i].Doc = "t.md"
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestKind(t *testing.T) {
	tests := []struct {
		code string
		want Kind
	}{
		{"package main\n\nfunc main() {}", File},
		{"// Command x does y.\npackage main", File},
		{"import \"fmt\"\n\nfunc main() { fmt.Println() }", Declarations},
		{"var catSQL = tracer.Category(\"sql\")\n\nfunc (db *DB) Query() {}", Declarations},
		{"func TestMain(m *testing.M) { tracetest.Main(m) }", Declarations},
		{"tracer.Start(\"trace.json\")", Statements},
		{"x := 1\nfunc() {}()", Statements},
		{"for range 3 {\n}", Statements},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, Block{Code: tt.code}.Kind(), "%q", tt.code)
	}
}

func TestSource(t *testing.T) {
	tests := []struct {
		name  string
		block Block
		has   []string
		lacks []string
	}{
		{
			name:  "statements: wrapped, their variables used, their imports added",
			block: Block{Line: 10, Code: "rec, err := tracer.NewFlightRecorder(cfg)\nvar n int\n_ = http.StatusOK"},
			has: []string{"package doc\n", `import tracer "github.com/gotracer/tracer"`, `import http "net/http"`,
				"func _() {\n\n//line /d/x.md:10:1\nrec, err :=", "\t_ = err\n\t_ = n\n\t_ = rec\n"},
		},
		{
			name:  "a block's own imports are all it gets",
			block: Block{Line: 3, Code: "import \"github.com/gotracer/tracer\"\n\nfunc main() { log.Fatal(tracer.Stop()) }"},
			has:   []string{"package doc\n\n\n//line /d/x.md:3:1\nimport \"github.com/gotracer/tracer\""},
			lacks: []string{`"log"`},
		},
		{
			name:  "a name the comment declares is not a package",
			block: Block{Line: 8, Code: "mux.Handle(\"/\", h)", Given: "var mux *http.ServeMux\nvar h http.Handler", GivenLine: 2},
			has:   []string{`import http "net/http"`, "//line /d/x.md:2:1\nvar mux *http.ServeMux"},
			lacks: []string{"github.com/gorilla/mux"},
		},
		{
			name:  "a package imported by the name the docs use",
			block: Block{Line: 1, Code: "tp := sdktrace.NewTracerProvider()"},
			has:   []string{`import sdktrace "go.opentelemetry.io/otel/sdk/trace"`},
		},
		{
			name:  "a name no one declares and not in the table is left to fail",
			block: Block{Line: 1, Code: "yaml.Marshal(v)"},
			lacks: []string{"import"},
		},
		{
			name:  "declarations: the comment's after the imports",
			block: Block{Line: 5, Code: "func handle() { run() }", Given: "func run() {}", GivenLine: 2},
			has:   []string{"package doc\n\n\n//line /d/x.md:5:1\nfunc handle() { run() }\n\n//line /d/x.md:2:1\nfunc run() {}\n"},
		},
		{
			name:  "a file as it is",
			block: Block{Line: 2, Code: "package main\n\nfunc main() {}"},
			has:   []string{"\n//line /d/x.md:2:1\npackage main\n\nfunc main() {}\n"},
			lacks: []string{"package doc"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.block.Doc = "x.md"
			src, err := tt.block.Source("/d/x.md")
			require.NoError(t, err)
			for _, s := range tt.has {
				assert.Contains(t, src, s)
			}
			for _, s := range tt.lacks {
				assert.NotContains(t, src, s)
			}
		})
	}

	_, err := Block{Doc: "x.md", Line: 1, Code: "package p", Given: "var x int"}.Source("/d/x.md")
	require.ErrorContains(t, err, "a whole file takes no doccode declarations")
}

// FuzzExtract checks that any text is read without a panic, and that each
// block found is the text between its fences.
func FuzzExtract(f *testing.F) {
	f.Add("```go\nx := 1\n```\n")
	f.Add("<!-- doccode: skip why -->\n```go\nx\n```")
	f.Add("<!-- doccode\nvar x int\n-->\n\n```go\nx++\n```")
	f.Add("-->\n```go\n```")
	f.Add("<!--doccode-->\n```go\n\n```")
	f.Fuzz(func(t *testing.T, doc string) {
		blocks, err := Extract("f.md", doc)
		if err != nil {
			return
		}
		lines := strings.Split(doc, "\n")
		for _, b := range blocks {
			require.GreaterOrEqual(t, b.Line, 2)
			require.Equal(t, "```go", lines[b.Line-2])
			end := b.Line - 1
			for strings.TrimRight(lines[end], " ") != "```" {
				end++
			}
			require.Equal(t, strings.Join(lines[b.Line-1:end], "\n"), b.Code)
			_ = b.Kind()
			if b.Skip == "" {
				_, _ = b.Source("/f.md")
			}
		}
	})
}
