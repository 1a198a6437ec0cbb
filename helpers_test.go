package tracer

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gotracer/tracer/internal/childtest"
	"github.com/gotracer/tracer/internal/tracecheck"
	"github.com/gotracer/tracer/internal/tracefile"
	"github.com/stretchr/testify/require"
	"go.uber.org/atomic"
)

// event is one trace event as a viewer reads it; the integration
// packages' tests read the same with tracecheck.
type event = tracecheck.Event

// repair applies the documented repair to a file cut off by a crash, the
// one chrome://tracing applies itself: strip the trailing comma (and the
// white space around it) and close the array (tracefile.Terminate). The
// result is a copy: never the caller's bytes written over.
func repair(data []byte) []byte {
	out, _ := tracefile.Terminate(data)
	return out
}

// TestMain runs two parallel tests a core at once: most of them wait, for
// the importers, a child process or a stalled sink (see tracecheck.Main).
func TestMain(m *testing.M) { tracecheck.Main(m) }

// readClosed parses a cleanly closed trace as strict JSON, unrepaired: a
// plain file in the object form that sets the display unit, anything else
// an array (see objectHead).
func readClosed(t testing.TB, path string) []event {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return parseClosed(t, data)
}

// asRunning returns a plain file closed as the object (see objectHead) as
// it was before Close made it one: the array behind the head's spaces, at
// the same offsets. Other data is returned as it is.
func asRunning(data []byte) []byte {
	if !bytes.HasPrefix(data, []byte(objectHead)) || !bytes.HasSuffix(data, []byte("]\n}\n")) {
		return data
	}
	out := append(bytes.Repeat([]byte(" "), len(objectHead)), data[len(objectHead):]...)
	return out[:len(out)-2]
}

// asArray returns a trace file's array, without the object head or the
// spaces a plain file starts with.
func asArray(data []byte) []byte {
	return bytes.TrimLeft(asRunning(data), " ")
}

// parseClosed parses a closed trace's bytes: see readClosed.
func parseClosed(t testing.TB, data []byte) []event {
	t.Helper()
	return tracecheck.Parse(t, data)
}

// readCrashed parses a trace left by a killed process after repair.
func readCrashed(t testing.TB, data []byte) []event {
	t.Helper()
	// A kill in the middle of a write can leave the newlines that pad
	// events off page boundaries (pagealign.go) after the last event.
	require.True(t, bytes.HasSuffix(bytes.TrimRight(data, " \n"), []byte("},")), "the file must end on an event boundary: %q", data[max(0, len(data)-40):])
	var evs []event
	require.NoError(t, json.Unmarshal(repair(data), &evs), "repaired file must parse")
	return evs
}

// byPhase returns the events with phase ph, byName those named name.
var byPhase, byName = tracecheck.Phase, tracecheck.Named

// checkTracks checks what both viewers need of every goroutine's track (B
// and E events form a stack in file order with matching names; all
// slices, X and B/E alike, nest without overlapping) and returns the
// slices of each track, sorted by start.
func checkTracks(t testing.TB, evs []event) map[uint64][]tracecheck.Slice {
	t.Helper()
	return tracecheck.Tracks(t, evs)
}

// readFile returns a file's text.
func readFile(t testing.TB, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(data)
}

// errorLog collects what the error handler is given.
type errorLog struct {
	mu   sync.Mutex
	errs []error
}

func (l *errorLog) handle(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs = append(l.errs, err)
}

func (l *errorLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.errs)
}

// matching returns the reported errors whose text holds sub.
func (l *errorLog) matching(sub string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, err := range l.errs {
		if strings.Contains(err.Error(), sub) {
			out = append(out, err.Error())
		}
	}
	return out
}

// readyOnceWritten is the end of a child process that a test kills: it
// waits until the trace at path holds every one of needles, says READY
// (see childtest.StartReady), and blocks until it is killed.
func readyOnceWritten(t *testing.T, path string, needles ...string) {
	t.Helper()
	waitWritten(t, path, needles...)
	os.Stdout.WriteString("READY\n")
	select {}
}

// waitWritten waits until the trace at path holds every one of needles:
// until the flusher, on its interval, has written them. The minute only
// turns a flusher that never writes into a failure.
func waitWritten(t *testing.T, path string, needles ...string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		all := true
		for _, n := range needles {
			all = all && bytes.Contains(data, []byte(n))
		}
		if all {
			return
		}
	}
	t.Fatalf("the flusher did not write %q in a minute", needles)
}

// killReady starts cmd, kills it with SIGKILL once it is READY (see
// readyOnceWritten), and returns the events of the trace it left at path,
// whose tracks must nest.
func killReady(t *testing.T, cmd *exec.Cmd, path string) []event {
	t.Helper()
	childtest.StartReady(t, cmd)
	require.NoError(t, cmd.Process.Kill())
	cmd.Wait()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	evs := readCrashed(t, data)
	checkTracks(t, evs)
	return evs
}

// allocsPerRun is testing.AllocsPerRun(runs, f) at its lowest over a few
// tries. AllocsPerRun counts the process's allocations, so a goroutine of
// an earlier test, or the tracer's own, that allocates meanwhile adds to
// it; an allocation that f makes adds to every try.
func allocsPerRun(runs int, f func()) float64 {
	least := testing.AllocsPerRun(runs, f)
	for try := 1; try < 5 && least > 0; try++ {
		least = min(least, testing.AllocsPerRun(runs, f))
	}
	return least
}

// A testClock is a flushClock a test drives (see flushclock.go): the
// flusher passes when the test calls Flush, when a P fills chunks, or
// when the test ticks; no span still open is old enough to be written as
// a B event until the test says so (ageAll); and no write stalls until
// the test says so (stallWrites), however long the machine takes to run
// the writer. newTestTracer gives every tracer one, unless the test gives
// its own clock.
type testClock struct {
	tick   chan time.Time
	old    atomic.Int64   // the nanotime before which an open span is old
	skew   atomic.Int64   // how far ahead of nanotime the clock is: see advance
	writes atomic.Int64   // the time writes are timed on: see stallWrites
	expire chan time.Time // makes a wait for the sink give up: see timeOut
}

func newTestClock() *testClock {
	c := &testClock{tick: make(chan time.Time), expire: make(chan time.Time)}
	c.old.Store(never)
	c.writes.Store(1) // never 0, which the writer takes for no write under way
	return c
}

func (c *testClock) writeTime() int64 { return c.writes.Load() }

// stallWrites makes every write under way now, or the next one if none
// is, take an hour: the sink counts as stalled until that write returns,
// and, outside lossless mode, events that find the buffers full are
// dropped.
func (c *testClock) stallWrites() { c.writes.Add(int64(time.Hour)) }

func (c *testClock) ticks(time.Duration) (<-chan time.Time, func()) { return c.tick, func() {} }

// giveUp never fires on its own: a Flush or Close waiting for a slow sink
// waits however long a loaded machine takes, until the test calls
// timeOut.
func (c *testClock) giveUp(time.Duration) (<-chan time.Time, func()) { return c.expire, func() {} }

// timeOut runs call (a Flush, Close, Tee or Tee.Stop) on another
// goroutine and, once it waits for the sink, makes it give up, as its
// stop timeout would. It returns call's error, and whether call returned
// on its own, before it was made to give up. A call that neither returns
// nor waits for the give-up within a minute fails the test.
func (c *testClock) timeOut(t *testing.T, call func() error) (early bool, err error) {
	t.Helper()
	returned := make(chan error, 1)
	go func() { returned <- call() }()
	hang := time.After(time.Minute)
	select {
	case c.expire <- time.Now():
	case err := <-returned:
		return true, err
	case <-hang:
		t.Fatal("the call neither returned nor waited for its stop timeout in a minute")
	}
	select {
	case err := <-returned:
		return false, err
	case <-hang:
		t.Fatal("the call did not give up in a minute when its stop timeout passed")
	}
	return false, nil
}

func (c *testClock) oldBefore(cut int64, _ time.Duration) int64 { return min(c.old.Load(), cut) }

func (c *testClock) now() int64 { return nanotime() + c.skew.Load() }

// advance moves the clock d ahead: a flight recorder's window takes what
// it wrote for d older.
func (c *testClock) advance(d time.Duration) { c.skew.Add(int64(d)) }

// passing makes the flusher pass on its own goroutine again and again, as
// a short flush interval would, until the function it returns is called:
// passes that come between a test's events, driven by the test.
func (c *testClock) passing() (stop func()) {
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case c.tick <- time.Now():
			case <-done:
				return
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// ageAll makes every span open at a pass from now on old: the next pass
// (a Flush) writes their B events, as a pass a flush interval after they
// started would.
func (c *testClock) ageAll() { c.old.Store(math.MaxInt64) }

// pass makes the flusher pass on its own goroutine, as it does every
// flush interval, and returns once it has begun: after a pass, the one
// before it is done.
func (c *testClock) pass() { c.tick <- time.Now() }

// passAfter is pass at the tick of d from now: once a second or so, the
// flusher gives the pool the chunks a burst left unused.
func (c *testClock) passAfter(d time.Duration) { c.tick <- time.Now().Add(d) }

// ageAll makes every span open on tr at its next pass old, as a flush
// interval later, if tr has a testClock.
func ageAll(tr *Tracer) {
	if c, ok := tr.opts.clock.(*testClock); ok {
		c.ageAll()
	}
}

// giveUpSlack is how much later than its timeout a call that gives up
// (Flush, Close or Stop on a stalled sink, New on a FIFO no one reads)
// may return: a bound that tells giving up from waiting for the sink,
// which the test holds until long after, and no measure of speed, so
// generous enough for a loaded machine under the race detector.
const giveUpSlack = 10 * time.Second

// heavyEnv names the environment variable that runs the heavy tests:
// the crash matrix and a million goroutines or open spans. .ci/run sets
// it on every run; the README's test command leaves them out.
const heavyEnv = tracecheck.HeavyEnv

// heavyRun reports whether heavyEnv is set: a heavy run.
func heavyRun() bool { return tracecheck.Heavy() }

// heavy skips a heavy test unless heavyEnv is set.
func heavy(t testing.TB) {
	t.Helper()
	if !heavyRun() {
		t.Skipf("a heavy test: %s=1 runs it, as .ci/run does", heavyEnv)
	}
}

// importInHeavyRun loads the files with both real importers, as
// tracecheck.Import does, in the heavy run (heavyEnv) only, and returns
// their reports, nil in the quick run: there the test's own strict checks
// stand, and TestFilesLoadInBothViewers and TestSpanHandle load every kind
// of file the tracer writes in both importers. A run of the importers
// takes seconds (catapult's starts Chromium).
func importInHeavyRun(t testing.TB, paths ...string) (perfetto, catapult []tracecheck.Report) {
	t.Helper()
	if !heavyRun() {
		return nil, nil
	}
	return tracecheck.Import(t, paths...)
}

// holdSpans starts n spans named "request", each held open by a goroutine
// of its own, and returns once all have started; release ends them and
// waits for the goroutines.
func holdSpans(span func(string, ...Arg) func(...Arg), n int) (release func()) {
	var started, wg sync.WaitGroup
	done := make(chan struct{})
	started.Add(n)
	wg.Add(n)
	for i := range n {
		go func() {
			defer wg.Done()
			end := span("request", Int("i", i))
			started.Done()
			<-done
			end()
		}()
	}
	started.Wait()
	return func() { close(done); wg.Wait() }
}
