//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gotracer/tracer"
	"github.com/gotracer/tracer/traceslog"
)

// The child process: it draws the seed's configuration, runs the workload
// untraced (the memory baseline), then traced, closes everything and
// reports. It checks what only it can see (its goroutines, its file
// descriptors, its heap, what calls returned); the parent checks the files.

// A childEnv is the child's state.
type childEnv struct {
	cfg   *Config
	dur   time.Duration
	dir   string
	rep   *reporter
	watch watch
	fill  *filler

	phase   atomic.Pointer[string]
	maxLive sync.Map // phase -> *atomic.Uint64
	envs    atomic.Pointer[[]*tenv]
}

// A tenv is one tracer of the child and what its workload shares.
type tenv struct {
	c     *childEnv
	idx   int
	cfg   *TracerConfig
	fixed atomic.Pointer[tracer.Tracer] // the tracer; nil in the untraced run
	def   bool                          // record with tracer.Default() at every call
	l     *ledger
	hook  *worker // events the hooks record

	dir, path string
	fr        *tracer.FlightRecorder
	writer    *faultWriter
	fifoDone  chan struct{}
	insts     []*tracer.Tracer  // the tracers made and still open
	stopped   map[string]uint64 // Stats of a default tracer's cycles, summed as each stopped
	cycles    int
	stringer  *hookStringer
	slogs     sync.Map // *tracer.Tracer -> *slog.Logger

	mayClose       atomic.Bool // a String that closes may do it now: late in the run
	closedByString atomic.Bool

	mu           sync.Mutex
	calls        map[string]int
	herrs        map[string]bool
	dumpOverLive string
	closeErr     error
	closeTook    time.Duration
}

// tr returns the tracer to record into, nil when there is none.
func (e *tenv) tr() *tracer.Tracer {
	if e.def {
		return tracer.Default()
	}
	return e.fixed.Load()
}

// logger returns a slog.Logger that records onto t through traceslog.
func (e *tenv) logger(t *tracer.Tracer) *slog.Logger {
	key := t
	if e.def {
		key = nil // the default tracer, whichever is running
	}
	if l, ok := e.slogs.Load(key); ok {
		return l.(*slog.Logger)
	}
	l := slog.New(traceslog.NewHandler(quietHandler{}, &traceslog.HandlerOptions{Tracer: key}))
	e.slogs.Store(key, l)
	return l
}

// quietHandler is the handler traceslog wraps: enabled for every level
// (traceslog asks it), writing nowhere.
type quietHandler struct{}

func (quietHandler) Enabled(context.Context, slog.Level) bool  { return true }
func (quietHandler) Handle(context.Context, slog.Record) error { return nil }
func (h quietHandler) WithAttrs([]slog.Attr) slog.Handler      { return h }
func (h quietHandler) WithGroup(string) slog.Handler           { return h }

// worker adds a worker, with a progress slot, to the tracer's ledger.
func (e *tenv) worker(name string) *worker {
	name = fmt.Sprintf("t%d %s", e.idx, name)
	return e.l.newWorker(name, e.c.watch.add(name))
}

func childMain(seed uint64, dur time.Duration, dir string, fsize bool, shapes string) int {
	cfg := drawConfig(seed, dur)
	cfg.keepShapes(shapes)
	runtime.GOMAXPROCS(cfg.Procs)
	c := &childEnv{cfg: cfg, dur: dur, dir: dir, rep: openReportPipe()}
	res := &childResult{Pid: os.Getpid()}
	if cfg.Tmpfs {
		c.fill = &filler{dir: filepath.Join(dir, "fs"), fsize: fsize}
		res.Tmpfs = "tmpfs"
		if fsize {
			res.Tmpfs = "RLIMIT_FSIZE (the parent could not mount a tmpfs)"
			signalIgnoreXFSZ()
		}
	}
	stopMon := make(chan struct{})
	monDone := make(chan struct{})
	go c.monitor(stopMon, monDone)

	// The untraced run: the same workload, every tracer nil.
	c.setPhase("base")
	base := c.makeEnvs(false)
	ctx, cancel := context.WithTimeout(context.Background(), baseDuration(dur))
	wait, _ := c.start(ctx, ctx, base)
	<-ctx.Done()
	cancel()
	wait()
	runtime.GC()
	runtime.GC()
	res.Before = procNow()
	res.BaseHeap = max(c.peak("base"), res.Before.Heap)

	// The traced run.
	envs := c.makeEnvs(true)
	c.envs.Store(&envs)
	if err := c.openTracers(envs); err != nil {
		c.rep.fail("setting up: %v", err)
		return 1
	}
	if cfg.TermAt > 0 {
		tracer.StopOnSignal()
	}
	c.setPhase("run")
	c.rep.event("ready")
	// ctx times the run and stops the chaos (cycles, dumps, the disk);
	// work stops the workload, after the tracers closed if they close
	// while it runs.
	ctx, cancel = context.WithTimeout(context.Background(), dur)
	defer cancel()
	work, stopWork := context.WithCancel(context.Background())
	defer stopWork()
	var chaosDone func()
	wait, chaosDone = c.start(work, ctx, envs)
	if c.fill != nil {
		go c.fillAndEmpty(ctx)
	}
	main := c.watch.add("main (shutdown)")
	late := time.AfterFunc(dur*7/10, func() {
		for _, e := range envs {
			e.mayClose.Store(true)
		}
	})
	defer late.Stop()

	main.idle()
	<-ctx.Done()
	main.tick()
	if cfg.CloseWhileRunning {
		c.setPhase("stop")
		// The chaos first: a cycle's Start after the Stop below would
		// leave a default tracer open (seed 8954785360076499900).
		main.idle()
		chaosDone()
		main.tick()
		c.finalDumps(envs, main)
		c.closeAll(envs, main)
		stopWork()
		main.idle()
		wait()
	} else {
		c.setPhase("stop")
		stopWork()
		main.idle()
		wait()
		main.tick()
		c.idleCheck(envs, main, res)
		c.finalDumps(envs, main)
		c.closeAll(envs, main)
	}
	main.tick()
	c.setPhase("closed")
	if c.fill != nil {
		c.fill.empty()
	}
	for _, e := range envs {
		if e.fifoDone != nil {
			main.idle()
			<-e.fifoDone
			main.tick()
		}
		if e.writer != nil {
			e.writer.f.Close()
		}
	}
	res.After = c.settle(res.Before, main, res)
	main.done()
	for _, e := range envs {
		res.Tracers = append(res.Tracers, e.result())
	}
	close(stopMon)
	<-monDone
	out, _ := json.Marshal(res)
	c.rep.line('R', "%s", out)
	return 0
}

// baseDuration is how long the untraced run lasts.
func baseDuration(run time.Duration) time.Duration { return min(run/4, time.Second) }

func (c *childEnv) setPhase(p string) { c.phase.Store(&p) }

// peak returns the highest live heap sampled in phase p.
func (c *childEnv) peak(p string) uint64 {
	if v, ok := c.maxLive.Load(p); ok {
		return v.(*atomic.Uint64).Load()
	}
	return 0
}

// monitor reports heartbeats and memory samples every 100ms.
func (c *childEnv) monitor(stop, done chan struct{}) {
	defer close(done)
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	tk := time.NewTicker(100 * time.Millisecond)
	defer tk.Stop()
	bound, _ := memoryBound(c.cfg, c.dur, false)
	profiled := false
	for {
		select {
		case <-stop:
			return
		case <-tk.C:
		}
		name, stall := c.watch.stalled()
		c.rep.line('H', "%d %d %s", now(), int64(stall), name)
		metrics.Read(s)
		live := s[0].Value.Uint64()
		p := *c.phase.Load()
		v, _ := c.maxLive.LoadOrStore(p, new(atomic.Uint64))
		if m := v.(*atomic.Uint64); live > m.Load() {
			m.Store(live)
		}
		if base, _ := c.maxLive.Load("base"); p == "run" && !profiled && base != nil && int64(live)-int64(base.(*atomic.Uint64).Load()) > bound {
			profiled = true
			c.writeHeapProfile("peak-heap.pprof")
		}
		var started uint64
		if envs := c.envs.Load(); envs != nil && p != "base" {
			for _, e := range *envs {
				started += e.l.spansStarted()
			}
		}
		c.rep.line('M', "%d %s %d %d", now(), p, live, started)
	}
}

// liveHeap returns the live heap after a GC.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func procNow() procState {
	st := procState{Goroutines: runtime.NumGoroutine(), Heap: liveHeap()}
	ents, _ := os.ReadDir("/proc/self/fd")
	for _, e := range ents {
		l, _ := os.Readlink("/proc/self/fd/" + e.Name())
		st.FDs = append(st.FDs, e.Name()+" -> "+l)
	}
	return st
}

// makeEnvs makes the tracers' environments; traced ones get their paths.
func (c *childEnv) makeEnvs(traced bool) []*tenv {
	var envs []*tenv
	for i := range c.cfg.Tracers {
		t := &c.cfg.Tracers[i]
		e := &tenv{c: c, idx: i, cfg: t, l: newLedger(i, maxWorkers, c.cfg.optionalEvents(t))}
		e.def = traced && t.Default
		e.hook = e.l.newWorker(fmt.Sprintf("t%d hooks", i), nil)
		e.stringer = &hookStringer{e: e, mode: t.Stringer, text: fmt.Sprintf("object of t%d", i)}
		e.dir = tracerDir(c.dir, c.cfg, i)
		envs = append(envs, e)
	}
	return envs
}

// tracerDir returns the directory of tracer i's files: on the tmpfs for
// tracer 0 when the disk fills.
func tracerDir(dir string, c *Config, i int) string {
	if i == 0 && c.Tmpfs {
		dir = filepath.Join(dir, "fs")
	}
	return filepath.Join(dir, fmt.Sprintf("t%d", i))
}

// tracePath returns the path tracer i is given, and the directories its
// files may be in.
func tracePath(dir string, c *Config, i int) (path string, dirs []string) {
	t := &c.Tracers[i]
	d := tracerDir(dir, c, i)
	name := "trace.json"
	if t.Sink == sinkGzip || t.Sink == sinkRotateGzip {
		name = "trace.json.gz"
	}
	switch {
	case t.Sink == sinkFifo:
		return filepath.Join(d, "trace.fifo"), []string{d}
	case t.Link == linkDir:
		return filepath.Join(d, name), []string{d + ".real"}
	case t.Link == linkFile:
		return filepath.Join(d, name), []string{d, d + ".target"}
	}
	return filepath.Join(d, name), []string{d}
}

// cyclePath returns the path of a default tracer's cycle k (0: the first).
func cyclePath(path string, k int) string {
	if k == 0 {
		return path
	}
	ext := ".json"
	if filepath.Ext(path) == ".gz" {
		ext = ".json.gz"
	}
	return path[:len(path)-len(ext)] + fmt.Sprintf("-c%d", k) + ext
}

// options returns the tracer's options.
func (e *tenv) options(self *atomic.Pointer[tracer.Tracer]) []tracer.Option {
	t := e.cfg
	o := []tracer.Option{
		tracer.WithFlushInterval(t.Flush),
		tracer.WithStopTimeout(t.StopTimeout),
		tracer.WithErrorHandler(e.handler(self)),
		tracer.WithProcessName(fmt.Sprintf("torture t%d", e.idx)),
	}
	if t.BufferLimit > 0 {
		o = append(o, tracer.WithBufferLimit(t.BufferLimit))
	}
	if t.Lanes {
		o = append(o, tracer.WithLanes())
	}
	if t.Lossless {
		o = append(o, tracer.WithLossless())
	}
	if t.Sink.rotates() {
		o = append(o, tracer.WithMaxFileSize(t.MaxFileSize))
		if t.MaxFiles > 0 {
			o = append(o, tracer.WithMaxFiles(t.MaxFiles))
		}
	}
	return o
}

// openTracers makes the directories, links, pipes and writers, and
// creates the tracers.
func (c *childEnv) openTracers(envs []*tenv) error {
	for _, e := range envs {
		t := e.cfg
		path, dirs := tracePath(c.dir, c.cfg, e.idx)
		e.path = path
		for _, d := range dirs {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return err
			}
		}
		switch t.Link {
		case linkDir:
			if err := os.Symlink(filepath.Base(dirs[0]), e.dir); err != nil {
				return err
			}
		case linkFile:
			if err := os.Symlink(filepath.Join("..", filepath.Base(dirs[1]), "real"+strings.TrimPrefix(filepath.Base(path), "trace")), path); err != nil {
				return err
			}
		}
		self := new(atomic.Pointer[tracer.Tracer])
		var tr *tracer.Tracer
		var err error
		switch {
		case t.Default:
			err = tracer.Start(path, e.options(self)...)
			tr = tracer.Default()
		case t.Sink == sinkWriter:
			f, ferr := os.Create(filepath.Join(e.dir, "writer.json"))
			if ferr != nil {
				return ferr
			}
			from := now() + int64(t.FaultAt)
			e.writer = &faultWriter{f: f, mode: t.Fault, from: from, to: from + int64(t.FaultFor), e: e, records: t.WriterRecords, self: self}
			tr, err = tracer.NewWithWriter(e.writer, e.options(self)...)
		case t.Sink == sinkFifo:
			if err := syscall.Mkfifo(path, 0o644); err != nil {
				return err
			}
			e.fifoDone = make(chan struct{})
			go readFifo(path, filepath.Join(e.dir, "fifo.json"), t.FifoDiesAt, e.fifoDone)
			tr, err = tracer.New(path, e.options(self)...)
		case t.Sink == sinkFlight:
			e.fr, err = tracer.NewFlightRecorder(tracer.FlightRecorderConfig{MaxEvents: t.FlightEvents, MaxBytes: t.FlightBytes}, e.options(self)...)
			if err == nil {
				tr = e.fr.Tracer()
			}
		default:
			tr, err = tracer.New(path, e.options(self)...)
		}
		if err != nil {
			return fmt.Errorf("t%d: %w", e.idx, err)
		}
		self.Store(tr)
		e.insts = append(e.insts, tr)
		e.fixed.Store(tr)
	}
	return nil
}

// start starts every tracer's workload, which ends with work, and its
// chaos, which ends with ctx, and returns the functions that wait for
// both to end, and for the chaos alone.
func (c *childEnv) start(work, ctx context.Context, envs []*tenv) (wait, chaosDone func()) {
	var wg, chaos sync.WaitGroup
	for _, e := range envs {
		for i, s := range e.cfg.Shapes {
			e.runShape(work, &wg, i, s)
		}
		if e.tr() == nil && !e.def {
			continue // untraced: no chaos
		}
		if e.fr != nil {
			chaos.Go(func() { e.dumper(ctx) })
		}
		if e.cfg.Tee != teeNone {
			chaos.Go(func() { e.teer(ctx) })
		}
		if e.def && e.cfg.Cycles > 0 {
			chaos.Go(func() { e.cycler(ctx) })
		}
	}
	return func() { wg.Wait(); chaos.Wait() }, chaos.Wait
}

// sleepCtx sleeps for d or until ctx is done, and reports whether ctx is
// still running.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// dumper takes flight recordings now and then, to a file and to a writer,
// and once, if the config says so, onto tracer 0's live path.
func (e *tenv) dumper(ctx context.Context) {
	d := newDraw(e.c.cfg.Seed, 100+uint64(e.idx))
	overAt := d.between(e.c.dur/5, e.c.dur*4/5)
	start := time.Now()
	p := e.c.watch.add(fmt.Sprintf("t%d flight dumper", e.idx))
	defer p.done()
	for k := 0; ; k++ {
		p.idle()
		if !sleepCtx(ctx, e.c.dur/5) {
			return
		}
		p.tick()
		name := fmt.Sprintf("dump-%d.json", k)
		if k%2 == 1 {
			name += ".gz"
		}
		m := e.mark(nil)
		e.call("WriteFile", e.fr.WriteFile(filepath.Join(e.dir, name)), m)
		// WriteTo onto a file, as a program serving a dump would: a
		// buffer here would hold a copy of the trace beside the
		// recorder's, and count against its memory.
		path := filepath.Join(e.dir, fmt.Sprintf("dumpw-%d.json", k))
		if f, err := os.Create(path); err == nil {
			m := e.mark(nil)
			_, err := e.fr.WriteTo(f)
			e.call("WriteTo", err, m)
			f.Close()
			if err != nil { // no trace: ErrClosed, say, which call checks
				os.Remove(path)
			}
		}
		if e.cfg.DumpOverLive && e.dumpOverLive == "" && time.Since(start) >= overAt {
			envs := *e.c.envs.Load()
			err := e.fr.WriteFile(envs[0].path)
			e.mu.Lock()
			e.dumpOverLive = errKind(err)
			e.mu.Unlock()
		}
	}
}

// cycler stops and starts the default tracer, each time on a new file.
func (e *tenv) cycler(ctx context.Context) {
	p := e.c.watch.add("t0 Start/Stop cycler")
	defer p.done()
	every := e.c.dur / time.Duration(e.cfg.Cycles+1)
	for k := 1; k <= e.cfg.Cycles; k++ {
		p.idle()
		if !sleepCtx(ctx, every) {
			return
		}
		p.tick()
		old := tracer.Default()
		m := e.mark(old)
		e.call("Stop (cycle)", tracer.Stop(), m)
		e.mu.Lock()
		e.stopped = addStats(e.stopped, statsMap(old.Stats()))
		e.insts = slices.DeleteFunc(e.insts, func(t *tracer.Tracer) bool { return t == old })
		e.cycles++
		e.mu.Unlock()
		self := new(atomic.Pointer[tracer.Tracer])
		if err := tracer.Start(cyclePath(e.path, k), e.options(self)...); err != nil {
			e.c.rep.fail("t0: Start of cycle %d: %v", k, err)
			return
		}
		tr := tracer.Default()
		self.Store(tr)
		e.mu.Lock()
		e.insts = append(e.insts, tr)
		e.mu.Unlock()
	}
}

// fillAndEmpty fills the disk and empties it at the configured times.
func (c *childEnv) fillAndEmpty(ctx context.Context) {
	start := time.Now()
	for _, f := range c.cfg.Fills {
		if !sleepCtx(ctx, time.Until(start.Add(f.At))) {
			break
		}
		c.fill.fill()
		c.rep.event("disk full")
		if !sleepCtx(ctx, f.For) {
			break
		}
		c.fill.empty()
		c.rep.event("disk emptied")
	}
	if c.cfg.FullAtClose {
		c.fill.fill()
	} else {
		c.fill.empty()
	}
}

// idleCheck measures the live heap once the workload stopped, the
// tracers flushed and the buffers a burst left had time to be freed.
func (c *childEnv) idleCheck(envs []*tenv, main *progress, res *childResult) {
	for _, e := range envs {
		if t := e.tr(); t != nil {
			m := e.mark(t)
			e.call("Flush (idle)", t.Flush(), m)
			main.tick()
		}
	}
	c.setPhase("idle")
	main.idle()
	time.Sleep(idleWait)
	main.tick()
	// A loaded machine may run the flusher's passes late, and free the
	// buffers late: above the bound, look again for a while, and keep
	// the lowest. What a leak holds stays.
	bound, _ := memoryBound(c.cfg, c.dur, true)
	res.IdleHeap = liveHeap()
	for deadline := time.Now().Add(3 * time.Second); int64(res.IdleHeap)-int64(res.BaseHeap) > bound && time.Now().Before(deadline); {
		main.idle()
		time.Sleep(500 * time.Millisecond)
		main.tick()
		res.IdleHeap = min(res.IdleHeap, liveHeap())
	}
	if int64(res.IdleHeap)-int64(res.BaseHeap) > bound {
		c.writeHeapProfile("idle-heap.pprof")
	}
}

// writeHeapProfile writes what holds the heap past the bound, for -keep
// (go tool pprof -sample_index=inuse_space).
func (c *childEnv) writeHeapProfile(name string) {
	if f, err := os.Create(filepath.Join(c.dir, name)); err == nil {
		pprof.Lookup("heap").WriteTo(f, 0)
		f.Close()
	}
}

// idleWait is how long the idle check waits: the buffers a burst left are
// freed about a second after it (docs/internals.md, "Buffers grow and
// shrink").
const idleWait = 1500 * time.Millisecond

// finalDumps takes every flight recorder's last recording.
func (c *childEnv) finalDumps(envs []*tenv, main *progress) {
	for _, e := range envs {
		if e.fr == nil {
			continue
		}
		main.tick()
		m := e.mark(nil)
		e.call("WriteFile (final)", e.fr.WriteFile(filepath.Join(e.dir, "final.json")), m)
	}
}

// closeAll closes every tracer, the default one with Stop.
func (c *childEnv) closeAll(envs []*tenv, main *progress) {
	for _, e := range envs {
		main.tick()
		c.rep.event(fmt.Sprintf("closing t%d", e.idx))
		m := e.mark(e.tr())
		var err error
		if e.def {
			err = tracer.Stop()
		} else {
			err = e.fixed.Load().Close()
		}
		e.closeTook = time.Since(m.at)
		e.closeErr = err
		e.call("Close", err, m)
		main.tick()
	}
	c.rep.event("closed")
}

// settle waits for goroutines and file descriptors to come back to where
// they were before the tracers started (a Close that timed out finishes in
// the background, once the sink recovers), and returns the state then.
func (c *childEnv) settle(before procState, main *progress, res *childResult) procState {
	deadline := time.Now().Add(15 * time.Second)
	for {
		main.tick()
		st := procNow()
		if st.Goroutines <= before.Goroutines && len(st.FDs) <= len(before.FDs) || time.Now().After(deadline) {
			if st.Goroutines > before.Goroutines {
				var b bytes.Buffer
				pprof.Lookup("goroutine").WriteTo(&b, 1)
				res.LeakDump = b.String()
			}
			return st
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// result returns what the tracer's part of the report is.
func (e *tenv) result() tracerResult {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := tracerResult{
		Counts:       map[int][numClasses]uint64{},
		Names:        map[int]string{},
		StaleEnds:    e.l.staleEnds.Load(),
		HandleEnds2:  e.l.handleEnds2.Load(),
		CloseTook:    e.closeTook.Seconds(),
		Calls:        e.calls,
		DumpOverLive: e.dumpOverLive,
		Cycles:       e.cycles,
		Stats:        addStats(nil, e.stopped),
	}
	if e.closeErr != nil {
		r.CloseErr = e.closeErr.Error()
	}
	e.l.each(func(w *worker) {
		r.Counts[w.idx] = w.counts()
		r.Names[w.idx] = w.name
	})
	for _, t := range e.insts {
		r.Stats = addStats(r.Stats, statsMap(t.Stats()))
	}
	for s := range e.herrs {
		r.HandlerErrors = append(r.HandlerErrors, s)
	}
	sort.Strings(r.HandlerErrors)
	return r
}
