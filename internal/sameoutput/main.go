// Command sameoutput checks that a change wrote the same trace files as a
// revision before it: what a restructuring of the engine must keep. From
// the repository's root:
//
//	go run ./internal/sameoutput -base REV
//
// It builds the workload program (internal/sameoutput/workload: one
// goroutine recording every kind of event, a span open across flushes, a
// SpanHandle open at Close) against the working tree and against REV (in a
// temporary git worktree), runs each -runs times in every mode (plain,
// WithLanes, rotated files of 8 KiB) with TRACER_CLOCK=nanotime, and
// compares the files. What differs from run to run is masked first: times,
// durations, clock anchors, pids, tids, goroutine ids, async and flow ids,
// and the blank lines that keep events off page boundaries, whose count
// follows the length of the times. Plain and lanes files must then be equal
// line for line, in order; a rotated set, whose cuts follow byte counts,
// must hold the same lines. Each run of the new build must match one of
// the old build's runs: with lanes, where a goroutine's name lands can
// follow the scheduler, so the old build's own runs may differ, which it
// notes. It exits with status 1, after saying which differ and how, if
// any new run matches no old one.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

var modes = []string{"plain", "lanes", "rotate"}

func main() {
	base := flag.String("base", "", "the revision to compare with (required)")
	runs := flag.Int("runs", 3, "runs of each build in each mode")
	flag.Parse()
	if *base == "" {
		fmt.Fprintln(os.Stderr, "usage: go run ./internal/sameoutput -base REV [-runs N]")
		os.Exit(2)
	}
	if err := run(*base, *runs); err != nil {
		fmt.Fprintln(os.Stderr, "sameoutput:", err)
		os.Exit(1)
	}
}

func run(base string, runs int) error {
	root, err := output("", "git", "rev-parse", "--show-toplevel")
	if err != nil {
		return err
	}
	root = strings.TrimSpace(root)
	tmp, err := os.MkdirTemp("", "sameoutput")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	old := filepath.Join(tmp, "base")
	if _, err := output(root, "git", "worktree", "add", "--detach", old, base); err != nil {
		return err
	}
	defer output(root, "git", "worktree", "remove", "--force", old)

	bins := map[string]string{"new": filepath.Join(tmp, "new"), "old": filepath.Join(tmp, "old")}
	if _, err := output(root, "go", "build", "-o", bins["new"], "./internal/sameoutput/workload"); err != nil {
		return err
	}
	// The same program, in a module of its own whose tracer is REV's.
	mod := filepath.Join(tmp, "mod")
	src, err := os.ReadFile(filepath.Join(root, "internal/sameoutput/workload/main.go"))
	if err != nil {
		return err
	}
	goMod := "module sameoutput\n\ngo 1.24\n\nrequire github.com/gotracer/tracer v0.0.0\n\nreplace github.com/gotracer/tracer => " + old + "\n"
	if err := os.MkdirAll(mod, 0o755); err != nil {
		return err
	}
	for name, data := range map[string][]byte{"main.go": src, "go.mod": []byte(goMod)} {
		if err := os.WriteFile(filepath.Join(mod, name), data, 0o644); err != nil {
			return err
		}
	}
	if _, err := output(mod, "go", "mod", "tidy"); err != nil {
		return err
	}
	if _, err := output(mod, "go", "build", "-o", bins["old"], "."); err != nil {
		return err
	}

	differ := false
	for _, mode := range modes {
		runsOf := map[string][][]string{}
		for i := range runs {
			for _, build := range []string{"old", "new"} {
				dir := filepath.Join(tmp, fmt.Sprintf("%s-%s-%d", mode, build, i))
				if err := os.Mkdir(dir, 0o755); err != nil {
					return err
				}
				cmd := exec.Command(bins[build], mode, filepath.Join(dir, "t.json"))
				cmd.Env = append(os.Environ(), "TRACER_CLOCK=nanotime")
				if out, err := cmd.CombinedOutput(); err != nil {
					return fmt.Errorf("%s build, %s: %v\n%s", build, mode, err, out)
				}
				got, err := normalised(dir, mode == "rotate")
				if err != nil {
					return err
				}
				runsOf[build] = append(runsOf[build], got)
			}
		}
		olds := runsOf["old"]
		for i, got := range runsOf["new"] {
			if !slices.ContainsFunc(olds, func(old []string) bool { return slices.Equal(old, got) }) {
				differ = true
				fmt.Printf("%s: run %d of the new build is like no run of the old one; against the first: %s\n", mode, i+1, firstDifference(olds[0], got))
			}
		}
		for i, old := range olds[1:] {
			if d := firstDifference(olds[0], old); d != "" {
				fmt.Printf("%s: note: the old build itself wrote another file in run %d: %s\n", mode, i+2, d)
			}
		}
		fmt.Printf("%s: %d lines, %d runs of each build compared\n", mode, len(olds[0]), runs)
	}
	if differ {
		return fmt.Errorf("the files differ")
	}
	fmt.Println("same output")
	return nil
}

// masks replace what differs from run to run.
var masks = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`"(ts|dur|ts0_unix_ns|ts0_mono_ns)":-?[0-9.]+`), `"$1":N`},
	{regexp.MustCompile(`"ts0_wall":"[^"]*"`), `"ts0_wall":W`},
	{regexp.MustCompile(`"(pid|tid|goroutine)":[0-9]+`), `"$1":N`},
	{regexp.MustCompile(`goroutine [0-9]+`), `goroutine N`},
	{regexp.MustCompile(`"(id|bind_id)":("0x[0-9a-f]+"|[0-9]+)`), `"$1":ID`},
	{regexp.MustCompile(`"id2":\{"(local|global)":"0x[0-9a-f]+"\}`), `"id2":ID`},
}

// normalised returns the lines of the files in dir, masked, without blank
// lines; sorted and without repeats for a rotated set.
func normalised(dir string, set bool) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no file written", dir)
	}
	var lines []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for _, line := range strings.Split(string(data), "\n") {
			if strings.TrimSpace(line) == "" {
				continue
			}
			for _, m := range masks {
				line = m.re.ReplaceAllString(line, m.with)
			}
			lines = append(lines, line)
		}
	}
	if set {
		slices.Sort(lines)
		lines = slices.Compact(lines)
	}
	return lines, nil
}

// firstDifference describes where two files part, or returns "".
func firstDifference(want, got []string) string {
	for i := range min(len(want), len(got)) {
		if want[i] != got[i] {
			return fmt.Sprintf("line %d is\n\t%s\nwhere it was\n\t%s", i+1, got[i], want[i])
		}
	}
	if len(want) != len(got) {
		return fmt.Sprintf("%d lines where there were %d", len(got), len(want))
	}
	return ""
}

// output runs a command in dir and returns its standard output, or an
// error with what it printed.
func output(dir, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return string(out), nil
}
