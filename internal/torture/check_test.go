//go:build linux

package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The checkers must catch what they check for: each is given files and
// reports planted with the fault it looks for, and a good one.

const (
	meta   = `{"name":"process_name","ph":"M","pid":7,"tid":0,"args":{"name":"t"}}`
	padded = "                                      [\n" // a plain file as the tracer starts it
)

// closedPlain returns a plain trace file closed by Close.
func closedPlain(events ...string) string {
	return objectHead + "[\n" + meta + ",\n" + strings.Join(append(events, meta), ",\n") + "\n]\n}\n"
}

// cut returns a plain trace file as a kill leaves it.
func cut(events ...string) string {
	var b strings.Builder
	b.WriteString(padded + meta + ",\n")
	for _, e := range events {
		b.WriteString(e + ",\n")
	}
	return b.String()
}

func x(name string, ts, dur string, id int64) string {
	return fmt.Sprintf(`{"name":%q,"ph":"X","ts":%s,"dur":%s,"pid":7,"tid":1,"args":{"id":%d}}`, name, ts, dur, id)
}

func be(ph, name, ts string, id int64) string {
	if ph == "E" {
		return fmt.Sprintf(`{"name":%q,"ph":"E","ts":%s,"pid":7,"tid":1}`, name, ts)
	}
	return fmt.Sprintf(`{"name":%q,"ph":%q,"ts":%s,"pid":7,"tid":1,"args":{"id":%d}}`, name, ph, ts, id)
}

func writeFile(t *testing.T, name, content string) string {
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	return path
}

func gzipped(t *testing.T, content string, cutTail int) string {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(content))
	zw.Close()
	return writeFile(t, "t.json.gz", string(b.Bytes()[:b.Len()-cutTail]))
}

func TestCheckFileCatchesPlantedFaults(t *testing.T) {
	id := func(seq uint64) int64 { return makeID(0, 1, clSpan, seq) }
	good := []string{
		be("B", "outer", "1.000", id(0)),
		x("inner", "2.000", "1.000", id(1)),
		x("inner", "3.000", "0.500", id(2)),
		be("E", "outer", "5.000", 0),
	}
	closed := fileRules{mustClose: true, asyncPair: true}
	open := fileRules{asyncPair: true}
	for _, tc := range []struct {
		name    string
		path    func(t *testing.T) string
		rules   fileRules
		problem string // "" for none
	}{
		{"closed", func(t *testing.T) string { return writeFile(t, "t.json", closedPlain(good...)) }, closed, ""},
		{"cut by a kill", func(t *testing.T) string { return writeFile(t, "t.json", cut(good...)) }, open, ""},
		{"cut, yet closed by Close", func(t *testing.T) string { return writeFile(t, "t.json", cut(good...)) }, closed, "not strict JSON"},
		{"E before its B", func(t *testing.T) string {
			return writeFile(t, "t.json", closedPlain(be("E", "outer", "1.000", 0), be("B", "outer", "2.000", id(0))))
		}, closed, "without a B before it"},
		{"E ends another B", func(t *testing.T) string {
			return writeFile(t, "t.json", closedPlain(be("B", "outer", "1.000", id(0)), be("E", "other", "2.000", 0)))
		}, closed, `ends B "outer"`},
		{"overlapping X", func(t *testing.T) string {
			return writeFile(t, "t.json", closedPlain(x("a", "1.000", "2.000", id(0)), x("b", "2.000", "2.000", id(1))))
		}, closed, "overlaps"},
		{"X past its B's E", func(t *testing.T) string {
			return writeFile(t, "t.json", closedPlain(be("B", "outer", "1.000", id(0)), x("inner", "2.000", "9.000", id(1)), be("E", "outer", "5.000", 0)))
		}, closed, "overlaps"},
		{"the head over the padding (issue 31, defect 2)", func(t *testing.T) string {
			return writeFile(t, "t.json", objectHead+good[1]+",\n"+good[2]+"\n]\n}\n")
		}, open, "not strict JSON"},
		{"torn last event", func(t *testing.T) string {
			return writeFile(t, "t.json", cut(good...)+`{"name":"inner","ph":"X","ts":9.0`)
		}, open, "ends inside an event"},
		{"empty", func(t *testing.T) string { return writeFile(t, "t.json", "") }, open, "empty"},
		{"async e without its b", func(t *testing.T) string {
			return writeFile(t, "t.json", closedPlain(`{"name":"q","cat":"","ph":"e","ts":1.000,"pid":7,"tid":1,"id2":{"local":"0x1"}}`))
		}, closed, "without its b"},
		{"a tee's trace ended by Stop, a B left open", func(t *testing.T) string {
			return writeFile(t, "t.json", closedPlain(good[:3]...))
		}, fileRules{mustClose: true, asyncPair: true, allEnded: true}, `B "outer" still open at the tee's end`},
		{"a tee's trace ended by Stop, a b left open", func(t *testing.T) string {
			return writeFile(t, "t.json", closedPlain(append(good, `{"name":"q","cat":"c","ph":"b","ts":1.000,"pid":7,"tid":1,"id2":{"local":"0x1"}}`)...))
		}, fileRules{mustClose: true, asyncPair: true, allEnded: true}, `async "q" (id`},
		{"gzip, closed", func(t *testing.T) string { return gzipped(t, "[\n"+meta+",\n"+strings.Join(good, ",\n")+"\n]\n", 0) }, closed, ""},
		{"gzip, a member cut short", func(t *testing.T) string { return gzipped(t, "[\n"+meta+",\n"+strings.Join(good, ",\n")+",\n", 6) }, open, "cut short"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ids []int64
			fr := checkFile(tc.path(t), tc.rules, func(pid int, id int64, b bool) { ids = append(ids, id) })
			if tc.problem == "" {
				require.Empty(t, fr.problems)
				require.Len(t, ids, 3, "the ids of X and B events, not of E")
				return
			}
			require.NotEmpty(t, fr.problems, "the checker must find it")
			assert.Contains(t, strings.Join(fr.problems, "\n"), tc.problem)
		})
	}
}

func TestNestingAllowsOpenSpans(t *testing.T) {
	names := []string{"worker", "job"}
	require.Empty(t, nesting([]slice{{0, forever, 0}, {10, 20, 1}, {30, 40, 1}}, names))
	require.Empty(t, nesting([]slice{{0, 100, 0}, {10, 101, 1}}, names), "a nanosecond of rounding")
	require.Contains(t, nesting([]slice{{0, 100, 0}, {10, 102, 1}}, names), "overlaps")
	require.Contains(t, nesting([]slice{{50, forever, 0}, {10, 60, 1}}, names), "overlaps", "a B still open that starts inside an X that ends after it")
}

func TestIDSetFindsEventsWrittenTwice(t *testing.T) {
	r := &run{}
	id := makeID(0, 3, clSpan, 5)
	s := newIDSet(r)
	s.file++
	require.Empty(t, s.add(7, id, false, false))
	require.Contains(t, s.add(7, id, false, false), "written twice (in one file)")

	s = newIDSet(r)
	s.file++
	require.Empty(t, s.add(7, id, true, true))
	s.file++
	require.Empty(t, s.add(7, id, true, true), "rotation writes a B open across it again at the top of the next file")
	require.Contains(t, s.add(7, id, true, true), "in one file", "but once a file")

	s = newIDSet(r)
	s.file++
	require.Empty(t, s.add(7, id, true, false))
	s.file++
	require.Contains(t, s.add(7, id, true, false), "in two files", "without rotation, never")

	s = newIDSet(r)
	s.file++
	require.Empty(t, s.add(7, id, false, true))
	s.file++
	require.Contains(t, s.add(7, id, true, true), "written twice", "an X, then a B")

	require.True(t, s.has(streamKey{7, 0, 3, clSpan}, 5))
	require.False(t, s.has(streamKey{7, 0, 3, clSpan}, 4))
	require.Equal(t, uint64(1), s.found(7, 0)[clSpan])

}

// testRun returns a run of a one-tracer config whose child reported res.
func testRun(res *childResult) *run {
	c := &Config{Procs: 2, Tracers: []TracerConfig{{Sink: sinkFile, Flush: 100 * time.Millisecond, StopTimeout: 5 * time.Second,
		Shapes: []Shape{{Kind: shapePool, N: 4, Depth: 1}}}}}
	return &run{o: &options{duration: 5 * time.Second}, cfg: c, result: res, readyAt: 1}
}

func TestAccountingCatchesMissingEvents(t *testing.T) {
	counts := map[int][numClasses]uint64{0: {clSpan: 10}, 1: {clInstant: 2}}
	for _, tc := range []struct {
		name  string
		seen  []int64
		stats map[string]uint64
		fail  string
	}{
		{"all there", ids(0, clSpan, 10, 1, clInstant, 2), nil, ""},
		{"missing, uncounted", ids(0, clSpan, 7, 1, clInstant, 2), nil, "3 events missing without being counted"},
		{"missing, counted", ids(0, clSpan, 7, 1, clInstant, 2), map[string]uint64{"Lost": 2, "Late": 1}, ""},
		{"missing, counted as deleted", ids(0, clSpan, 7, 1, clInstant, 2), map[string]uint64{"Deleted": 3}, ""},
		{"never recorded", ids(0, clSpan, 11, 1, clInstant, 2), nil, "never recorded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := testRun(&childResult{Pid: 7, Tracers: []tracerResult{{Counts: counts, Stats: tc.stats}}})
			s := newIDSet(r)
			s.file++
			for _, id := range tc.seen {
				require.Empty(t, s.add(7, id, false, false))
			}
			r.accounting(s)
			if tc.fail == "" {
				require.Empty(t, r.fails)
				return
			}
			require.NotEmpty(t, r.fails)
			assert.Contains(t, r.fails[0].detail, tc.fail)
		})
	}
}

// ids returns the ids of the first n0 events of worker 0's class c0 and
// n1 of worker 1's class c1.
func ids(w0 int, c0 class, n0 uint64, w1 int, c1 class, n1 uint64) []int64 {
	var out []int64
	for s := range n0 {
		out = append(out, makeID(0, w0, c0, s))
	}
	for s := range n1 {
		out = append(out, makeID(0, w1, c1, s))
	}
	return out
}

func TestDurabilityCatchesEventsLostBeforeAKill(t *testing.T) {
	kill := time.Unix(100, 0).UnixNano()
	sec := int64(time.Second)
	for _, tc := range []struct {
		name    string
		seen    uint64
		flushes map[flushCall]int64 // the workload's Flush calls
		fail    bool
	}{
		{"everything from before the kill's grace", 8, nil, false},
		{"one missing", 7, nil, true},
		{"one missing, a Flush took 4s", 7, map[flushCall]int64{{0, kill - 6*sec}: kill - 2*sec}, false},
		{"one missing, a Flush not done for 4s at the kill", 7, map[flushCall]int64{{0, kill - 4*sec}: 0}, false},
		{"one missing, a long Flush of another tracer", 7, map[flushCall]int64{{1, kill - 6*sec}: kill - 2*sec}, true},
		{"one missing, a long Flush begun after the kill", 7, map[flushCall]int64{{0, kill + sec}: kill + 6*sec}, true},
		{"one missing, Flushes that took 1s", 7, map[flushCall]int64{{0, kill - 5*sec}: kill - 4*sec, {0, kill - sec}: 0}, true},
		// The 20 spans recorded 10ms before the kill are in the files
		// if a Flush that began after them returned nil before it.
		{"the newest missing, a Flush returned nil", 20, map[flushCall]int64{{0, kill - 5*int64(time.Millisecond)}: kill - int64(time.Millisecond)}, false},
		{"one of the newest missing, a Flush returned nil", 19, map[flushCall]int64{{0, kill - 5*int64(time.Millisecond)}: kill - int64(time.Millisecond)}, true},
		{"one of the newest missing, a Flush returned after the kill", 19, map[flushCall]int64{{0, kill - 5*int64(time.Millisecond)}: kill + int64(time.Millisecond)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := testRun(nil)
			r.pid, r.killedAt = 7, kill
			r.rep.flushes = tc.flushes
			// 8 spans recorded 3s before the kill, 12 more 10ms before it.
			r.rep.marks = []mark{
				{at: kill - int64(3*time.Second), tracer: 0, worker: 0, counts: [numClasses]uint64{clSpan: 8}},
				{at: kill - int64(10*time.Millisecond), tracer: 0, worker: 0, counts: [numClasses]uint64{clSpan: 20}},
			}
			s := newIDSet(r)
			s.file++
			for _, id := range ids(0, clSpan, tc.seen, 1, clSpan, 0) {
				s.add(7, id, false, false)
			}
			r.durability(s)
			if !tc.fail {
				require.Empty(t, r.fails)
				return
			}
			require.Len(t, r.fails, 1)
			must := "1 of the 8 events"
			if tc.seen >= 8 { // the newest spans had to be there
				must = "1 of the 20 events"
			}
			assert.Contains(t, r.fails[0].detail, must)
		})
	}
}

func TestMemoryCheckCatchesALeak(t *testing.T) {
	flat := func(i int) uint64 { return 20 << 20 }
	leaky := func(i int) uint64 { return 20<<20 + uint64(i)*48*60000 } // 48 bytes a span started
	for _, tc := range []struct {
		name string
		live func(int) uint64
		idle uint64
		fail string
	}{
		{"flat", flat, 6 << 20, ""},
		{"grows with the spans started", leaky, 6 << 20, "grew"},
		{"holds it once idle", flat, 200 << 20, "idle bound"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := testRun(&childResult{BaseHeap: 4 << 20, IdleHeap: tc.idle})
			r.rep.samples = append(r.rep.samples, sample{phase: "base", live: 4 << 20})
			for i := range 60 { // 6s of samples, 60,000 spans each
				r.rep.samples = append(r.rep.samples, sample{phase: "run", live: tc.live(i), started: uint64(i) * 60000})
			}
			r.checkMemory()
			if tc.fail == "" {
				require.Empty(t, r.fails)
				return
			}
			require.NotEmpty(t, r.fails)
			var all []string
			for _, f := range r.fails {
				all = append(all, f.detail)
			}
			assert.Contains(t, strings.Join(all, "\n"), tc.fail)
		})
	}
}

func TestMemoryBoundCountsSpansHeldNotStarted(t *testing.T) {
	c := testRun(nil).cfg
	short, _ := memoryBound(c, time.Second, false)
	long, _ := memoryBound(c, time.Hour, false)
	require.Equal(t, short, long, "a pool's spans held do not grow with time")
	c.Tracers[0].Shapes = append(c.Tracers[0].Shapes, Shape{Kind: shapeLeaker, N: 1, Depth: 1, Rate: 100})
	short, _ = memoryBound(c, time.Second, false)
	long, _ = memoryBound(c, time.Minute, false)
	require.Greater(t, long, short, "spans never ended are held until Close")
	idle, _ := memoryBound(c, time.Second, true)
	require.Less(t, idle, short, "idle, the buffers hold a chunk a P")
}

func TestImportProblemsFindsOverflowTracks(t *testing.T) {
	rep := map[string]any{"ok": true, "importErrors": []any{}, "slice_tracks": []any{
		map[string]any{"track_type": "thread_execution", "pid": 7.0, "tid": 1.0},
		map[string]any{"track_type": "thread_execution", "pid": 7.0, "tid": 2.0},
	}}
	require.Empty(t, importProblems(rep))
	rep["slice_tracks"] = append(rep["slice_tracks"].([]any), map[string]any{"track_type": "thread_execution", "pid": 7.0, "tid": 1.0})
	require.Contains(t, strings.Join(importProblems(rep), "\n"), "overflow")
	require.Contains(t, strings.Join(importProblems(map[string]any{"ok": false, "error": "x"}), "\n"), "refused")
	require.Contains(t, strings.Join(importProblems(map[string]any{"ok": true, "warnings": []any{"w"}}), "\n"), "warnings")
}

func TestWatchReportsTheStalledGoroutine(t *testing.T) {
	var w watch
	busy, idle := w.add("busy"), w.add("idle")
	busy.tick()
	idle.idle()
	w.stalled() // first look: remembers the ticks
	for _, p := range w.slots {
		p.seenTime -= int64(time.Minute)
	}
	name, d := w.stalled()
	require.Equal(t, "busy", name)
	require.GreaterOrEqual(t, d, time.Minute)
	busy.tick()
	_, d = w.stalled()
	require.Less(t, d, time.Minute, "a tick is progress")
}

func TestSummarizeDumpNamesTheHook(t *testing.T) {
	dump := `goroutine 1 [select]:
github.com/gotracer/tracer.(*recorder).waitForChunk(0x1)
	/x/assist.go:99
main.main()

goroutine 7 [select]:
github.com/gotracer/tracer.(*recorder).waitForChunk(0x1)
	/x/assist.go:99
github.com/gotracer/tracer.(*Tracer).Instant(...)
main.(*hookStringer).String(0x7)
github.com/gotracer/tracer.callString({0x1})

goroutine 9 [chan receive]:
main.idle()
`
	sum, ex := summarizeDump(dump)
	require.Contains(t, sum, "1 in (*recorder).waitForChunk in a String")
	require.True(t, strings.HasSuffix(sum, ", 1 in (*recorder).waitForChunk"), sum)
	require.Contains(t, ex, "goroutine 7", "the example is the one in user code the tracer runs")
}

func TestPerfettoDepthLimitIsNoFailureForDeepRecursion(t *testing.T) {
	rep := map[string]any{"ok": true, "importErrors": []any{
		map[string]any{"name": "slice_max_depth_exceeded", "severity": "error"},
		map[string]any{"name": "misplaced_end_event", "severity": "data_loss"},
	}}
	require.True(t, dropImportError(rep, "slice_max_depth_exceeded"))
	require.False(t, dropImportError(rep, "slice_max_depth_exceeded"))
	p := importProblems(rep)
	require.Len(t, p, 1)
	require.Contains(t, p[0], "misplaced_end_event", "other import errors still fail the run")
	c := &Config{Tracers: []TracerConfig{{Shapes: []Shape{{Kind: shapeRecursion, Depth: 3000}}}}}
	require.GreaterOrEqual(t, deepest(c), perfettoMaxDepth)
}

func TestReportsRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	rep := &reporter{w: &buf}
	l := newLedger(2, 4, false)
	w := l.newWorker("w", nil)
	w.id(clSpan)
	w.id(clSpan)
	w.id(clInstant)
	rep.event("ready")
	rep.line('H', "%d %d %s", 5, int64(time.Second), "t0 pool0 worker 3")
	rep.line('M', "%d run %d %d", 6, 1<<20, 1000)
	rep.mark(w)
	rep.mark(w) // nothing new: no line
	rep.fail("a\nb")
	rep.line('R', "%s", `{"Pid":7}`)

	var rs reports
	rs.read(&buf, io.Discard)
	require.NotZero(t, rs.event("ready"))
	require.Equal(t, time.Second, rs.stall)
	require.Equal(t, "t0 pool0 worker 3", rs.stallName)
	require.Equal(t, []sample{{at: 6, phase: "run", live: 1 << 20, started: 1000}}, rs.samples)
	require.Len(t, rs.marks, 1)
	require.Equal(t, 2, rs.marks[0].tracer)
	require.Equal(t, uint64(2), rs.marks[0].counts[clSpan])
	require.Equal(t, uint64(1), rs.marks[0].counts[clInstant])
	require.Equal(t, []string{"a b"}, rs.fails)
	require.JSONEq(t, `{"Pid":7}`, string(rs.result))
}

func TestPruneMarksKeepsWhatDurabilityNeeds(t *testing.T) {
	now := int64(time.Hour)
	var rs reports
	for i := range 100 { // one mark a second for 100s, two workers
		at := now - int64(100-i)*int64(time.Second)
		rs.marks = append(rs.marks, mark{at: at, worker: i % 2, counts: [numClasses]uint64{clSpan: uint64(i)}})
	}
	rs.pruneMarks(now)
	require.Len(t, rs.marks, 2+30, "each worker's newest old mark, and the last 30s whole")
	newest := map[int]uint64{}
	for _, m := range rs.marks {
		if m.at < now-int64(markWindow) {
			newest[m.worker] = max(newest[m.worker], m.counts[clSpan])
		}
	}
	require.Equal(t, map[int]uint64{0: 68, 1: 69}, newest)
}

func TestASoakWritesABoundedAmount(t *testing.T) {
	for seed := uint64(1); seed <= 200; seed++ {
		short, long := drawConfig(seed, 5*time.Second), drawConfig(seed, 30*time.Minute)
		require.Len(t, long.Tracers, len(short.Tracers), "a soak draws the same tracers")
		for _, tc := range long.Tracers {
			require.Contains(t, []sinkKind{sinkRotate, sinkRotateGzip, sinkFlight}, tc.Sink)
			if tc.Sink != sinkFlight {
				require.Positive(t, tc.MaxFiles, "seed %d", seed)
			}
		}
	}
}

func TestMemoryGrowthOfSpansNeverEndedIsNoLeak(t *testing.T) {
	r := testRun(&childResult{BaseHeap: 4 << 20})
	r.cfg.Tracers[0].Shapes = append(r.cfg.Tracers[0].Shapes, Shape{Kind: shapeLeaker, N: 1, Depth: 2, Rate: 20000})
	r.readyAt = int64(time.Hour)
	start, _ := memoryBound(r.cfg, 0, false)
	for i := range 50 {
		at := time.Duration(i) * 100 * time.Millisecond
		b, _ := memoryBound(r.cfg, at, false)
		// The heap grows as the bound says spans never ended make it grow.
		r.rep.samples = append(r.rep.samples, sample{at: r.readyAt + int64(at), phase: "run", live: 8<<20 + uint64(b-start), started: uint64(i) * 60000})
	}
	r.checkMemory()
	require.Empty(t, r.fails)
	g, _, _ := fitGrowth(r.rep.samples)
	require.Greater(t, g, int64(32<<20), "the heap did grow: the check must have taken the spans held off")
}

func TestWritesFailFindsTheTracer(t *testing.T) {
	r := &run{cfg: &Config{Tracers: []TracerConfig{{}, {Fault: faultFail}}, Tmpfs: true}}
	for rel, want := range map[string]bool{
		"t0/trace.json":      true,
		"fs/t0/trace.json":   true, // on the tmpfs
		"t1/writer.json":     true,
		"tees-t1/tee-0.json": true,
		"t2/trace.json":      false, // no such tracer
		"other.json":         false,
	} {
		assert.Equal(t, want, r.writesFail(rel), rel)
	}
	r.cfg.Tmpfs = false
	assert.False(t, r.writesFail("fs/t0/trace.json"))
}
