package tracer

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gotracer/tracer/internal/tracecheck"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The viewers are the judges of the files: this test writes every kind of
// file the tracer writes and loads each in the two real importers,
// Perfetto's trace_processor and chrome://tracing's catapult, as
// ../shared/importers provides them (run its setup once per machine; CI
// does). It skips when they are not set up, except in CI.

// requireImporters skips the test when the importers are not set up, or
// fails it under CI, where they must be.
func requireImporters(t *testing.T) {
	dir := os.Getenv("TRACER_IMPORTERS")
	if dir == "" {
		dir = filepath.Join("..", "shared", "importers")
	}
	_, err1 := os.Stat(filepath.Join(dir, "node_modules", "playwright-core"))
	_, err2 := exec.LookPath("chromium")
	if err1 != nil || err2 != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the importers are not set up in %s (run its setup): %v %v", dir, err1, err2)
		}
		t.Skipf("the importers are not set up in %s: run %s/setup to check files with them", dir, dir)
	}
}

// importerReport is the part of an importer's report the test reads.
type importerReport struct {
	File         string   `json:"file"`
	OK           bool     `json:"ok"`
	Error        any      `json:"error"`
	Warnings     []any    `json:"warnings"`     // catapult
	ImportErrors []any    `json:"importErrors"` // perfetto
	Totals       struct { // both, with their own names
		Slices        int `json:"slices"`
		ThreadSlices  int `json:"thread_slices"`
		AsyncSlices   int `json:"asyncSlices"`
		AsyncSub      int `json:"asyncSubSlices"`
		CounterTracks int `json:"counter_tracks"`
		Counters      int `json:"counters"`
		Flows         int `json:"flows"`
	} `json:"totals"`
	SliceTracks []struct {
		TrackType  string `json:"track_type"`
		Tid        uint64 `json:"tid"`
		Unfinished int    `json:"unfinished"`
		MaxDepth   int    `json:"max_depth"`
	} `json:"slice_tracks"` // perfetto
	Processes []struct {
		Threads []struct {
			Tid      uint64 `json:"tid"`
			MaxDepth int    `json:"maxDepth"`
		} `json:"threads"`
	} `json:"processes"` // catapult's have threads
}

// kinds summarises importer messages as their types (or first words) and
// how often each came.
func kinds(msgs []any) map[string]int {
	k := map[string]int{}
	for _, m := range msgs {
		if mm, ok := m.(map[string]any); ok {
			if typ, ok := mm["type"].(string); ok { // catapult
				k[typ]++
				continue
			}
			if name, ok := mm["name"].(string); ok { // perfetto's stats
				k[name]++
				continue
			}
			k[fmt.Sprint(mm)]++
			continue
		}
		k[fmt.Sprint(m)]++
	}
	return k
}

// loadReports loads files in both importers (tracecheck.Load) and returns
// their reports by file: perfetto's, then catapult's.
func loadReports(t *testing.T, files ...string) (perfetto, catapult map[string]importerReport) {
	t.Helper()
	p, c := tracecheck.Load(t, files...)
	byFile := func(reps []tracecheck.Report) map[string]importerReport {
		out := map[string]importerReport{}
		for _, r := range reps {
			data, err := json.Marshal(r)
			require.NoError(t, err)
			var typed importerReport
			require.NoError(t, json.Unmarshal(data, &typed))
			out[typed.File] = typed
		}
		return out
	}
	return byFile(p), byFile(c)
}

// spin waits d without sleeping.
func spin(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
	}
}

// recordEveryKind records every kind of event on tr, from several
// goroutines, and a span left open.
//
// Successive spans are kept at least 2µs apart: catapult nests slices
// after rounding their ends to the microsecond (TimedEvent.bounds with
// the ms display mode), so back-to-back siblings less than a microsecond
// apart are drawn nested, and a flow bound to them is refused. That is a
// limit of the viewer with every JSON trace (the array form cannot set
// displayTimeUnit), not something this test checks.
func recordEveryKind(tr *Tracer) (open func(...Arg)) {
	tr.SetGoroutineName("main")
	tr.SetGoroutineSortIndex(-1)
	cat := Category("importers")
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tr.SetGoroutineName("worker")
			for i := range 200 {
				end := tr.Span("job", Int("w", w), Int("i", i), String("s", "a \"quoted\" \x01 value"))
				job := tr.AsyncBegin("request", cat, Int("i", i))
				child := job.Begin("phase")
				// Children that overlap, and one nested in one of them.
				a, b := job.Begin("phase a"), job.Begin("phase b")
				b.Begin("inner").End()
				a.End()
				b.End()
				f := tr.FlowBegin("handoff", cat)
				tr.Span("step", cat)()
				tr.LongSpan("eager")()
				tr.Instant("mark", Float64("nan", 0))
				tr.Counter("queue", Int("depth", i), Float64("load", float64(i)/7), Uint64("total", math.MaxUint64-uint64(i)))
				tr.Counter("refused", String("not a number", "x")) // Perfetto would refuse the file
				child.Instant("progress")
				child.End()
				f.End()
				job.End(Bool("ok", true))
				tr.AsyncBegin("no category", Int("i", i)).End() // chrome://tracing needs a "cat"
				// The same id in two scopes, overlapping: two operations.
				db := tr.AsyncBeginID(uint64(w*1000+i), "query", cat, Namespace("db"))
				http := tr.AsyncBeginID(uint64(w*1000+i), "call", cat, Namespace("http"))
				db.End()
				http.End()
				end()
				spin(2 * time.Microsecond)
			}
		}()
	}
	wg.Wait()
	tr.InstantProcess("process mark")
	tr.InstantGlobal("global mark")
	return tr.Span("still open when the trace ends")
}

// fileCounts is what a file holds, counted by parsing it ourselves.
type fileCounts struct{ threadSlices, asyncBegins int }

func countEvents(t *testing.T, data []byte) fileCounts {
	var c fileCounts
	for _, e := range tracecheck.ReadBytes(t, data) {
		switch e.Ph {
		case "X", "B":
			c.threadSlices++
		case "i":
			if e.S == "t" { // drawn as a slice of no duration on its track
				c.threadSlices++
			}
		case "b", "n": // an async slice, or an instant drawn as a sub-slice
			c.asyncBegins++
		}
	}
	return c
}

func readMaybeGzip(t *testing.T, path string) []byte {
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	if !strings.HasSuffix(path, ".gz") {
		return data
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	require.NoError(t, err)
	raw, err := io.ReadAll(zr)
	require.NoError(t, err)
	return raw
}

// TestFilesLoadInBothViewers writes a trace in every form the tracer
// writes (closed and cut off by a crash, plain and gzip, rotated, a
// flight recording, a stream) and checks that both importers load each
// without an error or warning and build what the file holds: every span
// a slice on its goroutine's one track (an overflow track means spans
// that overlap), every async operation a slice, the counters.
func TestFilesLoadInBothViewers(t *testing.T) {
	t.Parallel() // its own tracers, child processes or importers: it mostly waits
	requireImporters(t)
	out := t.TempDir()
	var files []string
	crashOnly := map[string]bool{} // catapult reads the first gzip member only
	// A rotated file holds part of the timeline: an async operation or a
	// flow that crosses its edge is unmatched in it. These are the
	// warnings that cut causes, and the only ones allowed. (A flight
	// recording keeps pairs whole: see flightpairs.go.)
	cutWarnings := map[string]bool{"async_slice_parse_error": true, "flow_slice_start_error": true,
		"flow_slice_ordering_error": true, "flow_slice_end_error": true, "flow_no_enclosing_slice": true,
		"flow_end_without_start": true, "flow_step_without_start": true}
	partial := func(f string) bool {
		b := filepath.Base(f)
		return strings.HasPrefix(b, "rotated")
	}

	write := func(name string, opts ...Option) {
		path := filepath.Join(out, name)
		tr, err := New(path, append(opts, withClock(newTestClock()))...)
		require.NoError(t, err)
		open := recordEveryKind(tr)
		require.NoError(t, tr.Flush())
		// What a crash leaves: the file as it is between flushes.
		cut := filepath.Join(out, "crashed-"+name)
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(cut, data, 0o644))
		if strings.HasSuffix(name, ".gz") {
			crashOnly[cut] = true
		}
		open()
		require.NoError(t, tr.Close())
		matches, err := filepath.Glob(filepath.Join(out, strings.TrimSuffix(strings.TrimSuffix(name, ".gz"), ".json")+"*"))
		require.NoError(t, err)
		files = append(files, matches...)
	}
	write("plain.json")
	write("gzip.json.gz")
	write("rotated.json", WithMaxFileSize(64<<10))
	files = append(files, filepath.Join(out, "crashed-plain.json"), filepath.Join(out, "crashed-gzip.json.gz"))

	r, err := NewFlightRecorder(FlightRecorderConfig{MaxEvents: 2000})
	require.NoError(t, err)
	recordEveryKind(r.Tracer())
	for _, name := range []string{"flight.json", "flight.json.gz"} {
		require.NoError(t, r.WriteFile(filepath.Join(out, name)))
		files = append(files, filepath.Join(out, name))
	}
	require.NoError(t, r.Close())

	var stream bytes.Buffer
	tr, err := NewWithWriter(&stream)
	require.NoError(t, err)
	recordEveryKind(tr)()
	require.NoError(t, tr.Close())
	streamPath := filepath.Join(out, "stream.json")
	require.NoError(t, os.WriteFile(streamPath, stream.Bytes(), 0o644))
	files = append(files, streamPath)
	require.GreaterOrEqual(t, len(files), 10)

	perfetto, catapult := loadReports(t, files...)
	// unexpected returns an importer's messages about file f by kind, less
	// those a cut may cause in a file that holds part of the timeline.
	unexpected := func(f string, msgs []any) map[string]int {
		k := kinds(msgs)
		if partial(f) {
			for w := range cutWarnings {
				delete(k, w)
			}
		}
		return k
	}
	for _, f := range files {
		want := countEvents(t, readMaybeGzip(t, f))
		p, c := perfetto[f], catapult[f]
		name := filepath.Base(f)
		if assert.True(t, p.OK, "%s: perfetto: %v", name, p.Error) {
			assert.Empty(t, unexpected(f, p.ImportErrors), "%s: perfetto import errors", name)
			assert.Equal(t, want.threadSlices, p.Totals.ThreadSlices, "%s: perfetto thread slices", name)
			tracks := map[uint64]int{}
			for _, st := range p.SliceTracks {
				if st.TrackType == "thread_execution" {
					tracks[st.Tid]++
				}
			}
			for tid, n := range tracks {
				assert.Equal(t, 1, n, "%s: goroutine %d has overflow tracks: its spans overlap", name, tid)
			}
			if bytes.Contains(readMaybeGzip(t, f), []byte(`"ph":"C"`)) {
				// The drop counter appears only once something was dropped.
				assert.Positive(t, p.Totals.CounterTracks, "%s: perfetto counters", name)
			}
		}
		if crashOnly[f] {
			continue
		}
		if assert.True(t, c.OK, "%s: catapult: %v", name, c.Error) {
			assert.Empty(t, unexpected(f, c.Warnings), "%s: catapult warnings", name)
			assert.Equal(t, want.threadSlices, c.Totals.Slices, "%s: catapult slices", name)
			if !partial(f) {
				assert.Equal(t, want.asyncBegins, c.Totals.AsyncSlices+c.Totals.AsyncSub, "%s: catapult async slices", name)
			}
		}
	}
}

// TestSubMicrosecondSiblingsAreFlat is issue 10 item 11: ten spans of well
// under a microsecond each, back to back in a parent, are siblings in both
// viewers. chrome://tracing draws them as a staircase in its default unit
// (see objectHead); a closed plain file, and a closed gzip file, whose
// members Close joins, set the unit it draws them right in.
func TestSubMicrosecondSiblingsAreFlat(t *testing.T) {
	heavy(t) // two runs of the importers for one file
	requireImporters(t)
	if raceEnabled {
		t.Skip("spans take microseconds under the race detector")
	}
	tids := map[string]uint64{}
	var paths []string
	for _, gz := range []bool{false, true} {
		var opts []Option
		if gz {
			opts = append(opts, WithGzip(DefaultGzipLevel))
		}
		tr, path := newTestTracer(t, opts...)
		for range 1000 {
			tr.Span("warm-up")() // the chain, its chunks and tokens
		}
		func() {
			defer tr.Span("parent")()
			for range 10 {
				tr.Span("sibling")()
			}
		}()
		require.NoError(t, tr.Close())
		var evs []event
		if gz {
			evs = readClosedGzip(t, path)
		} else {
			evs = readClosed(t, path)
		}
		siblings := byName(evs, "sibling")
		require.Len(t, siblings, 10)
		short := 0
		for _, e := range siblings {
			if e.Dur < 1 {
				short++
			}
		}
		require.GreaterOrEqual(t, short, 5, "the premise: sub-microsecond spans")
		tids[path] = siblings[0].Tid
		paths = append(paths, path)
	}

	pfs, cats := loadReports(t, paths...)
	for _, path := range paths {
		cat, pf := cats[path], pfs[path]
		require.True(t, cat.OK, "%s: %v", path, cat.Error)
		require.True(t, pf.OK, "%s: %v", path, pf.Error)
		catDepth, pfDepth := -1, -1
		for _, p := range cat.Processes {
			for _, th := range p.Threads {
				if th.Tid == tids[path] {
					catDepth = th.MaxDepth
				}
			}
		}
		for _, tk := range pf.SliceTracks {
			if tk.Tid == tids[path] && tk.TrackType == "thread_execution" {
				pfDepth = tk.MaxDepth
			}
		}
		assert.Equal(t, 1, pfDepth, "%s: Perfetto: the siblings one level under the parent", path)
		assert.Equal(t, 1, catDepth, "%s: chrome://tracing: the siblings one level under the parent, not a staircase", path)
	}
}
