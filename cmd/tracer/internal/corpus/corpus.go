// Package corpus lists the traces in cmd/tracer/testdata/tools: files
// written by real tools (the Go toolchain, Node.js, TypeScript, clang,
// CMake, webpack, headless Chromium) on a machine like the one the tests
// run on, so that tests and benchmarks can range over them.
//
// The small files are committed gzipped. The large ones are made by
// testdata/tools/make.sh into a cache directory and read by benchmarks;
// a test that wants them skips when they are missing.
package corpus

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// CacheEnv names the environment variable that moves the large files'
// directory; make.sh reads the same variable.
const CacheEnv = "TRACER_CORPUS_CACHE"

// A File is one trace of the corpus.
type File struct {
	// Name is the file's base name, as make.sh writes it.
	Name string
	// Tool is what wrote it: "go", "node", "tsc", "clang", "cmake",
	// "webpack" or "chromium".
	Tool string
	// Gzip reports whether the file is gzip-compressed.
	Gzip bool
	// Large reports whether the file lives in the cache, made by
	// make.sh for benchmarks rather than committed.
	Large bool
	// Path is where the file is, or would be once make.sh has run.
	Path string
}

// files is the corpus, in the order make.sh makes it. README.md says how
// each was made and what the viewers make of it.
var files = []File{
	{Name: "go-build.json.gz", Tool: "go", Gzip: true},
	{Name: "node-server.json.gz", Tool: "node", Gzip: true},
	{Name: "node-workers.json.gz", Tool: "node", Gzip: true},
	{Name: "tsc6-trace.json.gz", Tool: "tsc", Gzip: true},
	{Name: "tsc7-trace.json.gz", Tool: "tsc", Gzip: true},
	{Name: "clang-spans-cpp.json.gz", Tool: "clang", Gzip: true},
	{Name: "clang-ring-c.json.gz", Tool: "clang", Gzip: true},
	{Name: "cmake-configure.json.gz", Tool: "cmake", Gzip: true},
	{Name: "webpack-small.json.gz", Tool: "webpack", Gzip: true},
	{Name: "chromium-startup-small.json.gz", Tool: "chromium", Gzip: true},
	{Name: "webpack-large.json", Tool: "webpack", Large: true},
	{Name: "chromium-startup.json", Tool: "chromium", Large: true},
}

// Files returns every file of the corpus, small and large, with its
// Path set. It fails only when the module's root cannot be found from
// the working directory.
func Files() ([]File, error) {
	dir, err := Dir()
	if err != nil {
		return nil, err
	}
	cache := CacheDir(dir)
	out := make([]File, len(files))
	for i, f := range files {
		f.Path = filepath.Join(dir, f.Name)
		if f.Large {
			f.Path = filepath.Join(cache, f.Name)
		}
		out[i] = f
	}
	return out, nil
}

// Dir returns the corpus directory, cmd/tracer/testdata/tools of the
// module that holds the working directory.
func Dir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		mod, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil && modulePath(string(mod)) == "github.com/gotracer/tracer" {
			return filepath.Join(d, "cmd", "tracer", "testdata", "tools"), nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("corpus: no github.com/gotracer/tracer module above %s", wd)
		}
	}
}

// CacheDir returns where make.sh writes the large files: $TRACER_CORPUS_CACHE,
// or .cache in the corpus directory dir.
func CacheDir(dir string) string {
	if c := os.Getenv(CacheEnv); c != "" {
		return c
	}
	return filepath.Join(dir, ".cache")
}

// modulePath returns the path a go.mod file's module line declares.
func modulePath(mod string) string {
	for line := range strings.Lines(mod) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// ErrNotMade is returned by Open for a large file make.sh has not made.
var ErrNotMade = errors.New("not made: run cmd/tracer/testdata/tools/make.sh large")

// Open opens the file and returns its JSON text, decompressed.
func (f File) Open() (io.ReadCloser, error) {
	r, err := os.Open(f.Path)
	if err != nil {
		if f.Large && errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("corpus: %s: %w", f.Name, ErrNotMade)
		}
		return nil, err
	}
	if !f.Gzip {
		return r, nil
	}
	z, err := gzip.NewReader(r)
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("corpus: %s: %w", f.Name, err)
	}
	return gzipFile{z, r}, nil
}

// gzipFile closes both the decompressor and the file under it.
type gzipFile struct {
	*gzip.Reader
	f *os.File
}

func (g gzipFile) Close() error {
	return errors.Join(g.Reader.Close(), g.f.Close())
}
