//go:build linux

package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/gotracer/tracer"
)

// The rival: a second process that retries New on tracer 0's path while
// the child writes it, as a second program started with the same
// TRACER_FILE would. It must get ErrFileInUse; if New succeeds, its
// events must be in a file of their own, all of them.

// rivalSpans is how many spans the rival records once it has a tracer.
const rivalSpans = 1000

// rivalResult is the rival's report.
type rivalResult struct {
	Pid      int
	Tries    int
	InUse    int
	Other    []string // other errors New returned, distinct
	Got      bool     // New succeeded
	GotAt    int64
	Recorded uint64
	Stats    map[string]uint64
	CloseErr string
}

func rivalMain(path string, until int64) int {
	rep := openReportPipe()
	res := rivalResult{Pid: os.Getpid()}
	l := newLedger(rivalTracer, 1, false)
	w := l.newWorker("rival", nil)
	seen := map[string]bool{}
	for now() < until {
		res.Tries++
		t, err := tracer.New(path, tracer.WithProcessName("torture rival"), tracer.WithErrorHandler(func(error) {}))
		if err != nil {
			if errors.Is(err, tracer.ErrFileInUse) {
				res.InUse++
			} else if s := errKind(err); !seen[s] && len(seen) < 10 {
				seen[s] = true
				res.Other = append(res.Other, s)
			}
			time.Sleep(time.Millisecond)
			continue
		}
		res.Got, res.GotAt = true, now()
		for range rivalSpans {
			t.Span("rival", w.spanID(clSpan))()
		}
		if err := t.Close(); err != nil {
			res.CloseErr = err.Error()
		}
		res.Stats = statsMap(t.Stats())
		break
	}
	res.Recorded = w.counts()[clSpan]
	out, _ := json.Marshal(res)
	rep.line('R', "%s", out)
	return 0
}

// A rivalRun is the parent's view of the rival.
type rivalRun struct {
	pid      int
	exited   chan struct{}
	readDone chan struct{}
	rep      reports
	result   *rivalResult
	until    int64
	kill     func()
}

// startRival starts the rival, which tries until a second and a half
// before the child's run ends (the child closes after it): a rival that
// gets the file after the child closed it would be right to.
func (r *run) startRival() *rivalRun {
	path, _ := tracePath(r.dir, r.cfg, 0)
	until := r.readyAt + int64(r.o.duration) - int64(1500*time.Millisecond)
	cmd, reports, err := r.spawn("rival", "-child", "rival", "-path", path, "-until", strconv.FormatInt(until, 10))
	if err != nil {
		r.fail("setup", "starting the rival: %v", err)
		return nil
	}
	rv := &rivalRun{pid: cmd.Process.Pid, exited: make(chan struct{}), readDone: make(chan struct{}), until: until,
		kill: func() { cmd.Process.Signal(syscall.SIGQUIT) }}
	raw := r.rawReports("rival")
	go func() { rv.rep.read(reports, raw); reports.Close(); raw.Close(); close(rv.readDone) }()
	go func() { cmd.Wait(); close(rv.exited) }()
	return rv
}

// wait waits for the rival, which must end soon after its deadline.
func (rv *rivalRun) wait(r *run) {
	select {
	case <-rv.exited:
	case <-time.After(time.Until(time.Unix(0, rv.until)) + 30*time.Second):
		rv.kill()
		<-rv.exited
		r.fail("freeze", "the rival process did not end 30s after it stopped trying; its stacks are in %s", filepath.Join(r.dir, "rival.stderr"))
	}
	<-rv.readDone
	if len(rv.rep.result) > 0 {
		var res rivalResult
		if json.Unmarshal(rv.rep.result, &res) == nil {
			rv.result = &res
		}
	}
	if rv.result == nil {
		r.fail("rival", "the rival ended without its report")
		return
	}
	res := rv.result
	r.note("rival: %d tries, %d ErrFileInUse, got the file: %v, other errors: %v", res.Tries, res.InUse, res.Got, res.Other)
	if res.Got {
		r.note("rival: New on t0's live path succeeded %v after the child was ready", time.Duration(res.GotAt-r.readyAt).Round(time.Millisecond))
	}
}
