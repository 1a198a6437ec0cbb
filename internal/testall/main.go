// Command testall runs the tests of every module in this repository: the
// root module and the nested ones (traceotel, goruntime, tracervet,
// tracehttp/routers, cmd/tracer/parquet, cmd/tracer/duckdb, benchmarks,
// examples/goruntime, examples/otel: every directory with a go.mod, found
// as it runs), which `go test ./...` from the root leaves out because each
// has its own go.mod.
//
// From the repository's root:
//
//	go run ./internal/testall                  # go test ./... in every module
//	go run ./internal/testall -race -count=1   # arguments go to every go test
//
// It runs `go test ARGS ./...` in each module, two at a time: the root
// module, whose tests take the longest, beside the nested ones in turn
// (each of those mostly builds, and would leave a core idle). Each
// module's output is printed whole, as go test prints it, once it
// finishes. It exits with status 1 if any module failed, after naming
// them. A module is a directory with a go.mod below
// the root; testdata directories and directories whose names start with
// "." or "_" are skipped, as the go command skips them.
package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

func main() {
	root, err := repoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testall:", err)
		os.Exit(2)
	}
	mods, err := modules(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testall:", err)
		os.Exit(2)
	}
	var (
		mu     sync.Mutex // orders the modules' outputs and failed
		failed []string
		wg     sync.WaitGroup
	)
	run := func(mod string) {
		var out bytes.Buffer
		fmt.Fprintf(&out, "== go test %s in %s\n", strings.Join(append(os.Args[1:], "./..."), " "), mod)
		cmd := exec.Command("go", append(append([]string{"test"}, os.Args[1:]...), "./...")...)
		cmd.Dir = filepath.Join(root, mod)
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		mu.Lock()
		defer mu.Unlock()
		os.Stdout.Write(out.Bytes())
		if err != nil {
			failed = append(failed, mod)
		}
	}
	wg.Go(func() { run(mods[0]) }) // the root module
	wg.Go(func() {
		for _, mod := range mods[1:] {
			run(mod)
		}
	})
	wg.Wait()
	if len(failed) > 0 {
		sort.Strings(failed)
		fmt.Fprintf(os.Stderr, "testall: FAIL in %s\n", strings.Join(failed, ", "))
		os.Exit(1)
	}
}

// repoRoot returns the directory of the main module's go.mod, the module
// `go run` was started in.
func repoRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("not inside a module: run it from the repository")
	}
	return filepath.Dir(gomod), nil
}

// modules returns the directories below root, root itself first as ".",
// that hold a go.mod, in lexical order, as slash-separated relative paths.
func modules(root string) ([]string, error) {
	var mods []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Name() == "go.mod" {
			rel, err := filepath.Rel(root, filepath.Dir(path))
			if err != nil {
				return err
			}
			mods = append(mods, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(mods) // "." first
	return mods, err
}
