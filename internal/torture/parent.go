//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A run is one run of one seed: the child, the faults the parent applies
// to it, and the checks.
type run struct {
	o      *options
	seed   uint64
	n      int
	cfg    *Config
	dir    string
	start  time.Time
	fails  []failure
	notes  []string
	rep    reports
	result *childResult

	pid      int
	exit     *os.ProcessState
	readyAt  int64 // the child's clock, unix ns
	killedAt int64 // when the parent sent SIGKILL, 0 if it did not
	termedAt int64 // SIGTERM
	froze    bool
	fsize    bool // the tmpfs was refused: RLIMIT_FSIZE instead

	rival *rivalRun

	filesChecked, eventsChecked int
	unparsed                    map[int]bool // tracers with a file that is not JSON
}

// A failure is one invariant that did not hold.
type failure struct{ check, detail string }

func (r *run) fail(check, format string, args ...any) {
	r.fails = append(r.fails, failure{check, fmt.Sprintf(format, args...)})
}

func (r *run) note(format string, args ...any) {
	r.notes = append(r.notes, fmt.Sprintf(format, args...))
}

// killed reports whether the child was ended by the parent's signal.
func (r *run) killed() bool { return r.killedAt != 0 || r.termedAt != 0 }

// clean reports whether the child ran to its end and reported.
func (r *run) clean() bool { return r.result != nil && !r.killed() && !r.froze }

// run runs seed once and prints the outcome.
func (o *options) run(seed uint64, n int) *run {
	r := &run{o: o, seed: seed, n: n, cfg: drawConfig(seed, o.duration), start: time.Now()}
	r.cfg.keepShapes(o.shapes)
	switch o.importers {
	case "all":
		r.cfg.Importers = true
	case "none":
		r.cfg.Importers = false
	}
	if o.verbose {
		fmt.Printf("seed %d run %d: %s\n", seed, n, r.cfg)
	}
	dir, err := os.MkdirTemp(o.dir, fmt.Sprintf("torture-%d-%d-", seed, n))
	if err != nil {
		r.fail("setup", "%v", err)
		r.print()
		return r
	}
	r.dir = dir
	unmount := r.mountTmpfs()
	r.runChild()
	if r.rival != nil {
		r.rival.wait(r)
	}
	r.check()
	keep := o.keep && len(r.fails) > 0
	if keep && unmount != nil {
		// The files on the tmpfs go with it: copy them out first.
		exec.Command("cp", "-a", filepath.Join(dir, "fs"), filepath.Join(dir, "fs.kept")).Run()
	}
	if unmount != nil {
		unmount()
	}
	r.print()
	if !keep {
		os.RemoveAll(dir)
	}
	return r
}

// mountTmpfs mounts the small tmpfs the config fills, if it asks for one,
// and returns the function that unmounts it. If mounting is refused, the
// run fills the disk with RLIMIT_FSIZE instead, and says so.
func (r *run) mountTmpfs() (unmount func()) {
	if !r.cfg.Tmpfs {
		return nil
	}
	fs := filepath.Join(r.dir, "fs")
	if err := os.Mkdir(fs, 0o755); err != nil {
		r.fail("setup", "%v", err)
		return nil
	}
	opts := "size=" + strconv.FormatInt(r.cfg.TmpfsSize, 10)
	if err := syscall.Mount("tmpfs", fs, "tmpfs", 0, opts); err != nil {
		r.fsize = true
		fmt.Printf("warning: seed %d: mounting a tmpfs was refused (%v): the disk fills by RLIMIT_FSIZE instead, which limits each file, not the disk\n", r.seed, err)
		r.note("tmpfs refused (%v): the disk fills by RLIMIT_FSIZE instead", err)
		return nil
	}
	return func() { syscall.Unmount(fs, syscall.MNT_DETACH) }
}

// freezeLimit is how long a busy goroutine may go without progress: the
// longest stop timeout (a Close or Flush may wait that long for a stalled
// sink), plus the longest stall the config makes, plus the slack.
func (r *run) freezeLimit() time.Duration {
	var limit time.Duration
	for _, t := range r.cfg.Tracers {
		st := t.StopTimeout
		if st == 0 {
			st = 5 * time.Second // waits forever, but for a sink that recovers
		}
		if t.Fault == faultStall {
			st += t.FaultFor
		}
		limit = max(limit, st)
	}
	return limit + r.o.slack
}

// runChild runs the child, applies the faults, watches it, and reads its
// reports.
func (r *run) runChild() {
	args := []string{"-child", "main", "-seed", strconv.FormatUint(r.seed, 10), "-duration", r.o.duration.String(), "-dir", r.dir}
	if r.fsize {
		args = append(args, "-fsize")
	}
	if r.o.shapes != "" {
		args = append(args, "-shapes", r.o.shapes)
	}
	cmd, reports, err := r.spawn("child", args...)
	if err != nil {
		r.fail("setup", "starting the child: %v", err)
		return
	}
	r.pid = cmd.Process.Pid
	readDone := make(chan struct{})
	raw := r.rawReports("child")
	go func() { r.rep.read(reports, raw); reports.Close(); raw.Close(); close(readDone) }()
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()

	limit := r.freezeLimit()
	base := baseDuration(r.o.duration)
	hard := time.Now().Add(base + r.o.duration + idleWait + time.Duration(len(r.cfg.Tracers)+2)*limit + 30*time.Second)
	readyBy := time.Now().Add(base + 60*time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	memCap := uint64(0)
	for done := false; !done; {
		select {
		case <-exited:
			done = true
			continue
		case <-tick.C:
		}
		t := time.Now()
		if r.readyAt == 0 {
			r.readyAt = r.rep.event("ready")
			if r.readyAt == 0 && t.After(readyBy) {
				r.freeze(cmd, exited, "the child did not get ready in %v", readyBy.Sub(r.start).Round(time.Second))
				done = true
				continue
			}
			if r.readyAt != 0 {
				memCap = r.memCap()
				if r.cfg.Rival {
					r.rival = r.startRival()
				}
			}
		}
		if r.readyAt != 0 {
			since := time.Duration(t.UnixNano() - r.readyAt)
			if r.cfg.KillAt > 0 && r.killedAt == 0 && since >= r.cfg.KillAt {
				cmd.Process.Signal(syscall.SIGKILL)
				r.killedAt = time.Now().UnixNano()
			}
			if r.cfg.TermAt > 0 && r.termedAt == 0 && since >= r.cfg.TermAt {
				r.termedAt = time.Now().UnixNano()
				cmd.Process.Signal(syscall.SIGTERM)
			}
		}
		r.rep.mu.Lock()
		last, stall, who := r.rep.lastBeat, r.rep.stall, r.rep.stallName
		var live uint64
		if n := len(r.rep.samples); n > 0 {
			live = r.rep.samples[n-1].live
		}
		r.rep.mu.Unlock()
		switch {
		case r.killedAt != 0 || r.termedAt != 0:
			// a dying child beats no more
		case last != 0 && t.Sub(time.Unix(0, last)) > limit:
			r.freeze(cmd, exited, "the child sent no heartbeat for %v (the stop timeout plus slack is %v)", t.Sub(time.Unix(0, last)).Round(time.Millisecond), limit)
			done = true
		case stall > limit:
			r.freeze(cmd, exited, "goroutine %q made no progress for %v (the stop timeout plus slack is %v)", who, stall.Round(time.Millisecond), limit)
			done = true
		case memCap > 0 && live > memCap:
			r.fail("memory", "live heap %d MiB, past four times the bound: the child was killed before it took the machine's memory", live>>20)
			cmd.Process.Signal(syscall.SIGKILL)
			<-exited
			r.froze = true
			done = true
		case t.After(hard):
			r.freeze(cmd, exited, "the run did not end in %v", t.Sub(r.start).Round(time.Second))
			done = true
		}
	}
	<-readDone
	r.exit = cmd.ProcessState
	if len(r.rep.result) > 0 {
		os.WriteFile(filepath.Join(r.dir, "result.json"), r.rep.result, 0o644) // for -keep
		var res childResult
		if err := json.Unmarshal(r.rep.result, &res); err != nil {
			r.fail("child", "its result does not parse: %v", err)
		} else {
			r.result = &res
		}
	}
	r.checkExit()
}

// rawReports returns the file a child's reports are kept in, for -keep.
func (r *run) rawReports(role string) *os.File {
	f, err := os.Create(filepath.Join(r.dir, role+".reports"))
	if err != nil {
		f, _ = os.Open(os.DevNull)
	}
	return f
}

// spawn starts this binary as a child of role, its reports on a pipe.
func (r *run) spawn(role string, args ...string) (*exec.Cmd, *os.File, error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	out, err := os.Create(filepath.Join(r.dir, role+".stderr"))
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(r.o.exe, args...)
	cmd.ExtraFiles = []*os.File{pw} // file descriptor 3: reportFD
	cmd.Stdout, cmd.Stderr = out, out
	err = cmd.Start()
	pw.Close()
	out.Close()
	if err != nil {
		pr.Close()
		return nil, nil, err
	}
	return cmd, pr, nil
}

// freeze records a freeze, gets the child's goroutines (SIGQUIT makes the
// Go runtime print them) and kills it.
func (r *run) freeze(cmd *exec.Cmd, exited chan struct{}, format string, args ...any) {
	r.froze = true
	cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-exited
	}
	r.fail("freeze", "%s; its goroutines: %s", fmt.Sprintf(format, args...), r.dumpExcerpt())
}

// dumpExcerpt returns where the child's goroutine dump is, what its
// goroutines in the tracer's code wait in, and the stack of one of them,
// one that runs user code the tracer called (a String, the error handler,
// a writer) if any does.
func (r *run) dumpExcerpt() string {
	path := filepath.Join(r.dir, "child.stderr")
	data, _ := os.ReadFile(path)
	where := path
	if !r.o.keep {
		where = "(-keep keeps it)"
	}
	sigs, example := summarizeDump(string(data))
	return fmt.Sprintf("%s; %s; for example:\n%s", where, sigs, indent(example, "      "))
}

// hookFrames name the user code the tracer runs, as it shows in a stack.
var hookFrames = []struct{ frame, what string }{
	{"(*hookStringer).String", "in a String"},
	{").handler.func", "in the error handler"},
	{"(*faultWriter).Write", "in the writer"},
}

// tracerFrame matches a frame of the tracer's own code.
var tracerFrame = regexp.MustCompile(`(?m)^github\.com/gotracer/tracer\.(\(\*?[A-Za-z]+\)\.)?([A-Za-z]+)`)

// summarizeDump sums up a Go goroutine dump: how many goroutines wait in
// which of the tracer's functions (the innermost), and one stack.
func summarizeDump(dump string) (summary, example string) {
	count := map[string]int{}
	for _, g := range strings.Split(dump, "\n\n") {
		m := tracerFrame.FindStringSubmatch(g)
		if m == nil {
			continue
		}
		sig := m[1] + m[2]
		for _, h := range hookFrames {
			if strings.Contains(g, h.frame) {
				sig += " " + h.what
				if example == "" || !strings.Contains(example, h.frame) {
					example = g
				}
			}
		}
		if example == "" {
			example = g
		}
		count[sig]++
	}
	if len(count) == 0 {
		return "no goroutine in the tracer's code", strings.TrimSpace(dump[:min(len(dump), 1500)])
	}
	var sigs []string
	for s, n := range count {
		sigs = append(sigs, fmt.Sprintf("%d in %s", n, s))
	}
	sort.Slice(sigs, func(i, j int) bool { return sigs[i] > sigs[j] })
	if len(example) > 4000 {
		example = example[:4000] + "\n..."
	}
	return "goroutines in the tracer's code: " + strings.Join(sigs, ", "), strings.TrimSpace(example)
}

func indent(s, in string) string {
	return in + strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n"+in)
}

// checkExit checks how the child ended.
func (r *run) checkExit() {
	st := r.exit
	if st == nil || r.froze {
		return
	}
	ws, _ := st.Sys().(syscall.WaitStatus)
	switch {
	case r.killedAt != 0:
		if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			r.fail("exit", "the child was sent SIGKILL but ended with %v", st)
		}
	case r.termedAt != 0:
		// StopOnSignal stops the tracer, then lets the signal kill the
		// process as it would have.
		if !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
			r.fail("exit", "after SIGTERM with StopOnSignal the child should die of SIGTERM; it ended with %v: %s", st, r.stderrTail())
		}
	case !st.Success():
		r.fail("exit", "the child ended with %v: %s", st, r.stderrTail())
	case r.result == nil:
		r.fail("exit", "the child ended without its report: %s", r.stderrTail())
	}
}

// stderrTail returns the start of what the child printed: a panic's
// message and first stack.
func (r *run) stderrTail() string {
	data, _ := os.ReadFile(filepath.Join(r.dir, "child.stderr"))
	if i := bytes.Index(data, []byte("panic:")); i >= 0 {
		data = data[i:]
	} else if i := bytes.Index(data, []byte("fatal error:")); i >= 0 {
		data = data[i:]
	}
	if len(data) > 1500 {
		data = data[:1500]
	}
	return "\n" + indent(string(data), "      ")
}

// maxShown is how many failures of one check a run prints.
const maxShown = 8

// print prints the run's outcome: one line if it passed, the failures,
// the seed and the command that repeats it if not.
func (r *run) print() {
	took := time.Since(r.start).Round(100 * time.Millisecond)
	if len(r.fails) == 0 {
		fmt.Printf("ok   seed %d run %d (%v)\n", r.seed, r.n, took)
		if r.o.verbose {
			for _, n := range r.notes {
				fmt.Printf("       note: %s\n", n)
			}
		}
		return
	}
	fmt.Printf("FAIL seed %d run %d (%v): %s\n", r.seed, r.n, took, r.cfg)
	shown := map[string]int{}
	for _, f := range r.fails {
		if shown[f.check]++; shown[f.check] <= maxShown {
			fmt.Printf("  %s: %s\n", f.check, f.detail)
		}
	}
	for check, n := range shown {
		if n > maxShown {
			fmt.Printf("  %s: %d more failures of this check left out\n", check, n-maxShown)
		}
	}
	for _, n := range r.notes {
		fmt.Printf("  note: %s\n", n)
	}
	if r.o.keep {
		fmt.Printf("  files: %s\n", r.dir)
	}
	shapes := ""
	if r.o.shapes != "" {
		shapes = " -shapes " + r.o.shapes
	}
	fmt.Printf("  reproduce: go run ./internal/torture -seed %d -duration %v%s -runs 10 -keep -v\n", r.seed, r.o.duration, shapes)
	fmt.Printf("  (a seed fixes the configuration and the workload, not the scheduling: a race may need several runs)\n")
}
