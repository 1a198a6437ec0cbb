package doccode

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// A Block is one ```go block of a Markdown file.
type Block struct {
	Doc  string // the Markdown file, as the caller named it
	Line int    // the line of the block's first line of code, from 1
	Code string // the block's text, without its fences

	Given     string // the declarations of its doccode comment, if any
	GivenLine int    // the line of the comment's first declaration

	Skip string // why the block is not compiled, from "doccode: skip"
}

// Extract returns the ```go blocks of a Markdown file's text, with their
// doccode comments. An unclosed block, or a skip without a reason, is an
// error.
func Extract(doc, text string) ([]Block, error) {
	lines := strings.Split(text, "\n")
	var blocks []Block
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "```go" {
			continue
		}
		if lines[i] != "```go" {
			return nil, fmt.Errorf("%s:%d: an indented ```go block: start it at the line's start, where the check looks for it", doc, i+1)
		}
		end := i + 1
		for end < len(lines) && strings.TrimRight(lines[end], " ") != "```" {
			end++
		}
		if end == len(lines) {
			return nil, fmt.Errorf("%s:%d: a ```go block that is never closed", doc, i+1)
		}
		b := Block{Doc: doc, Line: i + 2, Code: strings.Join(lines[i+1:end], "\n")}
		if err := b.readComment(lines, i); err != nil {
			return nil, err
		}
		blocks = append(blocks, b)
		i = end
	}
	return blocks, nil
}

// readComment fills in the block's doccode comment, if the last thing
// before its fence (blank lines aside) is one. open is the fence's index.
func (b *Block) readComment(lines []string, open int) error {
	last := open - 1
	for last >= 0 && strings.TrimSpace(lines[last]) == "" {
		last--
	}
	if last < 0 || !strings.HasSuffix(strings.TrimSpace(lines[last]), "-->") {
		return nil
	}
	first := last
	for first >= 0 && !strings.Contains(lines[first], "<!--") {
		first--
	}
	if first < 0 {
		return nil
	}
	text := strings.Join(lines[first:last+1], "\n")
	text = strings.TrimSpace(text[strings.Index(text, "<!--")+len("<!--"):])
	text = strings.TrimSuffix(text, "-->")
	rest, ok := strings.CutPrefix(text, "doccode")
	if !ok {
		return nil // another comment
	}
	rest = strings.TrimPrefix(rest, ":")
	if reason, ok := strings.CutPrefix(strings.TrimSpace(rest), "skip"); ok && (reason == "" || reason[0] == ' ' || reason[0] == '\n') {
		b.Skip = strings.TrimSpace(reason)
		if b.Skip == "" {
			return fmt.Errorf("%s:%d: a doccode skip without a reason", b.Doc, first+1)
		}
		return nil
	}
	// The declarations start on the comment's first line, after
	// "doccode", or on the next one.
	b.GivenLine = first + 1
	if line, more, ok := strings.Cut(rest, "\n"); ok && strings.TrimSpace(line) == "" {
		rest = more
		b.GivenLine++
	}
	b.Given = strings.TrimRight(strings.TrimLeft(rest, " "), " \n")
	return nil
}

// A Kind is what a block's text is, and so how it is compiled.
type Kind int

// The kinds of block.
const (
	File         Kind = iota // a whole file, package clause included
	Declarations             // a file without its package clause
	Statements               // a function's body
)

func (k Kind) String() string {
	return [...]string{"file", "declarations", "statements"}[k]
}

// Kind tells what the block is: a file if its first line of code is a
// package clause, declarations if it parses as a file once given one,
// statements otherwise.
func (b Block) Kind() Kind {
	for _, line := range strings.Split(b.Code, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "//") {
			continue
		}
		if strings.HasPrefix(line, "package ") {
			return File
		}
		break
	}
	if _, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+b.Code, parser.SkipObjectResolution); err == nil {
		return Declarations
	}
	return Statements
}

// imports are the packages a block without imports of its own may use,
// by the name it uses them by. A name outside this list must be declared
// in the block's doccode comment.
var imports = map[string]string{
	"bufio":   "bufio",
	"bytes":   "bytes",
	"context": "context",
	"errors":  "errors",
	"fmt":     "fmt",
	"io":      "io",
	"json":    "encoding/json",
	"log":     "log",
	"net":     "net",
	"http":    "net/http",
	"os":      "os",
	"signal":  "os/signal",
	"slog":    "log/slog",
	"strconv": "strconv",
	"strings": "strings",
	"sync":    "sync",
	"testing": "testing",
	"time":    "time",

	"tracer":       "github.com/gotracer/tracer",
	"tracetest":    "github.com/gotracer/tracer/tracetest",
	"tracehttp":    "github.com/gotracer/tracer/tracehttp",
	"traceslog":    "github.com/gotracer/tracer/traceslog",
	"traceruntime": "github.com/gotracer/tracer/traceruntime",
	"goruntime":    "github.com/gotracer/tracer/goruntime",
	"traceotel":    "github.com/gotracer/tracer/traceotel",
	"tracechi":     "github.com/gotracer/tracer/tracehttp/routers/tracechi",
	"tracegorilla": "github.com/gotracer/tracer/tracehttp/routers/tracegorilla",

	"require":  "github.com/stretchr/testify/require",
	"chi":      "github.com/go-chi/chi/v5",
	"mux":      "github.com/gorilla/mux",
	"sdktrace": "go.opentelemetry.io/otel/sdk/trace",
}

// Source returns the block as a Go file, with //line directives that put
// its code and its doccode declarations at their lines of path (the
// Markdown file, as the compiler should name it). The file's package is
// the block's own, or doc.
func (b Block) Source(path string) (string, error) {
	if b.Skip != "" {
		return "", errors.New("a skipped block has no source")
	}
	code := lineDirective(path, b.Line) + b.Code + "\n"
	kind := b.Kind()
	if kind == File {
		if b.Given != "" {
			return "", fmt.Errorf("%s:%d: a whole file takes no doccode declarations", b.Doc, b.Line)
		}
		return code, nil
	}
	var body string // the function around statements, or the declarations
	if kind == Statements {
		names := declared(b.Code) // none if it does not parse: the compiler says why
		var uses strings.Builder
		for _, name := range names {
			fmt.Fprintf(&uses, "\t_ = %s\n", name)
		}
		body = "func _() {\n" + code + "//line doccode:1\n" + uses.String() + "}\n"
	} else {
		body = code
	}
	given := ""
	if b.Given != "" {
		given = lineDirective(path, b.GivenLine) + b.Given + "\n"
	}
	var src strings.Builder
	src.WriteString("package doc\n\n")
	if kind == Statements || !hasImports(b.Code) {
		for _, name := range importsFor(given + body) {
			fmt.Fprintf(&src, "import %s %q\n", name, imports[name]) // named: sdktrace's package is trace
		}
	}
	if kind == Declarations {
		// The block's imports must come before the declarations.
		src.WriteString(body)
		src.WriteString(given)
	} else {
		src.WriteString(given)
		src.WriteString(body)
	}
	return src.String(), nil
}

// lineDirective returns a //line directive that makes the next line line
// of path. It starts a line, as the compiler wants.
func lineDirective(path string, line int) string {
	return "\n//line " + path + ":" + strconv.Itoa(line) + ":1\n"
}

// hasImports tells whether declarations hold an import declaration.
func hasImports(code string) bool {
	f, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+code, parser.ImportsOnly)
	return err == nil && len(f.Imports) > 0
}

// declared returns the names that statements declare at their top level
// (with := or var), sorted, "_" left out; none if they do not parse.
func declared(code string) []string {
	f, err := parser.ParseFile(token.NewFileSet(), "", "package p\nfunc _() {\n"+code+"\n}", parser.SkipObjectResolution)
	if err != nil {
		return nil
	}
	var names []string
	add := func(id *ast.Ident) {
		if id.Name != "_" && !slices.Contains(names, id.Name) {
			names = append(names, id.Name)
		}
	}
	for _, s := range f.Decls[0].(*ast.FuncDecl).Body.List {
		switch s := s.(type) {
		case *ast.AssignStmt:
			if s.Tok == token.DEFINE {
				for _, e := range s.Lhs {
					if id, ok := e.(*ast.Ident); ok {
						add(id)
					}
				}
			}
		case *ast.DeclStmt:
			if g, ok := s.Decl.(*ast.GenDecl); ok && g.Tok == token.VAR {
				for _, spec := range g.Specs {
					for _, id := range spec.(*ast.ValueSpec).Names {
						add(id)
					}
				}
			}
		}
	}
	slices.Sort(names)
	return names
}

// importsFor returns the names of the packages a file without imports
// needs: those in [imports] that it uses as a package (x.Name) without
// declaring them, sorted; none if it does not parse.
func importsFor(src string) []string {
	f, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+src, 0)
	if err != nil {
		return nil
	}
	unresolved := map[string]bool{}
	for _, id := range f.Unresolved {
		unresolved[id.Name] = true
	}
	var names []string
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && unresolved[id.Name] && imports[id.Name] != "" && !slices.Contains(names, id.Name) {
				names = append(names, id.Name)
			}
		}
		return true
	})
	slices.Sort(names)
	return names
}

// nested are the modules of this repository that blocks may import,
// besides the root's, relative to the root.
var nested = []string{"goruntime", "traceotel", "tracehttp/routers"}

// Check compiles every block that is not skipped, each as a package of a
// module written in dir (which must be empty), with go build and go vet. root is the
// repository's root; a block's Doc is taken relative to it. It returns
// vet's complaints, at the blocks' lines in their Markdown files as
// relative paths, or "" when every block compiles. An error is a failure
// to run the check, not a complaint.
func Check(root, dir string, blocks []Block) (string, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return "", err
	}
	mod := "module doccode.check\n\ngo 1.26\n\nrequire github.com/gotracer/tracer v0.0.0\n\nreplace github.com/gotracer/tracer => " + root + "\n"
	for _, m := range nested {
		mod += "\nrequire github.com/gotracer/tracer/" + m + " v0.0.0\n"
		mod += "replace github.com/gotracer/tracer/" + m + " => " + filepath.Join(root, m) + "\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(mod), 0o644); err != nil {
		return "", err
	}
	// The sums of the modules the replaced ones need, from their go.sum
	// files, so that nothing is fetched.
	var sums []byte
	for _, m := range append([]string{"."}, nested...) {
		s, err := os.ReadFile(filepath.Join(root, m, "go.sum"))
		if err != nil {
			return "", err
		}
		sums = append(sums, s...)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sums, 0o644); err != nil {
		return "", err
	}
	n := 0
	for _, b := range blocks {
		if b.Skip != "" {
			continue
		}
		src, err := b.Source(filepath.Join(root, b.Doc))
		if err != nil {
			return "", err
		}
		pkg := filepath.Join(dir, fmt.Sprintf("b%03d", n))
		n++
		if err := os.Mkdir(pkg, 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(pkg, "doc.go"), []byte(src), 0o644); err != nil {
			return "", err
		}
	}
	if n == 0 {
		return "", nil
	}
	env := append(os.Environ(), "GOWORK=off", "GOFLAGS="+os.Getenv("GOFLAGS")+" -mod=mod")
	tidy := exec.Command("go", "mod", "tidy", "-e") // a bad import is vet's to report
	tidy.Dir, tidy.Env = dir, env
	if out, err := tidy.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go mod tidy in the blocks' module: %v\n%s", err, out)
	}
	// go build reports every compile error (vet stops at a package's
	// first); vet then checks what compiles.
	for _, args := range [][]string{{"build", "./..."}, {"vet", "./..."}} {
		cmd := exec.Command("go", args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err == nil {
			continue
		}
		if _, ok := err.(*exec.ExitError); !ok {
			return "", err
		}
		// Name the Markdown files as the reader knows them.
		return string(bytes.ReplaceAll(out, []byte(root+string(filepath.Separator)), nil)), nil
	}
	return "", nil
}
