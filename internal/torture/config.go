//go:build linux

package main

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// A Config is what one seed draws: the tracers a child process runs, the
// workload shapes that record into each, and the faults the parent
// applies. A seed fixes all of it; it does not fix the scheduling, so a
// race may need several runs of one seed (-runs).
type Config struct {
	Seed  uint64
	Procs int // GOMAXPROCS of the child

	Tracers []TracerConfig

	// Faults the parent applies to the child, measured from the moment
	// it reports ready; zero: never.
	KillAt time.Duration // SIGKILL
	TermAt time.Duration // SIGTERM, after StopOnSignal (tracer 0 is the default tracer)

	// Rival: another process retries New on tracer 0's path while the
	// child runs; it must get ErrFileInUse or write a file of its own.
	Rival bool

	// Tmpfs: tracer 0's directory is on a small tmpfs that a filler
	// fills and empties again at the times in Fills.
	Tmpfs       bool
	TmpfsSize   int64
	Fills       []Fill
	FullAtClose bool // the disk is still full when the tracers close

	// CloseWhileRunning: the tracers are closed while the workload still
	// records (a server shutting down with requests in flight), rather
	// than after it stopped.
	CloseWhileRunning bool

	// Importers: the files are loaded in both real importers (sampled,
	// as they are slow: see drawImporters).
	Importers bool
}

// A Fill fills the tmpfs at At and empties it For later.
type Fill struct{ At, For time.Duration }

// sinkKind is where a tracer writes.
type sinkKind uint8

const (
	sinkFile       sinkKind = iota // New(path)
	sinkGzip                       // New(path.json.gz)
	sinkRotate                     // WithMaxFileSize, plain
	sinkRotateGzip                 // WithMaxFileSize, gzip
	sinkWriter                     // NewWithWriter over a writer that may fail, stall or write short
	sinkFifo                       // New(named pipe) whose reader may die
	sinkFlight                     // NewFlightRecorder, dumped with WriteFile and WriteTo
)

var sinkNames = [...]string{"file", "gzip", "rotate", "rotate-gzip", "writer", "fifo", "flight"}

func (k sinkKind) String() string { return sinkNames[k] }

// onDisk reports whether the tracer writes files at a path of its own.
func (k sinkKind) onDisk() bool {
	return k == sinkFile || k == sinkGzip || k == sinkRotate || k == sinkRotateGzip
}

func (k sinkKind) rotates() bool { return k == sinkRotate || k == sinkRotateGzip }

// writerFault is what a writer given to NewWithWriter does wrong, for a
// while.
type writerFault uint8

const (
	faultNone  writerFault = iota
	faultFail              // writes part of a batch, then fails
	faultStall             // blocks until the fault ends
	faultShort             // writes part of a batch and returns io.ErrShortWrite
)

var faultNames = [...]string{"none", "fail", "stall", "short"}

func (f writerFault) String() string { return faultNames[f] }

// stringerMode is what the String method of a Stringer arg does.
type stringerMode uint8

const (
	strPlain   stringerMode = iota // returns a string
	strRecords                     // records an instant on the tracer
	strFlushes                     // calls Flush on the tracer
	strCloses                      // calls Close on the tracer, once, late in the run
	strPanics                      // panics
	strSleeps                      // sleeps a little, now and then
)

var stringerNames = [...]string{"plain", "records", "flushes", "closes", "panics", "sleeps"}

func (m stringerMode) String() string { return stringerNames[m] }

// handlerMode is what the tracer's error handler does.
type handlerMode uint8

const (
	hCount   handlerMode = iota // counts the errors
	hRecords                    // records an instant on the tracer
	hSlog                       // logs through traceslog onto the tracer
	hFlush                      // calls Flush
	hClose                      // calls Close
	hStop                       // calls tracer.Stop (a default tracer's)
	hPanic                      // panics
)

var handlerNames = [...]string{"count", "records", "slog", "flush", "close", "stop", "panic"}

func (m handlerMode) String() string { return handlerNames[m] }

// symlinkKind says how a tracer's path goes through a symlink.
type symlinkKind uint8

const (
	linkNone symlinkKind = iota
	linkDir              // the path's directory is a symlink to another
	linkFile             // the path is a symlink to a file in another directory
)

var linkNames = [...]string{"none", "dir", "file"}

func (k symlinkKind) String() string { return linkNames[k] }

// A TracerConfig is one tracer of the child and the workload recording
// into it.
type TracerConfig struct {
	Sink        sinkKind
	Lanes       bool
	Lossless    bool
	Flush       time.Duration // WithFlushInterval
	BufferLimit int           // WithBufferLimit; 0: the default
	StopTimeout time.Duration // WithStopTimeout; 0 waits forever
	MaxFileSize int64         // rotation
	MaxFiles    int           // rotation; 0 keeps all
	Link        symlinkKind
	Categories  bool // SetCategories switches categories while running

	Fault         writerFault // sinkWriter
	FaultAt       time.Duration
	FaultFor      time.Duration
	WriterRecords bool // the writer's Write records a span (user code on the writer goroutine)

	FifoDiesAt time.Duration // sinkFifo: the reader stops reading and closes; 0: never

	// Default: the tracer is the default tracer, started with Start and
	// recorded into with the package-level functions; Cycles > 0 stops
	// and starts it again that many times while the workload runs, each
	// time on a new file.
	Default bool
	Cycles  int

	FlightEvents int  // sinkFlight: FlightRecorderConfig.MaxEvents
	FlightBytes  int  // sinkFlight: FlightRecorderConfig.MaxBytes
	DumpOverLive bool // sinkFlight: one WriteFile goes onto tracer 0's path while it runs

	Stringer stringerMode
	Handler  handlerMode

	Tee teeKind // tees attached now and then: see tee.go

	Shapes []Shape
}

// shapeKind is a workload shape: code shaped like users' programs.
type shapeKind uint8

const (
	shapePool       shapeKind = iota // workers fed by a paced producer, each job a few nested spans
	shapeServer                      // a goroutine per request, in waves, a span tree each
	shapeRecursion                   // deep recursion, a deferred span a level
	shapeLeaker                      // goroutines that exit inside spans they never end
	shapeStale                       // end functions called twice, and late from another goroutine
	shapeHandles                     // StartSpan handles, children, ended on other goroutines
	shapeAsync                       // async operations and flows between a producer and consumers
	shapeCounters                    // counters, one with a series no viewer can show
	shapeLogger                      // slog through traceslog
	shapeStringers                   // spans with Stringer args (see stringerMode)
	shapeCategories                  // spans in categories that a switcher turns off and on
	shapeFlusher                     // calls Flush now and then, as before handing a file over
	shapeLong                        // LongSpan phases with instants inside
)

var shapeNames = [...]string{"pool", "server", "recursion", "leaker", "stale", "handles", "async", "counters", "logger", "stringers", "categories", "flusher", "long"}

func (k shapeKind) String() string { return shapeNames[k] }

// A Shape is one workload shape and its parameters.
type Shape struct {
	Kind  shapeKind
	N     int  // goroutines: pool workers, requests per wave, recursers
	Held  bool // pool: every worker holds a span for its life
	Str   bool // pool: every job span has a Stringer arg (see stringerMode)
	Depth int  // spans nested per job, or recursion depth
	Work  int  // spin iterations per job (about 1ns each)
	Rate  int  // jobs a second, all goroutines of the shape together
}

func (s Shape) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s(n=%d", s.Kind, s.N)
	if s.Held {
		b.WriteString(" held")
	}
	if s.Str {
		b.WriteString(" stringer")
	}
	if s.Depth > 0 {
		fmt.Fprintf(&b, " depth=%d", s.Depth)
	}
	if s.Work > 0 {
		fmt.Fprintf(&b, " work=%d", s.Work)
	}
	if s.Rate > 0 {
		fmt.Fprintf(&b, " rate=%d/s", s.Rate)
	}
	b.WriteString(")")
	return b.String()
}

// draw is a seeded source of choices.
type draw struct{ r *rand.Rand }

func newDraw(seed uint64, stream uint64) draw {
	return draw{rand.New(rand.NewPCG(seed, 0x746f727475726500|stream))}
}

// chance returns true with probability p.
func (d draw) chance(p float64) bool { return d.r.Float64() < p }

// pick returns one of xs.
func pick[T any](d draw, xs ...T) T { return xs[d.r.IntN(len(xs))] }

// weighted returns index i with probability w[i]/sum(w).
func (d draw) weighted(w ...int) int {
	sum := 0
	for _, x := range w {
		sum += x
	}
	n := d.r.IntN(sum)
	for i, x := range w {
		if n < x {
			return i
		}
		n -= x
	}
	return len(w) - 1
}

// between returns a duration in [lo, hi).
func (d draw) between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(d.r.Int64N(int64(hi-lo)))
}

// drawConfig draws the configuration and workload of seed for a run of
// duration run. It depends on nothing else, so the parent and the child
// draw the same.
func drawConfig(seed uint64, run time.Duration) *Config {
	d := newDraw(seed, 1)
	c := &Config{Seed: seed}
	c.Procs = pick(d, 1, 2, 2, 2, 4)

	n := 1 + d.weighted(60, 30, 10)
	for i := 0; i < n; i++ {
		c.Tracers = append(c.Tracers, drawTracer(d, i, run))
	}
	t0 := &c.Tracers[0]

	fileLike := t0.Sink.onDisk()
	switch {
	case fileLike && d.chance(0.2):
		c.KillAt = d.between(run/10, run)
	case fileLike && t0.Cycles == 0 && d.chance(0.08):
		// StopOnSignal stops the default tracer: tracer 0 becomes it.
		makeDefault(c, 0)
		c.TermAt = d.between(run/5, run)
	}
	if fileLike && c.KillAt == 0 && c.TermAt == 0 && t0.Cycles == 0 {
		p := 0.08
		if t0.Sink.rotates() {
			p = 0.3 // the window between rotation's rename and open
		}
		c.Rival = d.chance(p)
	}
	if fileLike && t0.Cycles == 0 && d.chance(0.2) {
		c.Tmpfs = true
		c.TmpfsSize = pick[int64](d, 1<<20, 2<<20, 2<<20, 4<<20)
		if d.chance(0.6) {
			t0.Sink = pick(d, sinkRotate, sinkRotate, sinkRotateGzip)
			t0.Link = linkNone
			drawRotation(d, t0)
			// Rotation to a small disk fills it by itself; keep the
			// files a disk of this size holds, most of the time.
			if d.chance(0.7) {
				t0.MaxFiles = max(2, int(c.TmpfsSize/t0.MaxFileSize)/2)
			}
		}
		for at := d.between(run/20, run/3); at < run; at += d.between(run/10, run/3) {
			f := Fill{At: at, For: d.between(run/20, run/4)}
			c.Fills = append(c.Fills, f)
			at += f.For
		}
		c.FullAtClose = d.chance(0.25)
	}
	// A flight recorder dumping onto a live tracer's path.
	for i := 1; i < len(c.Tracers); i++ {
		// (t0 must not close itself: the path is then free to take. The
		// condition comes after the draw, which stays the same.)
		if c.Tracers[i].Sink == sinkFlight && t0.Sink.onDisk() && t0.Cycles == 0 && d.chance(0.5) && !t0.closesItself() {
			c.Tracers[i].DumpOverLive = true
		}
	}
	if t0.Sink.onDisk() && t0.Cycles == 0 && !hasFlight(c) && d.chance(0.12) {
		f := drawTracer(d, len(c.Tracers), run)
		f.Sink = sinkFlight
		drawFlight(d, &f)
		f.DumpOverLive = !t0.closesItself()
		c.Tracers = append(c.Tracers, f)
	}
	c.CloseWhileRunning = d.chance(0.3)
	c.Importers = drawImporters(seed)
	drawTees(seed, c)
	if run > soakAfter {
		boundOutput(c)
	}
	return c
}

// soakAfter is the run time past which a run is a soak: it runs long
// enough that files written without bound would fill the disk and take
// longer to check than to write.
const soakAfter = 2 * time.Minute

// boundOutput makes a soak's tracers write a bounded amount: a file, a
// writer's stream or a pipe becomes a rotated file that keeps at most a
// few files (gzip stays gzip), so that what is on disk, and what the
// checks read, stays the same size however long the run. Flight
// recordings are bounded already.
func boundOutput(c *Config) {
	for i := range c.Tracers {
		t := &c.Tracers[i]
		switch t.Sink {
		case sinkFile, sinkWriter, sinkFifo:
			t.Sink = sinkRotate
		case sinkGzip:
			t.Sink = sinkRotateGzip
		}
		t.Fault, t.WriterRecords, t.FifoDiesAt = faultNone, false, 0
		if t.Sink.rotates() {
			t.MaxFileSize = max(t.MaxFileSize, 1<<20)
			if t.MaxFiles == 0 {
				t.MaxFiles = 4
			}
		}
	}
}

// keepShapes leaves in c only the shapes named in only (comma-separated),
// for bisecting a failure by hand: -shapes pool,stringers.
func (c *Config) keepShapes(only string) {
	if only == "" {
		return
	}
	keep := map[string]bool{}
	for _, n := range strings.Split(only, ",") {
		keep[strings.TrimSpace(n)] = true
	}
	for i := range c.Tracers {
		t := &c.Tracers[i]
		t.Shapes = slices.DeleteFunc(t.Shapes, func(s Shape) bool { return !keep[s.Kind.String()] })
	}
}

func hasFlight(c *Config) bool {
	for _, t := range c.Tracers {
		if t.Sink == sinkFlight {
			return true
		}
	}
	return false
}

// optionalEvents reports whether any event recorded for tracer t may
// rightly go nowhere: a default tracer that may be stopped while the
// workload records, which then records into no tracer (tracer.Default()
// is nil) rather than into a closed one, which counts what it refuses.
func (c *Config) optionalEvents(t *TracerConfig) bool {
	if !t.Default {
		return false
	}
	return t.Cycles > 0 || t.Handler == hStop || t.Handler == hClose || t.Stringer == strCloses ||
		c.CloseWhileRunning && c.TermAt == 0
}

// closesItself reports whether code the tracer runs may close it while
// the workload records: its error handler or a String method.
func (t *TracerConfig) closesItself() bool {
	return t.Handler == hStop || t.Handler == hClose || t.Stringer == strCloses
}

// makeDefault makes tracer i the default tracer, with no cycles.
func makeDefault(c *Config, i int) {
	c.Tracers[i].Default = true
	c.Tracers[i].Cycles = 0
}

// drawImporters decides whether a seed's files are loaded in both real
// importers: about one seed in five, decided by the seed alone on a
// stream of its own, so that it does not change the rest of the draw and
// -importers all or none can override it.
func drawImporters(seed uint64) bool { return newDraw(seed, 2).chance(0.2) }

func drawRotation(d draw, t *TracerConfig) {
	t.MaxFileSize = pick[int64](d, 4<<10, 16<<10, 64<<10, 256<<10, 1<<20)
	t.MaxFiles = pick(d, 0, 0, 2, 3, 6)
}

func drawFlight(d draw, t *TracerConfig) {
	t.FlightEvents = pick(d, 1000, 20000, 200000)
	t.FlightBytes = pick(d, 256<<10, 1<<20, 4<<20, 16<<20)
}

func drawTracer(d draw, index int, run time.Duration) TracerConfig {
	t := TracerConfig{
		Flush:       pick(d, 10*time.Millisecond, 50*time.Millisecond, 100*time.Millisecond, 100*time.Millisecond, 200*time.Millisecond),
		BufferLimit: pick(d, 0, 0, 0, 1<<20, 4<<20),
		StopTimeout: pick(d, 2*time.Second, 3*time.Second, 5*time.Second, 5*time.Second),
		Lanes:       d.chance(0.25),
		Lossless:    d.chance(0.2),
		Categories:  d.chance(0.25),
	}
	if d.chance(0.08) {
		t.StopTimeout = 0 // wait forever
	}
	t.Sink = sinkKind(d.weighted(22, 10, 22, 11, 15, 8, 12))
	switch t.Sink {
	case sinkRotate, sinkRotateGzip:
		drawRotation(d, &t)
	case sinkWriter:
		t.Fault = writerFault(d.weighted(25, 25, 25, 25))
		t.FaultAt = d.between(run/20, run/2)
		t.FaultFor = d.between(run/20, run/3)
		if t.Fault == faultStall {
			t.FaultFor = min(t.FaultFor, 2*time.Second)
		}
		t.WriterRecords = d.chance(0.3)
	case sinkFifo:
		if d.chance(0.6) {
			t.FifoDiesAt = d.between(run/10, run)
		}
	case sinkFlight:
		drawFlight(d, &t)
	}
	if t.Sink.onDisk() && d.chance(0.2) {
		t.Link = symlinkKind(1 + d.r.IntN(2))
	}
	if index == 0 && t.Sink.onDisk() && d.chance(0.2) {
		t.Default = true // one default tracer at most: tracer 0
		if d.chance(0.6) {
			t.Cycles = 2 + d.r.IntN(8)
		}
	}
	t.Stringer = stringerMode(d.weighted(40, 15, 12, 5, 10, 10))
	t.Handler = handlerMode(d.weighted(35, 15, 12, 12, 12, 5, 5))
	if t.Handler == hStop && !t.Default {
		t.Handler = hClose
	}
	t.Shapes = drawShapes(d, &t)
	return t
}

func drawShapes(d draw, t *TracerConfig) []Shape {
	var ss []Shape
	add := func(p float64, s Shape) {
		if d.chance(p) {
			ss = append(ss, s)
		}
	}
	// The record rate is paced so that a run's files stay small enough to
	// check in seconds; a flight recorder, or rotation that deletes old
	// files, writes little whatever the rate, so it may go flat out.
	fast := t.Sink == sinkFlight || t.Sink.rotates() && t.MaxFiles > 0
	poolRate := func() int {
		if fast && d.chance(0.6) {
			return 0
		}
		return pick(d, 2000, 20000, 50000, 100000)
	}
	add(0.75, Shape{Kind: shapePool, N: pick(d, 4, 8, 16, 20, 32, 32, 64), Held: d.chance(0.6), Str: d.chance(0.3),
		Depth: 1 + d.r.IntN(3), Work: pick(d, 100, 500, 2000, 20000), Rate: poolRate()})
	add(0.2, Shape{Kind: shapePool, N: pick(d, 2, 20, 32), Held: true, Depth: 1, Work: pick(d, 100, 1000), Rate: poolRate()})
	add(0.4, Shape{Kind: shapeServer, N: pick(d, 8, 32, 128), Depth: 1 + d.r.IntN(4), Work: pick(d, 200, 2000, 20000), Rate: pick(d, 1000, 5000, 20000)})
	add(0.25, Shape{Kind: shapeRecursion, N: 1 + d.r.IntN(3), Depth: pick(d, 50, 500, 3000), Work: pick(d, 0, 100), Rate: pick(d, 20, 200)})
	add(0.3, Shape{Kind: shapeLeaker, N: 1 + d.r.IntN(4), Depth: 1 + d.r.IntN(3), Rate: pick(d, 10, 100, 500)})
	add(0.4, Shape{Kind: shapeStale, N: 1 + d.r.IntN(4), Rate: pick(d, 100, 2000)})
	add(0.3, Shape{Kind: shapeHandles, N: 1 + d.r.IntN(4), Depth: 1 + d.r.IntN(3), Rate: pick(d, 200, 5000)})
	add(0.35, Shape{Kind: shapeAsync, N: 1 + d.r.IntN(4), Rate: pick(d, 200, 5000)})
	add(0.4, Shape{Kind: shapeCounters, N: 1, Rate: pick(d, 50, 1000)})
	add(0.25, Shape{Kind: shapeLogger, N: 1 + d.r.IntN(3), Rate: pick(d, 50, 2000)})
	if t.Stringer != strPlain || d.chance(0.3) {
		add(0.85, Shape{Kind: shapeStringers, N: 1 + d.r.IntN(3), Rate: pick(d, 100, 2000)})
	}
	if t.Categories {
		ss = append(ss, Shape{Kind: shapeCategories, N: 1 + d.r.IntN(3), Rate: pick(d, 500, 5000)})
	}
	// A Stringer that flushes meets a Flush under way only if someone
	// flushes: the shape of a program that flushes before handing a file.
	p := 0.35
	if t.Stringer == strFlushes {
		p = 0.9
	}
	add(p, Shape{Kind: shapeFlusher, N: 1, Rate: pick(d, 3, 20)})
	add(0.25, Shape{Kind: shapeLong, N: 1 + d.r.IntN(2), Depth: 1 + d.r.IntN(3), Rate: pick(d, 5, 50)})
	if len(ss) == 0 {
		ss = append(ss, Shape{Kind: shapePool, N: 4, Depth: 1, Work: 1000, Rate: 5000})
	}
	return ss
}

// String prints the configuration on one line.
func (c *Config) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "procs=%d", c.Procs)
	for i, t := range c.Tracers {
		fmt.Fprintf(&b, " | t%d: %s", i, t.String())
	}
	if c.KillAt > 0 {
		fmt.Fprintf(&b, " | SIGKILL at %v", c.KillAt.Round(time.Millisecond))
	}
	if c.TermAt > 0 {
		fmt.Fprintf(&b, " | SIGTERM at %v", c.TermAt.Round(time.Millisecond))
	}
	if c.Rival {
		b.WriteString(" | rival process on t0's path")
	}
	if c.Tmpfs {
		fmt.Fprintf(&b, " | tmpfs %d KiB, fills %d", c.TmpfsSize>>10, len(c.Fills))
		if c.FullAtClose {
			b.WriteString(", full at close")
		}
	}
	if c.CloseWhileRunning {
		b.WriteString(" | close while running")
	}
	if c.Importers {
		b.WriteString(" | importers")
	}
	return b.String()
}

func (t TracerConfig) String() string {
	var b strings.Builder
	b.WriteString(t.Sink.String())
	switch {
	case t.Sink.rotates():
		fmt.Fprintf(&b, "(max %d KiB, %d files)", t.MaxFileSize>>10, t.MaxFiles)
	case t.Sink == sinkWriter:
		var what []string
		if t.Fault != faultNone {
			what = append(what, fmt.Sprintf("%s at %v for %v", t.Fault, t.FaultAt.Round(time.Millisecond), t.FaultFor.Round(time.Millisecond)))
		}
		if t.WriterRecords {
			what = append(what, "records")
		}
		if len(what) > 0 {
			fmt.Fprintf(&b, "(%s)", strings.Join(what, ", "))
		}
	case t.Sink == sinkFifo && t.FifoDiesAt > 0:
		fmt.Fprintf(&b, "(reader dies at %v)", t.FifoDiesAt.Round(time.Millisecond))
	case t.Sink == sinkFlight:
		fmt.Fprintf(&b, "(%d events, %d KiB", t.FlightEvents, t.FlightBytes>>10)
		if t.DumpOverLive {
			b.WriteString(", dumps onto t0's path")
		}
		b.WriteString(")")
	}
	if t.Default {
		b.WriteString(" default")
		if t.Cycles > 0 {
			fmt.Fprintf(&b, "(%d Start/Stop cycles)", t.Cycles)
		}
	}
	if t.Tee != teeNone {
		fmt.Fprintf(&b, " tee=%s", t.Tee)
	}
	fmt.Fprintf(&b, " flush=%v", t.Flush)
	if t.BufferLimit > 0 {
		fmt.Fprintf(&b, " buffer=%dKiB", t.BufferLimit>>10)
	}
	if t.StopTimeout == 0 {
		b.WriteString(" stop-timeout=forever")
	} else {
		fmt.Fprintf(&b, " stop-timeout=%v", t.StopTimeout)
	}
	for _, f := range []struct {
		on   bool
		name string
	}{{t.Lanes, "lanes"}, {t.Lossless, "lossless"}, {t.Categories, "categories"}} {
		if f.on {
			b.WriteString(" " + f.name)
		}
	}
	if t.Link != linkNone {
		fmt.Fprintf(&b, " symlink=%s", t.Link)
	}
	fmt.Fprintf(&b, " stringer=%s handler=%s shapes=", t.Stringer, t.Handler)
	for i, s := range t.Shapes {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(s.String())
	}
	return b.String()
}
