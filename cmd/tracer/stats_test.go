package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gotracer/tracer/cmd/tracer/internal/trace"
	"github.com/gotracer/tracer/internal/tracefile"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStatsHandMade checks every number stats prints on a file small
// enough to work out by hand.
func TestStatsHandMade(t *testing.T) {
	t.Parallel()
	path := writeFile(t, t.TempDir(), "t.json", `[
{"name":"process_name","ph":"M","pid":1,"tid":0,"args":{"name":"p","ts0_unix_ns":1000000000000}},
{"name":"thread_name","ph":"M","pid":1,"tid":2,"args":{"name":"worker"}},
{"name":"tracer.dropped","ph":"C","ts":0,"pid":1,"args":{"events":0}},
{"name":"child","ph":"X","ts":10,"dur":20,"pid":1,"tid":2},
{"name":"child","ph":"X","ts":40,"dur":40,"pid":1,"tid":2},
{"name":"parent","ph":"X","ts":5,"dur":90,"pid":1,"tid":2},
{"name":"open","ph":"B","ts":100,"pid":1,"tid":3},
{"name":"child","ph":"X","ts":110,"dur":60,"pid":1,"tid":3},
{"name":"open","ph":"E","ts":200,"pid":1,"tid":3},
{"name":"mem","ph":"C","ts":50,"pid":1,"args":{"heap":10,"stack":1}},
{"name":"mem","ph":"C","ts":60,"pid":1,"args":{"heap":30,"stack":1}},
{"name":"huge","ph":"C","ts":60,"pid":1,"args":{"v":-1e999}},
{"name":"tracer.dropped","ph":"C","ts":200,"pid":1,"args":{"events":12}}
]`)
	code, stdout, stderr := runCmd("stats", "-json", path)
	require.Equal(t, 0, code, stderr)
	var s Stats
	require.NoError(t, json.Unmarshal([]byte(stdout), &s))
	us := func(n int64) int64 { return n * 1000 }
	assert.Equal(t, int64(13), s.Events)
	assert.Zero(t, s.Problems)
	assert.Equal(t, int64(0), s.Start)
	assert.Equal(t, us(200), s.End)
	assert.Equal(t, "1970-01-01T00:16:40Z", s.Wall)
	assert.Equal(t, Float(12), s.Dropped)
	assert.Equal(t, []SpanStats{
		{Name: "child", Count: 3, Total: us(120), Self: us(120), Mean: us(40), P50: us(40), P95: us(60), P99: us(60), Max: us(60), MaxDepth: 1},
		{Name: "open", Count: 1, Total: us(100), Self: us(40), Mean: us(100), P50: us(100), P95: us(100), P99: us(100), Max: us(100)},
		{Name: "parent", Count: 1, Total: us(90), Self: us(30), Mean: us(90), P50: us(90), P95: us(90), P99: us(90), Max: us(90)},
	}, roundQuantiles(s.Spans))
	assert.Equal(t, []TrackStats{
		{Pid: "1", Tid: "3", Process: "p", Slices: 2, Busy: us(100), Share: 0.5},
		{Pid: "1", Tid: "2", Process: "p", Name: "worker", Slices: 3, Busy: us(90), Share: 0.45},
	}, s.Tracks)
	assert.Contains(t, s.Counters, CounterStats{Pid: "1", Name: "mem", Key: "heap", Samples: 2, Min: 10, Mean: 20, Max: 30})
	assert.Contains(t, s.Counters, CounterStats{Pid: "1", Name: "huge", Key: "v", Samples: 1, Min: -math.MaxFloat64, Mean: -math.MaxFloat64, Max: -math.MaxFloat64})

	// The table, sorted and cut.
	code, stdout, _ = runCmd("stats", "-sort", "self", "-top", "1", path)
	require.Equal(t, 0, code)
	assert.Contains(t, stdout, "spans (1 of 3;")
	assert.Regexp(t, `\s3\s+120µs\s+120µs\s+40µs\s+\S+\s+\S+\s+\S+\s+60µs\s+1\s+child\n`, stdout)
	assert.Contains(t, stdout, "dropped events: 12\n")
	assert.Contains(t, stdout, "time range: 0ns to 200µs (200µs), from 1970-01-01T00:16:40Z\n")
	assert.Regexp(t, `1\s+3\s+2\s+100µs\s+50.0%`, stdout)

	// The deepest first.
	code, stdout, _ = runCmd("stats", "-sort", "depth", "-top", "1", path)
	require.Equal(t, 0, code)
	assert.Regexp(t, `\s1\s+child\n`, stdout)
}

// roundQuantiles rounds the quantiles of spans to the microsecond: they
// are within 1%, and this file's durations are whole microseconds.
func roundQuantiles(spans []SpanStats) []SpanStats {
	r := func(v int64) int64 { return int64(math.Round(float64(v)/1000)) * 1000 }
	for i := range spans {
		spans[i].P50, spans[i].P95, spans[i].P99 = r(spans[i].P50), r(spans[i].P95), r(spans[i].P99)
	}
	return spans
}

// TestStatsLibraryFile checks stats on a file the tracer package wrote
// against numbers worked out here from the events parsed by
// encoding/json, its X events, B/E pairs and thread instants (which
// Perfetto shows as slices of no duration): per name, count, total and max exactly, self time by a
// sort and a stack, percentiles within the sketch's error; per track,
// busy time as the union of its slices.
func TestStatsLibraryFile(t *testing.T) {
	t.Parallel()
	path := generate(t, filepath.Join(t.TempDir(), "lib.json"), 4<<20)
	got, err := computeStats(path, true)
	require.NoError(t, err)
	require.Zero(t, got.Problems)

	type slice struct {
		name       string
		start, end int64
	}
	ns := func(v any) int64 { return int64(math.Round(v.(float64) * 1000)) }
	byTrack := map[string][]slice{}
	durs := map[string][]int64{}
	add := func(tid string, s slice) {
		byTrack[tid] = append(byTrack[tid], s)
		durs[s.name] = append(durs[s.name], s.end-s.start)
	}
	open := map[string][]slice{} // B events waiting for their E, per track
	for _, e := range strictEvents(t, path) {
		// X events, B/E pairs (a span open across a flush interval, as on
		// a loaded machine), and instants of a thread: Perfetto's thread
		// slices.
		n, _ := e["tid"].(float64) // a counter has none
		tid := strconv.FormatFloat(n, 'f', -1, 64)
		instant := (e["ph"] == "i" || e["ph"] == "I") && (e["s"] == nil || e["s"] == "t")
		switch {
		case e["ph"] == "B":
			open[tid] = append(open[tid], slice{e["name"].(string), ns(e["ts"]), 0})
		case e["ph"] == "E":
			st := open[tid]
			require.NotEmpty(t, st, "an E without its B on track %s", tid)
			b := st[len(st)-1]
			open[tid] = st[:len(st)-1]
			add(tid, slice{b.name, b.start, ns(e["ts"])})
		case e["ph"] == "X" || instant:
			if instant {
				e["dur"] = 0.0
			}
			add(tid, slice{e["name"].(string), ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])})
		}
	}
	self := map[string]int64{}
	busy := map[string]int64{}
	for tid, slices_ := range byTrack {
		slices.SortFunc(slices_, func(a, b slice) int { return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(b.end, a.end)) })
		var stack []slice
		for _, s := range slices_ {
			for len(stack) > 0 && stack[len(stack)-1].end <= s.start {
				stack = stack[:len(stack)-1]
			}
			self[s.name] += s.end - s.start
			if len(stack) > 0 {
				self[stack[len(stack)-1].name] -= s.end - s.start
			} else {
				busy[tid] += s.end - s.start
			}
			stack = append(stack, s)
		}
	}
	require.Len(t, got.Spans, len(durs))
	for _, s := range got.Spans {
		d := durs[s.Name]
		slices.Sort(d)
		var total int64
		for _, v := range d {
			total += v
		}
		assert.Equal(t, int64(len(d)), s.Count, s.Name)
		assert.Equal(t, total, s.Total, s.Name)
		assert.Equal(t, total/int64(len(d)), s.Mean, s.Name)
		assert.Equal(t, d[len(d)-1], s.Max, s.Name)
		assert.Equal(t, self[s.Name], s.Self, s.Name)
		for q, v := range map[float64]int64{0.5: s.P50, 0.95: s.P95, 0.99: s.P99} {
			exact := d[max(int(math.Ceil(q*float64(len(d)))), 1)-1] // nearest rank
			assert.InDelta(t, exact, v, trace.SketchError*float64(exact)+0.5, "%s p%v", s.Name, q*100)
		}
	}
	require.Len(t, got.Tracks, len(byTrack))
	for _, tr := range got.Tracks {
		assert.Equal(t, busy[tr.Tid], tr.Busy, "tid %s", tr.Tid)
		assert.InDelta(t, float64(tr.Busy)/float64(got.Duration), tr.Share, 1e-9)
	}
}

// TestNamesThatHoldIds checks what check and stats say of a file whose
// span names hold ids: a note, not a problem, and one row for them all.
func TestNamesThatHoldIds(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("[\n")
	const n = 12_000
	for i := range n {
		fmt.Fprintf(&b, `{"name":"request %d","ph":"X","ts":%d,"dur":1,"pid":1,"tid":1},`+"\n", i, 2*i)
	}
	b.WriteString(`{"name":"request 1","ph":"X","ts":0,"dur":1000000,"pid":1,"tid":2}` + "\n]")
	path := writeFile(t, t.TempDir(), "ids.json", b.String())

	code, stdout, stderr := runCmd("check", path)
	assert.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, path+`: note: more than 10000 span names: names that differ only in digits are counted as one ("request 0" as "request <n>")`)
	assert.Contains(t, stdout, path+": ok, 12001 events")

	code, stdout, _ = runCmd("stats", "-json", path)
	require.Equal(t, 0, code)
	var s Stats
	require.NoError(t, json.Unmarshal([]byte(stdout), &s))
	require.Len(t, s.Spans, 1)
	assert.Equal(t, SpanStats{Name: "request <n>", Count: n + 1, Total: (n + 1_000_000) * 1000, Self: (n + 1_000_000) * 1000,
		Mean: (n + 1_000_000) * 1000 / (n + 1), P50: s.Spans[0].P50, P95: s.Spans[0].P95, P99: s.Spans[0].P99, Max: 1_000_000_000}, s.Spans[0])
	assert.NotEmpty(t, s.Note)
}

// TestStatsTooDeep checks that stats leaves out the slices nested deeper
// than Perfetto's 512 levels, and says so: in a recursion of B/E pairs
// 600 deep, Perfetto drops the innermost 88 B events, and their E events
// end the innermost B events it kept, 88 levels too soon.
func TestStatsTooDeep(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("[\n")
	const n = 600
	for i := range n {
		fmt.Fprintf(&b, `{"name":"f","ph":"B","ts":%d,"pid":1,"tid":1},`+"\n", i)
	}
	for i := range n {
		fmt.Fprintf(&b, `{"name":"f","ph":"E","ts":%d,"pid":1,"tid":1},`+"\n", n+i)
	}
	// And an X recursion as the tracer package writes it, innermost
	// first: the innermost 88 are dropped.
	for i := n - 1; i >= 0; i-- {
		fmt.Fprintf(&b, `{"name":"g","ph":"X","ts":%d,"dur":%d,"pid":1,"tid":2},`+"\n", 2000+i, 2*(n-i))
	}
	b.WriteString(`{"name":"h","ph":"X","ts":0,"dur":1,"pid":1,"tid":3}]`)
	path := writeFile(t, t.TempDir(), "deep.json", b.String())

	code, stdout, stderr := runCmd("stats", "-json", path)
	require.Equal(t, 0, code, stderr)
	var s Stats
	require.NoError(t, json.Unmarshal([]byte(stdout), &s))
	us := func(n int64) int64 { return n * 1000 }
	assert.Equal(t, 2*88, s.TooDeep)
	got := map[string][4]int64{}
	for _, sp := range s.Spans {
		got[sp.Name] = [4]int64{sp.Count, sp.Total, sp.Self, int64(sp.MaxDepth)}
	}
	// B/E: the slice at depth d (0 to 511) ends at the E of depth d+88,
	// at 1111-d: it lasts 1111-2d, 2 more than the one inside it.
	// X: the slice at depth d lasts 1200-2d; the 512th has no child.
	assert.Equal(t, map[string][4]int64{
		"f": {512, us(307200), us(511*2 + 89), 511},
		"g": {512, us(512*1200 - 511*512), us(511*2 + 1200 - 2*511), 511},
		"h": {1, us(1), us(1), 0},
	}, got)
	assert.Contains(t, s.Deep, "176 slices nested deeper than the 512 levels Perfetto keeps are left out")
	assert.Equal(t, 2, s.Problems, "the depth of both tracks, as check counts it")

	code, stdout, stderr = runCmd("stats", path)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "176 slices nested deeper than the 512 levels Perfetto keeps are left out, as Perfetto drops them (slice_max_depth_exceeded")
	comparePerfetto(t, path)
}

// TestStatsProblemsAsCheck: stats counts the problems check lists,
// however many times it reads the file: a first reading stops at a track
// nested deeper than Perfetto keeps, and a track found deep or tangled
// only after it is replayed in a third.
func TestStatsProblemsAsCheck(t *testing.T) {
	t.Parallel()
	deepBE := func(b *strings.Builder, tid, n int) {
		for i := range n {
			fmt.Fprintf(b, `{"name":"a%d","ph":"B","ts":%d,"pid":1,"tid":%d},`+"\n", i%7, i, tid)
		}
		for i := range n {
			fmt.Fprintf(b, `{"name":"a%d","ph":"E","ts":%d,"pid":1,"tid":%d},`+"\n", (n-1-i)%7, n+i, tid)
		}
	}
	deepX := func(b *strings.Builder, tid, n int) { // innermost first: deep only at the end
		for i := range n {
			fmt.Fprintf(b, `{"name":"x","ph":"X","ts":%d,"dur":%d,"pid":1,"tid":%d},`+"\n", n-i, 2*i+1, tid)
		}
	}
	tangled := func(b *strings.Builder, tid int) { // an X in an open B, and X events that overlap
		fmt.Fprintf(b, `{"name":"t","ph":"B","ts":100,"pid":1,"tid":%[1]d},
{"name":"t","ph":"E","ts":105,"pid":1,"tid":%[1]d},
{"name":"v","ph":"X","ts":102,"dur":6,"pid":1,"tid":%[1]d},
{"name":"u","ph":"X","ts":1,"dur":10,"pid":1,"tid":%[1]d},
{"name":"u","ph":"X","ts":2,"dur":20,"pid":1,"tid":%[1]d},
{"name":"u","ph":"X","ts":3,"dur":30,"pid":1,"tid":%[1]d},
`, tid)
	}
	nesting := func(b *strings.Builder, tid int) { // an E with no B
		fmt.Fprintf(b, `{"name":"n","ph":"E","ts":7,"pid":1,"tid":%d},`+"\n", tid)
	}
	dir := t.TempDir()
	for name, write := range map[string]func(*strings.Builder){
		"deep":                  func(b *strings.Builder) { deepBE(b, 1, 600) },
		"deep then tangled":     func(b *strings.Builder) { deepBE(b, 1, 600); deepX(b, 2, 700); tangled(b, 3) },
		"tangled then deep":     func(b *strings.Builder) { tangled(b, 3); nesting(b, 4); deepBE(b, 1, 530) },
		"deep, nesting after":   func(b *strings.Builder) { deepBE(b, 1, 520); nesting(b, 4); nesting(b, 1) },
		"tangled":               func(b *strings.Builder) { tangled(b, 3); nesting(b, 4) },
		"deep found at the end": func(b *strings.Builder) { nesting(b, 4); deepX(b, 2, 600) },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var b strings.Builder
			b.WriteString("[\n")
			write(&b)
			b.WriteString(`{"name":"end","ph":"i","ts":0,"s":"t","pid":1,"tid":1}` + "\n]\n")
			path := writeFile(t, dir, strings.ReplaceAll(name, " ", "_")+".json", b.String())
			byKind, _, err := checkFile(path, true, func(tracefile.Problem) {})
			require.NoError(t, err)
			want := 0
			for _, n := range byKind {
				want += n
			}
			code, stdout, stderr := runCmd("stats", "-json", path)
			require.Equal(t, 0, code, stderr)
			var s Stats
			require.NoError(t, json.Unmarshal([]byte(stdout), &s))
			assert.Equal(t, want, s.Problems, "check: %v", byKind)
			comparePerfetto(t, path)
		})
	}
}

// TestStatsInfinity: a counter value Perfetto reads as infinite (strtod
// takes "inf") is printed by -json as "+Inf", not a failure.
func TestStatsInfinity(t *testing.T) {
	t.Parallel()
	path := writeFile(t, t.TempDir(), "inf.json", "[\n"+
		`{"name":"c","ph":"C","ts":1,"pid":1,"args":{"v":"inf"}},`+"\n"+
		`{"name":"c","ph":"C","ts":2,"pid":1,"args":{"v":"-inf"}},`+"\n"+
		`{"name":"c","ph":"C","ts":3,"pid":1,"args":{"v":1}}`+"\n]\n")
	code, stdout, stderr := runCmd("stats", "-json", path)
	require.Equal(t, 0, code, stderr)
	var s Stats
	require.NoError(t, json.Unmarshal([]byte(stdout), &s))
	require.Len(t, s.Counters, 1)
	assert.True(t, math.IsInf(float64(s.Counters[0].Min), -1))
	assert.True(t, math.IsInf(float64(s.Counters[0].Max), 1))
	assert.True(t, math.IsNaN(float64(s.Counters[0].Mean)))
}

// TestStatsAbsoluteTimeRange: a trace in microseconds since 1970 (the Go
// toolchain's) gets its time range as the file's ts, not as durations
// from ts 0 that read "1800000000s to 1800000000s".
func TestStatsAbsoluteTimeRange(t *testing.T) {
	t.Parallel()
	path := writeFile(t, t.TempDir(), "abs.json", "[\n"+
		`{"name":"a","ph":"X","ts":1795767407455819.5,"dur":38000000,"pid":1,"tid":1}`+"\n]\n")
	code, stdout, stderr := runCmd("stats", path)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "time range: 38s, ts 1795767407455819.500 to 1795767445455819.500 µs")
}
