package tracer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"sync"
	"testing"

	"github.com/gotracer/tracer/internal/tracecheck"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// traceFiles returns the files in dir, oldest first: the rotated ones by
// sequence number, then the current one.
func traceFiles(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var rotated []string
	current := ""
	for _, e := range entries {
		if regexp.MustCompile(`^trace\.\d{6}\.json(\.gz)?$`).MatchString(e.Name()) {
			rotated = append(rotated, filepath.Join(dir, e.Name()))
		} else if regexp.MustCompile(`^trace\.json(\.gz)?$`).MatchString(e.Name()) {
			current = filepath.Join(dir, e.Name())
		}
	}
	sort.Strings(rotated)
	if current != "" {
		rotated = append(rotated, current)
	}
	return rotated
}

// rotationWorkload records from four named goroutines, each with a span
// open from start to end, flushing often so that the trace rotates many
// times. It returns how many X events it recorded.
func rotationWorkload(t *testing.T, tr *Tracer) int {
	const workers, rounds, spans = 4, 30, 40
	ends := make([]func(...Arg), workers)
	var wg, begun sync.WaitGroup
	start := make([]chan bool, workers)
	for w := range workers {
		start[w] = make(chan bool)
		wg.Add(1)
		begun.Add(1)
		go func() {
			defer wg.Done()
			tr.SetGoroutineName(fmt.Sprintf("worker %d", w))
			tr.SetGoroutineSortIndex(w)
			lifetime := tr.LongSpan("lifetime", Int("w", w))
			begun.Done()
			for round := range start[w] {
				if !round {
					break
				}
				for i := 0; i < spans; i++ {
					tr.Span("job", Int("w", w), Int("i", i), String("pad", "some text to fill the files"))()
				}
			}
			ends[w] = lifetime
			lifetime()
		}()
	}
	// Every lifetime span begins before the first job, so that the first
	// file holds them all, however the workers are scheduled.
	begun.Wait()
	for range rounds {
		for w := range workers {
			start[w] <- true
		}
		require.NoError(t, tr.Flush())
	}
	for w := range workers {
		close(start[w])
	}
	wg.Wait()
	return workers * rounds * spans
}

func TestRotation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		file     string
		maxSize  int64
		maxFiles int
	}{
		{"plain, all kept", "trace.json", 16 << 10, 0},
		{"plain, three kept", "trace.json", 16 << 10, 3},
		{"gzip, all kept", "trace.json.gz", 4 << 10, 0},
		{"gzip, two kept", "trace.json.gz", 4 << 10, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, tt.file)
			var errs []error
			tr, err := New(path, WithMaxFileSize(tt.maxSize), WithMaxFiles(tt.maxFiles), withClock(newTestClock()),
				WithErrorHandler(func(err error) { errs = append(errs, err) }))
			require.NoError(t, err)
			recorded := rotationWorkload(t, tr)
			require.NoError(t, tr.Close())
			st := tr.Stats()
			require.Zero(t, st.Dropped+st.SinkErrors+st.Lost, "errors: %v", errs)

			files := traceFiles(t, dir)
			entries, _ := os.ReadDir(dir)
			require.Len(t, entries, len(files), "nothing but trace files is left, not even a temporary one")
			if tt.maxFiles > 0 {
				require.Len(t, files, tt.maxFiles, "older files are removed")
			} else {
				require.Greater(t, len(files), 3, "the workload must rotate a few times")
			}
			assert.Equal(t, path, files[len(files)-1])

			var wall any
			xs, ended := 0, 0
			for i, file := range files {
				var evs []event
				if filepath.Ext(file) == ".gz" {
					evs = readClosedGzip(t, file)
				} else {
					evs = readClosed(t, file)
				}
				fi, err := os.Stat(file)
				require.NoError(t, err)
				if i < len(files)-1 {
					assert.Less(t, fi.Size(), 2*tt.maxSize+4<<10, "%s: a file passes its limit by at most one write", file)
				}

				// Each file stands alone: process metadata with the same
				// anchor, balanced tracks, named goroutines; nothing was
				// dropped, so no drop counter, and the process name ends it.
				require.Equal(t, "process_name", evs[0].Name, file)
				if wall == nil {
					wall = evs[0].Args["ts0_wall"]
				}
				assert.Equal(t, wall, evs[0].Args["ts0_wall"], file)
				assert.Empty(t, byName(evs, "tracer.dropped"), file)
				assert.Equal(t, "process_name", evs[len(evs)-1].Name, file)
				checkTracks(t, evs)
				names, sorts := map[uint64]string{}, map[uint64]bool{}
				for _, e := range byPhase(evs, "M") {
					switch e.Name {
					case "thread_name":
						names[e.Tid] = e.Args["name"].(string)
					case "thread_sort_index":
						sorts[e.Tid] = true
					}
				}
				lifetimes := 0
				for _, e := range evs {
					switch e.Ph {
					case "X", "B", "E":
						want := "worker"
						if w, ok := e.Args["w"]; ok { // E events carry no args
							want = fmt.Sprintf("worker %.0f", w)
						}
						assert.Contains(t, names[e.Tid], want, "%s: %s %s must have its goroutine named", file, e.Ph, e.Name)
						assert.True(t, sorts[e.Tid], "%s: goroutine %d must have its sort index", file, e.Tid)
					}
					if e.Ph == "B" && e.Name == "lifetime" {
						lifetimes++
					}
				}
				assert.Equal(t, 4-ended, lifetimes, "%s: the spans open across rotations begin again in every file", file)
				ended += len(byPhase(evs, "E"))
				xs += len(byPhase(evs, "X"))
			}
			if tt.maxFiles == 0 {
				assert.Equal(t, recorded, xs, "every span is in exactly one file")
			}
		})
	}
}

// TestRotationCloseNamesOpenSpans checks the end of the last file when a
// span is still open at Close on a goroutine whose track was named in an
// earlier file: Close writes the span as a B event, and the goroutine's
// name with it, before the array's end (it used to come after the "]",
// which left the file not JSON and chrome://tracing showing nothing).
func TestRotationCloseNamesOpenSpans(t *testing.T) {
	for _, file := range []string{"trace.json", "trace.json.gz"} {
		t.Run(file, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), file)
			var errs errorLog
			tr, err := New(path, WithMaxFileSize(4<<10), withClock(newTestClock()), WithErrorHandler(errs.handle))
			require.NoError(t, err)
			started, release, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
			go func() {
				defer close(done)
				tr.SetGoroutineName("still running")
				end := tr.Span("open at Close")
				close(started)
				<-release
				end()
			}()
			<-started
			require.NoError(t, tr.Flush()) // names the goroutine in the first file; its span is too young for a B
			// Rotate twice (gzip takes more spans to fill a file).
			for tries := 0; len(traceFiles(t, filepath.Dir(path))) < 3; tries++ {
				require.Less(t, tries, 1000, "the trace must rotate")
				for i := range 100 {
					tr.Span("work", Int("i", i), Int("x", i*7919*tries))()
				}
				require.NoError(t, tr.Flush())
			}
			require.NoError(t, tr.Close())
			close(release)
			<-done

			var evs []event
			if filepath.Ext(path) == ".gz" {
				evs = readClosedGzip(t, path)
			} else {
				evs = readClosed(t, path)
			}
			begins := byName(evs, "open at Close")
			require.Len(t, begins, 1)
			assert.Equal(t, "B", begins[0].Ph)
			named := false
			for _, e := range byName(evs, "thread_name") {
				named = named || e.Tid == begins[0].Tid && e.Args["name"] == "still running"
			}
			assert.True(t, named, "the goroutine of the B event must be named in its file")
			checkTracks(t, evs)
			assert.Len(t, errs.matching(`"open at Close"`), 1, "the span still open is reported")
		})
	}
}

// TestRotationNumbering checks that numbers go on from the files an
// earlier run left, that those count against WithMaxFiles, and that
// unrelated files are left alone.
func TestRotationNumbering(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"trace.000001.json", "trace.000003.json", "trace.000009.json.gz", "trace.x.json", "trace.json.000002", "other.000004.json", "000007.json"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("old"), 0o644))
	}
	tr, err := New(filepath.Join(dir, "trace.json"), WithMaxFileSize(minFileSize), WithMaxFiles(3), withClock(newTestClock()))
	require.NoError(t, err)
	for f := 0; f < 3; f++ { // each flush fills a file: the 2nd and 3rd start new ones
		for i := 0; i < 100; i++ {
			tr.Span("job", Int("i", i))()
		}
		require.NoError(t, tr.Flush())
	}
	require.NoError(t, tr.Close())
	var names []string
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.ElementsMatch(t, []string{
		"trace.json", "trace.000004.json", "trace.000005.json",
		"trace.000009.json.gz", "trace.x.json", "trace.json.000002", "other.000004.json",
		"000007.json", // not the trace's: kept, and its number not taken
	}, names)
}

func TestRotationOptions(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		opts []Option
		err  string
	}{
		{"too small", []Option{WithMaxFileSize(100)}, "max file size"},
		{"negative count", []Option{WithMaxFileSize(1 << 20), WithMaxFiles(-1)}, "negative"},
		{"count without size", []Option{WithMaxFiles(3)}, "needs WithMaxFileSize"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(filepath.Join(dir, "trace.json"), tt.opts...)
			assert.ErrorContains(t, err, tt.err)
		})
	}
	_, err := NewWithWriter(os.Stdout, WithMaxFileSize(1<<20))
	assert.ErrorIs(t, err, errRotateStream)
}

// TestDropsVisibleInEverySink drops events between flushes, as a stalled
// sink makes the tracer do, and checks that the drop counter tells the
// drops in every kind of file: at the top of each rotated file (the count
// so far) and at the very end.
func TestDropsVisibleInEverySink(t *testing.T) {
	for _, tt := range []struct {
		name string
		file string
		opts []Option
	}{
		{"plain", "trace.json", nil},
		{"gzip", "trace.json.gz", nil},
		{"rotated", "trace.json", []Option{WithMaxFileSize(minFileSize)}},
		{"rotated gzip", "trace.json.gz", []Option{WithMaxFileSize(minFileSize)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tr, err := New(filepath.Join(dir, tt.file), append(tt.opts, withClock(newTestClock()))...)
			require.NoError(t, err)
			for round := 0; round < 10; round++ {
				for i := 0; i < 200; i++ {
					tr.Instant("flood", Int("i", i))
				}
				tr.dropped.Add(uint64(round + 1))
				require.NoError(t, tr.Flush())
			}
			require.NoError(t, tr.Close())
			dropped := tr.Stats().Dropped
			require.Greater(t, dropped, uint64(0))

			files := traceFiles(t, dir)
			seen := 0.0
			for _, file := range files {
				var evs []event
				if filepath.Ext(file) == ".gz" {
					evs = readClosedGzip(t, file)
				} else {
					evs = readClosed(t, file)
				}
				for _, c := range byPhase(evs, "C") {
					require.Equal(t, "tracer.dropped", c.Name)
					require.GreaterOrEqual(t, c.Args["events"], seen, "%s: the count never goes back", file)
					seen = c.Args["events"].(float64)
				}
				if len(files) > 1 && file != files[0] {
					assert.Greater(t, byPhase(evs, "C")[0].Args["events"], 0.0, "%s starts with the drops so far", file)
				}
			}
			assert.EqualValues(t, dropped, seen, "the last counter is Stats().Dropped")
			if len(tt.opts) > 0 {
				assert.Greater(t, len(files), 1, "the trace must rotate")
			}
		})
	}
}

// TestRotationKeepsTheNewestEvents: whatever the limits, the file at the
// path is never left without events while the newest are elsewhere or
// deleted, neither by Close (whose last write may pass the size limit) nor
// by retiring old files. Issue 10 item 1: WithMaxFiles(1) and 1000 spans
// once left the path with the header alone and deleted the file that held
// every span.
func TestRotationKeepsTheNewestEvents(t *testing.T) {
	for _, tt := range []struct {
		maxFiles   int
		flushEvery int // spans between Flush calls; 0: none before Close
	}{
		{1, 0}, {1, 100}, {1, 7}, {2, 0}, {2, 100}, {3, 50},
	} {
		t.Run(fmt.Sprintf("files=%d/flush=%d", tt.maxFiles, tt.flushEvery), func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "trace.json")
			tr, err := New(path, WithMaxFileSize(minFileSize*16), WithMaxFiles(tt.maxFiles))
			require.NoError(t, err)
			const spans = 1000
			for i := range spans {
				tr.Span("job", Int("i", i), String("pad", "some text to fill the files"))()
				if tt.flushEvery > 0 && i%tt.flushEvery == tt.flushEvery-1 {
					require.NoError(t, tr.Flush())
				}
			}
			require.NoError(t, tr.Close())
			st := tr.Stats()
			assert.Zero(t, st.Dropped+st.Lost+st.Late)

			files := traceFiles(t, dir)
			require.NotEmpty(t, files)
			require.LessOrEqual(t, len(files), tt.maxFiles)
			require.Equal(t, path, files[len(files)-1], "the path holds the newest events")
			// The files left hold an unbroken run of the newest spans,
			// ending with the last one, which is at the path.
			var seen []int
			for _, f := range files {
				for _, e := range byName(readClosed(t, f), "job") {
					seen = append(seen, int(e.Args["i"].(float64)))
				}
			}
			require.NotEmpty(t, seen)
			atPath := byName(readClosed(t, path), "job")
			require.NotEmpty(t, atPath, "the file at the path holds events, not just a header")
			assert.Equal(t, float64(spans-1), atPath[len(atPath)-1].Args["i"])
			for k, i := range seen {
				require.Equal(t, spans-len(seen)+k, i, "files hold the newest spans, in order, none twice")
			}
		})
	}
}

// TestRotationKeepsItsPath is issue 31's sixth defect: between a
// rotation's rename of the current file and its open of the new one, the
// path was free, and a second tracer's New on it succeeded; the first then
// renamed its old file back over the second's, whose trace was lost. Path
// must never be free while a tracer writes it: a second tracer retrying
// New all through the rotations always gets ErrFileInUse, and every
// rotated file is the first tracer's, whole.
func TestRotationKeepsItsPath(t *testing.T) {
	t.Parallel()
	for _, file := range []string{"trace.json", "trace.json.gz"} {
		t.Run(file, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, file)
			tr, err := New(path, WithMaxFileSize(minFileSize), withClock(newTestClock()))
			require.NoError(t, err)
			stop := make(chan struct{})
			var tries, took int
			var other error
			done := make(chan struct{})
			go func() {
				defer close(done)
				for {
					select {
					case <-stop:
						return
					default:
					}
					tries++
					t2, err := New(path, WithProcessName("second"))
					if err == nil {
						took++
						t2.Close()
					} else if !errors.Is(err, ErrFileInUse) {
						other = err
					}
				}
			}()
			for round := range 400 {
				for i := range 40 {
					tr.Span("job", Int("round", round), Int("i", i), String("pad", "text to fill a file sooner"))()
				}
				require.NoError(t, tr.Flush())
			}
			close(stop)
			<-done
			require.NoError(t, tr.Close())
			require.NoError(t, other)
			assert.Zero(t, took, "a second tracer took the path %d times in %d tries", took, tries)

			files := traceFiles(t, dir)
			require.Greater(t, len(files), 20, "rotated often")
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			assert.Len(t, entries, len(files), "nothing but trace files is left")
			jobs := 0
			for _, f := range files {
				var evs []event
				if filepath.Ext(f) == ".gz" {
					evs = readClosedGzip(t, f)
				} else {
					evs = readClosed(t, f)
				}
				require.Equal(t, "process_name", evs[0].Name, f)
				assert.NotEqual(t, "second", evs[0].Args["name"], "%s is the first tracer's", f)
				jobs += len(byName(evs, "job"))
			}
			assert.Equal(t, 400*40, jobs, "every job in a file, once")
		})
	}
}

// TestRotationThroughSymlink is issue 31's eighth defect, second part:
// rotation through a symlink renamed the symlink itself, so the later
// files went to the link's directory. The files rotate beside the file
// the link points to, and the link still points to the newest.
func TestRotationThroughSymlink(t *testing.T) {
	linkDir, dataDir := t.TempDir(), t.TempDir()
	link := filepath.Join(linkDir, "trace.json")
	require.NoError(t, os.Symlink(filepath.Join(dataDir, "run.json"), link))
	tr, err := New(link, WithMaxFileSize(minFileSize), WithMaxFiles(3), withClock(newTestClock()))
	require.NoError(t, err)
	for round := range 20 {
		for i := range 40 {
			tr.Span("job", Int("round", round), Int("i", i))()
		}
		require.NoError(t, tr.Flush())
	}
	tr.Span("last")()
	require.NoError(t, tr.Close())

	fi, err := os.Lstat(link)
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode()&os.ModeSymlink, "the link is still a link")
	entries, err := os.ReadDir(linkDir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "only the link in its directory")
	var names []string
	entries, err = os.ReadDir(dataDir)
	require.NoError(t, err)
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.Len(t, names, 3, "WithMaxFiles in the target's directory: %v", names)
	assert.Contains(t, names, "run.json")
	assert.NotEmpty(t, byName(readClosed(t, link), "last"), "the link points to the newest file")
}

// TestRotationWithManySpansOpen: the B events a new file repeats for the
// spans open across its start, and the names of their goroutines, do not
// count toward its size. With more of them than a file holds (goroutines
// that exited inside spans they never ended), every batch started a new
// file, each repeating them all: the torture test's seed 37 wrote 31,443
// files in five seconds, and Close timed out.
func TestRotationWithManySpansOpen(t *testing.T) {
	dir := t.TempDir()
	const maxSize = 16 << 10
	tr, err := New(filepath.Join(dir, "trace.json"), WithMaxFileSize(maxSize), withClock(newTestClock()))
	require.NoError(t, err)
	for i := range 1000 { // about 80 KiB of B events and as much of names
		onGoroutine(func() { _ = tr.Span("leaked", Int("i", i)) })
	}
	ageAll(tr)
	require.NoError(t, tr.Flush())
	const jobs = 5000 // about 400 KiB of events
	for i := range jobs {
		tr.Span("job", Int("i", i))()
		if i%100 == 0 {
			require.NoError(t, tr.Flush())
		}
	}
	require.NoError(t, tr.Close())
	files := traceFiles(t, dir)
	assert.Less(t, len(files), 2*jobs*80/maxSize, "files of at least half the size limit of events each")
	seen, repeats := 0, 0
	for _, f := range files {
		evs := readClosed(t, f)
		checkTracks(t, evs)
		seen += len(byName(evs, "job"))
		repeats += len(byName(evs, "leaked"))
	}
	assert.Equal(t, jobs, seen)
	// Each file takes at least its head's worth of events: the B events
	// written again at the top of the files take no more than the events
	// (with a file every 16 KiB of events, 27,606 for 5,000 jobs).
	assert.LessOrEqual(t, repeats, jobs, "B events of the spans open, written again in every file")
}

// TestRotationAsyncsInEveryFile: an async operation open across a
// rotation has its "b" again at the top of the new file, so that its "e"
// there is matched (chrome://tracing warned of every "e" whose "b" was in
// an earlier file: the torture test's seed 92), nested operations on one
// id included.
func TestRotationAsyncsInEveryFile(t *testing.T) {
	dir := t.TempDir()
	tr, err := New(filepath.Join(dir, "trace.json"), WithMaxFileSize(minFileSize), withClock(newTestClock()))
	require.NoError(t, err)
	ops, parts := make([]Async, 20), make([]Async, 20)
	for i := range ops {
		ops[i] = tr.AsyncBegin("request", Category("http"), Int("i", i))
		parts[i] = ops[i].Begin("part") // on the same id: nested
	}
	for i := range 2000 {
		tr.Span("fill", Int("i", i))()
		if i%100 == 0 {
			require.NoError(t, tr.Flush())
		}
		if i%100 == 25 {
			parts[i/100].End()
		}
		if i%100 == 50 {
			ops[i/100].Instant("progress")
			ops[i/100].End(Int("status", i/100))
		}
	}
	require.NoError(t, tr.Close())
	files := traceFiles(t, dir)
	require.Greater(t, len(files), 10, "rotated")
	ended := map[float64]int{}
	for _, f := range files {
		evs := readClosed(t, f)
		// Every b with its e, every n within: an operation open when a
		// file ends ends there, and begins again in the next.
		for _, op := range tracecheck.Async(t, evs) {
			if s, ok := op.End.Args["status"].(float64); ok {
				ended[s]++
			}
		}
	}
	assert.Len(t, ended, 20, "every operation's own end, with its args")
	for s, n := range ended {
		assert.Equal(t, 1, n, "operation %v ended once", s)
	}
	importInHeavyRun(t, files...)
}
