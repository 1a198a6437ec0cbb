//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/gotracer/tracer"
)

// Tees: a goroutine attaches a tee (tracer.Tee) to a tracer at random
// moments, writing tee-K.json, and stops it a while later; a tee whose
// Stop said it was cut (its writer fell behind or failed) is renamed
// tee-K.cut.json. The parent checks each tee's file alone: strict JSON
// and whole if its Stop returned nil, a file cut on an event boundary
// otherwise; every goroutine's spans nested, each event once.

// teeKind is what a tee's writer does.
type teeKind uint8

const (
	teeNone  teeKind = iota
	teePlain         // writes to its file
	teeSlow          // sleeps before some writes: it may fall behind the buffer limit
	teeFails         // fails a write, late in the tee
)

var teeNames = [...]string{"none", "plain", "slow", "fails"}

func (k teeKind) String() string { return teeNames[k] }

// drawTees gives some tracers a tee, on a stream of the seed's own, so
// that the rest of the draw (and the seeds of seeds.txt) stays as it was.
func drawTees(seed uint64, c *Config) {
	d := newDraw(seed, 3)
	for i := range c.Tracers {
		if d.chance(0.3) {
			c.Tracers[i].Tee = teeKind(1 + d.weighted(50, 30, 20))
		}
	}
}

// teeName matches the files of tees: see the comment above.
var teeName = regexp.MustCompile(`^tee-\d+(\.cut)?\.json$`)

// keptTees is how many tee files the child keeps: a soak's stay bounded.
const keptTees = 4

// teeDir is where tracer i's tees write, in the run's directory dir:
// never on the small tmpfs of a full disk, which would fail the tee's
// writer rather than test the tee.
func teeDir(dir string, i int) string { return filepath.Join(dir, fmt.Sprintf("tees-t%d", i)) }

// teeFiles lists the files of tracer i's tees, and fails the run on
// anything else in their directory.
func (r *run) teeFiles(i int) []traceFile {
	dir := teeDir(r.dir, i)
	ents, err := os.ReadDir(dir)
	if err != nil {
		r.fail("files", "t%d: tees: %v", i, err)
		return nil
	}
	var files []traceFile
	for _, e := range ents {
		name := e.Name()
		if !teeName.MatchString(name) {
			r.fail("files", "t%d: %s among the tees' files", i, name)
			continue
		}
		f := traceFile{path: filepath.Join(dir, name), tracer: i, kind: "tee"}
		if strings.HasSuffix(name, ".cut.json") {
			f.kind = "tee-cut"
		}
		if fi, err := e.Info(); err == nil && fi.Size() == 0 && r.killed() {
			continue // the child made it and was killed before its tee wrote
		}
		files = append(files, f)
	}
	return files
}

// teer attaches tees to the tracer now and then, until ctx ends.
func (e *tenv) teer(ctx context.Context) {
	d := newDraw(e.c.cfg.Seed, 300+uint64(e.idx))
	p := e.c.watch.add(fmt.Sprintf("t%d teer", e.idx))
	defer p.done()
	dir := teeDir(e.c.dir, e.idx)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		e.c.rep.fail("t%d: %v", e.idx, err)
		return
	}
	for k := 0; ; k++ {
		p.idle()
		if !sleepCtx(ctx, d.between(e.c.dur/20, e.c.dur/5)) {
			return
		}
		p.tick()
		if k >= keptTees {
			for _, name := range []string{"tee-%d.json", "tee-%d.cut.json"} {
				os.Remove(filepath.Join(dir, fmt.Sprintf(name, k-keptTees)))
			}
		}
		tr := e.tr()
		if tr == nil {
			continue // a default tracer between cycles
		}
		path := filepath.Join(dir, fmt.Sprintf("tee-%d.json", k))
		f, err := os.Create(path)
		if err != nil {
			e.c.rep.fail("t%d: tee file: %v", e.idx, err)
			return
		}
		w := &teeWriter{f: f, kind: e.cfg.Tee, d: newDraw(e.c.cfg.Seed, 400+uint64(e.idx)*1000+uint64(k))}
		te, err := tr.Tee(w)
		e.tally("Tee", err)
		if err != nil {
			f.Close()
			os.Remove(path)
			// A closed tracer, or one whose writer did not write what it
			// had queued within the stop timeout (a slow or full pipe):
			// documented answers.
			if !errors.Is(err, tracer.ErrClosed) && !errors.Is(err, tracer.ErrTimeout) {
				e.c.rep.fail("t%d: Tee: %v", e.idx, err)
			}
			continue
		}
		p.idle()
		alive := sleepCtx(ctx, d.between(e.c.dur/20, e.c.dur/5))
		p.tick()
		err = te.Stop()
		e.tally("Tee.Stop", err)
		f.Close()
		if err != nil {
			os.Rename(path, filepath.Join(dir, fmt.Sprintf("tee-%d.cut.json", k)))
			if w.kind == teePlain && !expectedTeeEnd(err) {
				// A writer that never fails: nothing may cut it but the
				// tracer's own failed writes, a writer descheduled while
				// batches came (the tracer never waits for a tee), or a
				// stalled tracer.
				e.c.rep.fail("t%d: Tee.Stop of a tee whose writer never fails: %v", e.idx, err)
			}
		}
		if !alive {
			return
		}
	}
}

// expectedTeeEnd reports whether err, from the Stop of a tee whose writer
// never fails, is one the tracer documents: see tracer.Tee.
func expectedTeeEnd(err error) bool {
	msg := err.Error()
	return errors.Is(err, tracer.ErrTimeout) || strings.Contains(msg, "fell behind") || strings.Contains(msg, "own write failed")
}

// tally counts what a tee's call returned, as call does, without its
// check of ErrTimeout: a tee's Stop waits for the tee's writer, which may
// be slow on purpose.
func (e *tenv) tally(what string, err error) { e.count(what + ": " + errKind(err)) }

// A teeWriter is a tee's io.Writer: a file, slow or failing as its kind
// says.
type teeWriter struct {
	f      *os.File
	kind   teeKind
	d      draw // its goroutine's alone
	writes int
}

func (w *teeWriter) Write(p []byte) (int, error) {
	w.writes++
	switch {
	case w.kind == teeSlow && w.d.chance(0.3):
		time.Sleep(w.d.between(time.Millisecond, 30*time.Millisecond))
	case w.kind == teeFails && w.writes > 3 && w.d.chance(0.2):
		return 0, errors.New("torture: the tee's writer fails")
	}
	return w.f.Write(p)
}
