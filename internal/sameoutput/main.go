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
//
// Then it builds every example program (examples/*/main.go) at REV and at
// the working tree, runs each build -runs times, and compares the shapes
// of the lines they write (compareExamples): an example's goroutines and
// requests interleave as the scheduler has them, so only the kinds of
// events, their fields and their args' keys can be the same. -examples=false
// leaves them out.
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

// examples says whether to compare the example programs' files too.
var examples bool

func main() {
	base := flag.String("base", "", "the revision to compare with (required)")
	runs := flag.Int("runs", 3, "runs of each build in each mode")
	flag.BoolVar(&examples, "examples", true, "compare the files the example programs write too")
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
	if examples {
		d, err := compareExamples(root, old, tmp, runs)
		if err != nil {
			return err
		}
		differ = differ || d
	}
	if differ {
		return fmt.Errorf("the files differ")
	}
	fmt.Println("same output")
	return nil
}

// compareExamples builds every example program at REV (in old) and in
// the working tree (root), runs each build runs times in a directory of
// its own, and compares the lines of the files they leave there, masked:
// an example's goroutines and requests interleave as the scheduler has
// them, and its timings decide how many of some events there are, so the
// files are compared as sets of distinct shapes of line (exampleMasks).
// Every event a new run writes must be one an old run wrote (its name,
// phase, category and fields); an arg no old run gave it, or a shape that
// every old run wrote and a new run lacks, is noted, as the scheduler
// decides some of them. The exact bytes are the workload's to compare
// (above). It reports whether any differ.
func compareExamples(root, old, tmp string, runs int) (bool, error) {
	mains, err := filepath.Glob(filepath.Join(root, "examples", "*", "main.go"))
	if err != nil {
		return false, err
	}
	differ := false
	for _, main := range mains {
		name := filepath.Base(filepath.Dir(main))
		if _, err := os.Stat(filepath.Join(old, "examples", name, "main.go")); err != nil {
			fmt.Printf("example %s: new since the base, not compared\n", name)
			continue
		}
		bins := map[string]string{}
		for build, tree := range map[string]string{"old": old, "new": root} {
			bins[build] = filepath.Join(tmp, "example-"+name+"-"+build)
			dir := filepath.Join(tree, "examples", name)
			pkg := "."
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
				dir, pkg = tree, "./examples/"+name // in the root module
			}
			if _, err := output(dir, "go", "build", "-o", bins[build], pkg); err != nil {
				return false, err
			}
		}
		sets := map[string][]map[string]bool{}
		for i := range runs {
			for _, build := range []string{"old", "new"} {
				dir := filepath.Join(tmp, fmt.Sprintf("example-%s-%s-%d", name, build, i))
				if err := os.Mkdir(dir, 0o755); err != nil {
					return false, err
				}
				cmd := exec.Command(bins[build])
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), "TRACER_CLOCK=nanotime")
				if out, err := cmd.CombinedOutput(); err != nil {
					return false, fmt.Errorf("example %s, %s build: %v\n%s", name, build, err, out)
				}
				lines, err := normalised(dir, true)
				if err != nil {
					return false, fmt.Errorf("example %s: %w", name, err)
				}
				set := map[string]bool{}
				for _, l := range lines {
					for _, m := range exampleMasks {
						l = m.re.ReplaceAllString(l, m.with)
					}
					set[maskArgValues(l)] = true
				}
				sets[build] = append(sets[build], set)
			}
		}
		everyOld, anyOld := map[string]bool{}, map[string]bool{}
		for l := range sets["old"][0] {
			everyOld[l] = true
		}
		keysOf := map[string]map[string]bool{} // the arg keys old runs gave each event shape
		for _, set := range sets["old"] {
			for l := range everyOld {
				if !set[l] {
					delete(everyOld, l)
				}
			}
			for l := range set {
				anyOld[l] = true
				head, keys := splitArgs(l)
				if keysOf[head] == nil {
					keysOf[head] = map[string]bool{}
				}
				for _, k := range keys {
					keysOf[head][k] = true
				}
			}
		}
		for i, set := range sets["new"] {
			for l := range set {
				if anyOld[l] {
					continue
				}
				// A line no old run wrote is the old builds' too if they
				// wrote its event in some run; an arg they never gave it
				// (a request that failed, or came with a traceparent, in
				// this run only) is noted.
				head, keys := splitArgs(l)
				if keysOf[head] == nil {
					differ = true
					fmt.Printf("example %s: run %d of the new build wrote an event no run of the old one did:\n\t%s\n", name, i+1, l)
					break
				}
				for _, k := range keys {
					if !keysOf[head][k] {
						fmt.Printf("example %s: note: run %d of the new build gave an event an arg no run of the old one did:\n\t%s\n", name, i+1, l)
						break
					}
				}
			}
			for l := range everyOld {
				if !set[l] {
					// An event the scheduler decides (a GC assist, a slow
					// request) can be missing from one run: a note.
					fmt.Printf("example %s: note: run %d of the new build lacks a line every run of the old one wrote:\n\t%s\n", name, i+1, l)
					break
				}
			}
		}
		fmt.Printf("example %s: %d distinct lines in every old run, %d in some, %d runs of each build compared\n", name, len(everyOld), len(anyOld), runs)
	}
	return differ, nil
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

// exampleMasks replace, besides masks, what an example's own choices and
// the scheduler make differ from run to run: random ids and sizes, ports,
// counts, measured times, which error a request met. What is left is each
// event's shape: its name, phase, category and the keys of its args.
var exampleMasks = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`[0-9a-f]{16,}`), `HEX`},
	{regexp.MustCompile(`[0-9]+`), `N`},
}

// splitArgs returns a line without its args, and the keys of its args.
// A span written whole (X) and one written open (B, whose end is to come,
// or which a dump cut) are one event: which it is follows the scheduler.
func splitArgs(line string) (head string, keys []string) {
	line = strings.Replace(strings.Replace(line, `"ph":"X"`, `"ph":"span"`, 1), `"ph":"B"`, `"ph":"span"`, 1)
	line = strings.Replace(line, `"dur":N,`, "", 1)
	i := strings.Index(line, `"args":{`)
	if i < 0 {
		return line, nil
	}
	for _, m := range argValue.FindAllStringSubmatch(line[i+len(`"args":{`):], -1) {
		keys = append(keys, m[1])
	}
	return line[:i], keys
}

// maskArgValues replaces the value of every arg of line with V.
func maskArgValues(line string) string {
	i := strings.Index(line, `"args":{`)
	if i < 0 {
		return line
	}
	return line[:i] + argValue.ReplaceAllString(line[i:], `${1}V`)
}

// argValue is a key and the value after it, a string or anything up to
// the next comma or brace.
var argValue = regexp.MustCompile(`("[^"\\]*(?:\\.[^"\\]*)*":)(?:"[^"\\]*(?:\\.[^"\\]*)*"|[^,{}"]+)`)

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
