//go:build linux

// Command torture is the tracer's torture test: from a seed it draws a
// configuration (sinks, options, faults) and a workload shaped like users'
// programs, runs the workload in a child process, and checks every
// invariant docs/guarantees.md promises: no freeze, bounded memory, no
// leaked goroutine, file descriptor or file, every file strict JSON and
// loadable by both viewers' importers, B/E and X nested per goroutine,
// and every event recorded either in the files or counted in Stats.
//
//	go run ./internal/torture -seed 42                  # one seed, 5s
//	go run ./internal/torture -seed 42 -runs 10         # the same seed 10 times
//	go run ./internal/torture -budget 2m -seeds-file internal/torture/seeds.txt
//	go run ./internal/torture -duration 30m             # the soak: one fresh seed for 30 minutes
//
// A seed fixes the configuration and the workload, not the scheduling: a
// race may need several runs of one seed, which -runs gives. Every
// failure prints its seed and the command that runs it again.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"
)

// options are the parent's flags.
type options struct {
	duration  time.Duration
	runs      int
	budget    time.Duration
	keep      bool
	verbose   bool
	importers string
	dir       string
	slack     time.Duration
	shapes    string
	exe       string
}

func main() {
	var (
		o         options
		seed      = flag.Uint64("seed", 0, "the seed to run; 0 draws a fresh one (printed)")
		seedsFile = flag.String("seeds-file", "", "run every seed listed in this file (one a line, # comments) first")
		child     = flag.String("child", "", "internal: run as the child process of this role (main, rival)")
		path      = flag.String("path", "", "internal: the rival's path")
		until     = flag.Int64("until", 0, "internal: when the rival stops trying (unix ns)")
		fsize     = flag.Bool("fsize", false, "internal: fill the disk with RLIMIT_FSIZE, a tmpfs was refused")
	)
	flag.DurationVar(&o.duration, "duration", 5*time.Second, "how long each run's workload records")
	flag.IntVar(&o.runs, "runs", 1, "runs of each seed (a seed fixes the workload, not the scheduling)")
	flag.DurationVar(&o.budget, "budget", 0, "after the listed seeds, run fresh seeds (one at least) until this much time has passed in all")
	flag.BoolVar(&o.keep, "keep", false, "keep the files of a failed run (printed), rather than removing them")
	flag.BoolVar(&o.verbose, "v", false, "print each run's configuration and checks")
	flag.StringVar(&o.importers, "importers", "sample", "load files in the real importers: sample (about one seed in five, drawn from the seed), all, or none")
	flag.StringVar(&o.dir, "dir", "", "where runs write their files (default: the system's temporary directory)")
	flag.StringVar(&o.shapes, "shapes", "", "run only these workload shapes of the seed (pool,server,...), to bisect a failure")
	flag.DurationVar(&o.slack, "slack", 10*time.Second, "how much longer than the stop timeout a goroutine may go without progress before the run counts as frozen")
	flag.Parse()

	switch *child {
	case "main":
		os.Exit(childMain(*seed, o.duration, o.dir, *fsize, o.shapes))
	case "rival":
		os.Exit(rivalMain(*path, *until))
	case "":
	default:
		fmt.Fprintf(os.Stderr, "torture: unknown -child %q\n", *child)
		os.Exit(2)
	}

	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "torture:", err)
		os.Exit(2)
	}
	o.exe = exe
	switch o.importers {
	case "sample", "all", "none":
	default:
		fmt.Fprintf(os.Stderr, "torture: -importers is sample, all or none, not %q\n", o.importers)
		os.Exit(2)
	}

	var seeds []uint64
	if *seedsFile != "" {
		s, err := readSeeds(*seedsFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "torture:", err)
			os.Exit(2)
		}
		seeds = append(seeds, s...)
	}
	fresh := func() uint64 { return rand.Uint64() >> 1 } // one JSON number, one shell word
	if *seed != 0 {
		seeds = append(seeds, *seed)
	} else if *seedsFile == "" && o.budget == 0 {
		seeds = append(seeds, fresh())
	}

	start := time.Now()
	failed := 0
	total := 0
	runSeed := func(s uint64) {
		for i := 1; i <= o.runs; i++ {
			total++
			if r := o.run(s, i); len(r.fails) > 0 {
				failed++
			}
		}
	}
	for _, s := range seeds {
		runSeed(s)
	}
	// A budget runs one fresh seed at least, after the listed ones.
	for first := true; o.budget > 0 && (first || time.Since(start) < o.budget); first = false {
		runSeed(fresh())
	}
	fmt.Printf("torture: %d runs, %d failed, %v\n", total, failed, time.Since(start).Round(time.Second))
	fmt.Println("torture: a seed fixes the configuration and the workload, not the scheduling: repeat one with -seed N -runs K")
	if failed > 0 {
		os.Exit(1)
	}
}

// readSeeds reads a seeds file: a seed a line, then anything; # starts a
// comment.
func readSeeds(path string) ([]uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var seeds []uint64
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(text)
		if len(fields) == 0 {
			continue
		}
		s, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil || s == 0 {
			return nil, fmt.Errorf("%s:%d: not a seed: %q", path, line, fields[0])
		}
		seeds = append(seeds, s)
	}
	return seeds, sc.Err()
}
