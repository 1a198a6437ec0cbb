package tracer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gotracer/tracer/internal/childtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The crash matrix re-runs a child process that records as fast as it can
// while flushing continuously in big batches, and SIGKILLs it at a random
// moment, so that many kills land in the middle of a write. Every file it
// leaves must end on an event boundary, parse after the documented repair,
// hold every event recorded before the last flush the child completed, and
// hold no event twice.
//
//	go test -run '^TestCrashMatrix$' -crashruns 1000 .   # the long version

var crashRuns = flag.Int("crashruns", 50, "runs per format of TestCrashMatrix")

// A crashFormat is one kind of file the tracer writes: how the child opens
// it and how the test turns what is on disk into the JSON text a viewer
// reads. Compressed formats add a row here.
type crashFormat struct {
	name   string
	suffix string
	open   func(path string, opts ...Option) (*Tracer, error)
	read   func(t testing.TB, path string) []byte
}

var crashFormats = []crashFormat{
	{name: "json", suffix: ".json", open: New, read: readRaw},
	{name: "gzip", suffix: ".json.gz", open: New, read: readGunzip},
}

// readGunzip decodes every member of a gzip trace; gunzipMembers fails the
// test if any member, the last included, is not whole, as Perfetto would
// fail to load the whole trace.
func readGunzip(t testing.TB, path string) []byte {
	t.Helper()
	return bytes.Join(gunzipMembers(t, readRaw(t, path)), nil)
}

func readRaw(t testing.TB, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return data
}

func crashFormatNamed(name string) crashFormat {
	for _, f := range crashFormats {
		if f.name == name {
			return f
		}
	}
	panic("no crash format " + name)
}

const (
	matrixChildEnv = "TRACER_MATRIX_CHILD" // format name and path, "name:path"
	matrixWorkers  = 4
)

// TestCrashMatrixChild is the process TestCrashMatrix kills. Its workers
// record jobs, each a span with a nested span and an instant, numbered per
// worker, with a payload of varying length so that batches are big and
// events fall across page boundaries. The main goroutine flushes in a loop
// and after each flush prints the number of the last job and instant each
// worker had finished before the flush began.
func TestCrashMatrixChild(t *testing.T) {
	spec := os.Getenv(matrixChildEnv)
	if spec == "" {
		t.Skip("helper process for TestCrashMatrix")
	}
	name, path, _ := strings.Cut(spec, ":")
	// A minute's stop timeout: a loaded machine with the race detector
	// took a flush over the default 5 s, and the test kills the child at
	// random moments anyway; a sink that hangs still ends in an error
	// rather than a child that never reports.
	tr, err := crashFormatNamed(name).open(path,
		WithFlushInterval(5*time.Millisecond), WithStopTimeout(time.Minute))
	require.NoError(t, err)
	payload := strings.Repeat("0123456789abcdef", 64)
	var ended [matrixWorkers]atomic.Int64
	for w := range matrixWorkers {
		ended[w].Store(-1)
		go func() {
			tr.SetGoroutineName("worker " + strconv.Itoa(w))
			for seq := 0; ; seq++ {
				job := tr.Span("job", Int("w", w), Int("seq", seq), String("payload", payload[:seq*37%len(payload)]))
				tr.Span("step", Int("seq", seq))()
				tr.Instant("mark", Int("w", w), Int("seq", seq))
				job()
				ended[w].Store(int64(seq))
				if seq%16 == 0 {
					// Enough for many big writes between kills, not so
					// much that the disk becomes the test.
					time.Sleep(50 * time.Microsecond)
				}
			}
		}()
	}
	out := bufio.NewWriter(os.Stdout)
	for {
		var line strings.Builder
		line.WriteString("FLUSHED")
		for w := range matrixWorkers {
			line.WriteString(" " + strconv.FormatInt(ended[w].Load(), 10))
		}
		time.Sleep(2 * time.Millisecond) // let big batches build up
		require.NoError(t, tr.Flush())
		fmt.Fprintf(out, "%s %d\n", line.String(), tr.Stats().Dropped)
		out.Flush()
	}
}

// matrixReport is what the child said after one completed flush.
type matrixReport struct {
	ended   [matrixWorkers]int64
	dropped uint64
}

func parseMatrixReport(line string) (matrixReport, bool) {
	var r matrixReport
	f := strings.Fields(line)
	if len(f) != matrixWorkers+2 || f[0] != "FLUSHED" {
		return r, false
	}
	for w := range matrixWorkers {
		n, err := strconv.ParseInt(f[1+w], 10, 64)
		if err != nil {
			return r, false
		}
		r.ended[w] = n
	}
	d, err := strconv.ParseUint(f[matrixWorkers+1], 10, 64)
	if err != nil {
		return r, false
	}
	r.dropped = d
	return r, true
}

func TestCrashMatrix(t *testing.T) {
	heavy(t)
	runs := *crashRuns
	seed := uint64(time.Now().UnixNano())
	t.Logf("%d runs per format, seed %d", runs, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	for _, format := range crashFormats {
		t.Run(format.name, func(t *testing.T) {
			dir := t.TempDir()
			var cutMidWrite, flushes int
			start := time.Now()
			for run := range runs {
				path := filepath.Join(dir, "crash"+strconv.Itoa(run)+format.suffix)
				delay := time.Duration(rng.Int64N(int64(15 * time.Millisecond)))
				last, n := crashMatrixRun(t, format, path, delay)
				flushes += n
				data := format.read(t, path)
				if checkCrashFile(t, data, last, fmt.Sprintf("run %d (kill %v after the first flush)", run, delay)) {
					cutMidWrite++
				}
				os.Remove(path)
			}
			t.Logf("%s: %d runs in %v, %d flushes reported, %d files cut in the middle of a write",
				format.name, runs, time.Since(start).Round(time.Millisecond), flushes, cutMidWrite)
			if runs >= 200 && !raceEnabled {
				// About one kill in ten cuts a write without the race
				// detector: a long run that saw none tests nothing.
				assert.Positive(t, cutMidWrite, "no kill landed in the middle of a write")
			}
		})
	}
}

// crashMatrixRun starts the child, lets it flush at least once, waits
// delay, kills it, and returns the report of the last flush it completed
// and how many it reported.
func crashMatrixRun(t *testing.T, format crashFormat, path string, delay time.Duration) (matrixReport, int) {
	t.Helper()
	cmd := childtest.Command("TestCrashMatrixChild", matrixChildEnv+"="+format.name+":"+path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())

	lines := bufio.NewScanner(out)
	var last matrixReport
	reports := 0
	var other strings.Builder // what else the child printed: a failed Flush says why
	for reports == 0 && lines.Scan() {
		if r, ok := parseMatrixReport(lines.Text()); ok {
			last, reports = r, reports+1
		} else {
			other.WriteString(lines.Text() + "\n")
		}
	}
	if reports == 0 {
		cmd.Process.Kill()
		cmd.Wait()
		require.FailNow(t, "child never flushed", "stdout: %s\nstderr: %s", other.String(), stderr.String())
	}
	// Read on while waiting, so the child never blocks on a full pipe.
	done := make(chan struct{})
	go func() {
		defer close(done)
		for lines.Scan() {
			if r, ok := parseMatrixReport(lines.Text()); ok {
				last, reports = r, reports+1
			}
		}
	}()
	time.Sleep(delay)
	require.NoError(t, cmd.Process.Kill()) // SIGKILL
	<-done                                 // the child is dead: every line it wrote is read
	io.Copy(io.Discard, out)
	err = cmd.Wait()
	require.Error(t, err, "the child must have been killed")
	require.Contains(t, err.Error(), "killed", "stderr: %s", stderr.String())
	require.Zero(t, last.dropped, "the child paces itself not to drop")
	return last, reports
}

// checkCrashFile checks a file left by a killed child against the last
// flush it reported. It reports whether the kill cut a write: the file
// then ends in the padding that keeps events off page boundaries.
func checkCrashFile(t testing.TB, data []byte, last matrixReport, what string) (cutMidWrite bool) {
	t.Helper()
	require.True(t, bytes.HasPrefix(data, []byte("[\n{\"")) || bytes.HasPrefix(data, []byte(strings.Repeat(" ", len(objectHead))+"[\n{\"")),
		"%s: file must start with [ and an event, behind the spaces that may take the object head: %.60q", what, data)
	body := bytes.TrimRight(data, "\n")
	require.True(t, bytes.HasSuffix(body, []byte("},")),
		"%s: the file must end on an event boundary, it ends with %q", what, data[max(0, len(data)-80):])
	var evs []event
	dec := json.NewDecoder(bytes.NewReader(repair(data)))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&evs), "%s: the repaired file must be strict JSON", what)
	checkTracks(t, evs)

	type key struct{ w, seq int64 }
	jobs, marks := map[key]int{}, map[key]int{}
	for _, e := range evs {
		switch {
		case e.Name == "job" && (e.Ph == "X" || e.Ph == "B"):
			jobs[key{int64(e.Args["w"].(float64)), int64(e.Args["seq"].(float64))}]++
		case e.Name == "mark" && e.Ph == "i":
			marks[key{int64(e.Args["w"].(float64)), int64(e.Args["seq"].(float64))}]++
		}
	}
	for k, n := range jobs {
		require.Equal(t, 1, n, "%s: job %v written %d times", what, k, n)
	}
	for k, n := range marks {
		require.Equal(t, 1, n, "%s: instant %v written %d times", what, k, n)
	}
	for w, upTo := range last.ended {
		for seq := int64(0); seq <= upTo; seq++ {
			k := key{int64(w), seq}
			require.Equal(t, 1, jobs[k], "%s: job %v finished before the last completed flush must be in the file", what, k)
			require.Equal(t, 1, marks[k], "%s: instant %v recorded before the last completed flush must be in the file", what, k)
		}
	}
	return len(data)-len(body) > 1
}

func TestCheckCrashFileCanFail(t *testing.T) {
	good := []byte("[\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"x\"}},\n" +
		"{\"name\":\"job\",\"ph\":\"X\",\"ts\":1.000,\"dur\":1.000,\"pid\":1,\"tid\":2,\"args\":{\"w\":0,\"seq\":0}},\n" +
		"{\"name\":\"mark\",\"ph\":\"i\",\"s\":\"t\",\"ts\":1.500,\"pid\":1,\"tid\":2,\"args\":{\"w\":0,\"seq\":0}},\n")
	last := matrixReport{ended: [matrixWorkers]int64{0, -1, -1, -1}}
	assert.False(t, checkCrashFile(t, good, last, "good"))
	assert.True(t, checkCrashFile(t, append(good[:len(good):len(good)], "\n\n\n"...), last, "padded"))

	for name, bad := range map[string][]byte{
		"torn":      good[:len(good)-10],
		"missing":   good[:bytes.Index(good, []byte("{\"name\":\"job\""))],
		"duplicate": append(good[:len(good):len(good)], good[bytes.Index(good, []byte("{\"name\":\"job\"")):]...),
	} {
		assert.True(t, fails(func(ft testing.TB) { checkCrashFile(ft, bad, last, name) }), "%s must fail the check", name)
	}
}

// failRecorder is a testing.TB that records a failure instead of failing
// the test, so that a test can check that a checker catches bad input.
type failRecorder struct {
	testing.TB
	failed bool
}

func (f *failRecorder) Helper()               {}
func (f *failRecorder) Name() string          { return "failRecorder" }
func (f *failRecorder) Errorf(string, ...any) { f.failed = true }
func (f *failRecorder) Fatalf(string, ...any) { f.failed = true; runtime.Goexit() }
func (f *failRecorder) FailNow()              { f.failed = true; runtime.Goexit() }
func (f *failRecorder) Logf(string, ...any)   {}
func (f *failRecorder) Log(...any)            {}

// fails runs check on a failRecorder and reports whether it failed.
func fails(check func(testing.TB)) bool {
	f := &failRecorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		check(f)
	}()
	<-done
	return f.failed
}
