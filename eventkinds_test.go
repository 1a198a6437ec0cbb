package tracer

import (
	"errors"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCounterSeries(t *testing.T) {
	tr, path := newTestTracer(t)
	for i := 0; i < 5; i++ {
		tr.Counter("queue", Int("depth", i), Float64("load", float64(i)/4), Uint64("total", uint64(i*10)), Category("q"))
	}
	tr.Counter("single", Int64("v", -7))
	require.NoError(t, tr.Close())
	var queue []event
	for _, e := range byPhase(readClosed(t, path), "C") {
		switch e.Name {
		case "queue":
			queue = append(queue, e)
		case "single":
			assert.Equal(t, map[string]any{"v": -7.0}, e.Args)
		}
	}
	require.Len(t, queue, 5)
	for i, e := range queue {
		assert.Equal(t, map[string]any{"depth": float64(i), "load": float64(i) / 4, "total": float64(i * 10)}, e.Args)
		assert.Equal(t, "q", e.Cat)
		assert.Zero(t, e.Tid, "counters belong to the process")
		if i > 0 {
			assert.GreaterOrEqual(t, e.Ts, queue[i-1].Ts)
		}
	}
}

// checkAsync checks that every async end closes a begin with the same id,
// category and name, in time order, children inside their parents, and
// that instants fall inside an open operation. It returns the number of
// top-level operations.
func checkAsync(t *testing.T, evs []event) int {
	t.Helper()
	type key struct{ id, cat string }
	open := map[key][]event{}
	ops := 0
	for _, e := range sortedByTs(evs) {
		if e.Ph != "b" && e.Ph != "n" && e.Ph != "e" {
			continue
		}
		require.Empty(t, e.ID, "async events use id2, not id")
		local, ok := e.ID2["local"].(string)
		require.True(t, ok, "async events carry id2.local: %+v", e)
		k := key{local, e.Cat}
		switch e.Ph {
		case "b":
			if len(open[k]) == 0 {
				ops++
			}
			open[k] = append(open[k], e)
		case "n":
			require.NotEmpty(t, open[k], "instant %q outside its operation", e.Name)
		case "e":
			st := open[k]
			require.NotEmpty(t, st, "async end %q id %s without a begin", e.Name, local)
			require.Equal(t, st[len(st)-1].Name, e.Name, "async end must name its begin")
			open[k] = st[:len(st)-1]
		}
	}
	for k, st := range open {
		require.Empty(t, st, "operation %v never ended", k)
	}
	return ops
}

func TestAsyncAcrossGoroutines(t *testing.T) {
	tr, path := newTestTracer(t)
	const jobs = 50
	var wg sync.WaitGroup
	ids := map[uint64]bool{}
	for i := 0; i < jobs; i++ {
		op := tr.AsyncBegin("job", Int("n", i), Category("jobs"))
		require.NotZero(t, op.ID())
		require.False(t, ids[op.ID()], "ids are unique")
		ids[op.ID()] = true
		wg.Add(1)
		go func() { // another goroutine adds to the operation
			defer wg.Done()
			op.Instant("queued")
			child := op.Begin("work", String("stage", "decode"))
			time.Sleep(50 * time.Microsecond)
			child.End()
			done := make(chan struct{})
			go func() { // and a third ends it
				op.End(Bool("ok", true))
				close(done)
			}()
			<-done
		}()
	}
	custom := tr.AsyncBeginID(0xabc, "request", Namespace("http"))
	custom.End()
	wg.Wait()
	require.NoError(t, tr.Close())

	evs := readClosed(t, path)
	assert.Equal(t, jobs+1, checkAsync(t, evs))
	req := find(t, evs, "b", "request")
	assert.Equal(t, "http:0xabc", req.ID2["local"], "the scope keeps the id apart from other scopes' in Perfetto")
	assert.Equal(t, "http", req.Scope)
}

// TestAsyncOpenAtClose: async operations still open at Close end there,
// innermost first, on every kind of file, as they end with a rotated file:
// chrome://tracing leaves out a "b" without its "e" (torture seed
// 5917676220406433100, a program that closes its tracer while jobs are
// queued).
func TestAsyncOpenAtClose(t *testing.T) {
	for _, name := range []string{"trace.json", "trace.json.gz"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), name)
			tr, err := New(path, withClock(newTestClock()))
			require.NoError(t, err)
			done := tr.AsyncBegin("done", Category("jobs"))
			done.End()
			open := tr.AsyncBegin("queued job", Category("jobs"), Int("n", 1))
			open.Begin("stage", String("s", "decode"))
			tr.AsyncBeginID(0xabc, "request", Namespace("http"))
			require.NoError(t, tr.Close())

			var evs []event
			if strings.HasSuffix(name, ".gz") {
				evs = readClosedGzip(t, path)
			} else {
				evs = readClosed(t, path)
			}
			assert.Equal(t, 3, checkAsync(t, evs), "every operation paired")
			importInHeavyRun(t, path)
			open.End() // after Close: counted, not written
		})
	}
}

func TestAsyncScopeField(t *testing.T) {
	tr, path := newTestTracer(t)
	tr.AsyncBeginID(7, "request", Namespace("http"), Int("n", 1)).End()
	require.NoError(t, tr.Close())
	data := readFile(t, path)
	assert.Contains(t, data, `"id2":{"local":"http:0x7"},"scope":"http","args":{"n":1}`)
	assert.NotContains(t, data, `"args":{"scope"`, "the scope is a field, never an arg")
	assert.Contains(t, data, `"id2":{"local":"http:0x7"},"scope":"http"},`)
}

func sortedByTs(evs []event) []event {
	out := append([]event(nil), evs...)
	for i := 1; i < len(out); i++ { // insertion sort: stable, files are nearly sorted
		for j := i; j > 0 && out[j].Ts < out[j-1].Ts; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func TestFlowsBindToEnclosingSpans(t *testing.T) {
	tr, path := newTestTracer(t)
	type job struct{ flow Flow }
	queue, results := make(chan job), make(chan job)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // worker
		defer wg.Done()
		for j := range queue {
			end := tr.Span("work")
			j.flow.Step(Int("stage", 2))
			end()
			results <- j
		}
		close(results)
	}()
	go func() { // consumer
		defer wg.Done()
		for j := range results {
			end := tr.Span("consume")
			j.flow.End()
			end()
		}
	}()
	for i := 0; i < 20; i++ {
		end := tr.Span("produce", Int("i", i))
		queue <- job{tr.FlowBegin("job", Category("pipeline"))}
		end()
	}
	close(queue)
	wg.Wait()
	require.NoError(t, tr.Close())

	evs := readClosed(t, path)
	tracks := checkTracks(t, evs)
	inside := func(e event, span string) {
		for _, iv := range tracks[e.Tid] {
			if iv.Name == span && iv.Start <= e.Ts && e.Ts <= iv.End {
				return
			}
		}
		assert.Failf(t, "flow event outside its span", "%s %q at %v is not inside a %q span of goroutine %d", e.Ph, e.Name, e.Ts, span, e.Tid)
	}
	chains := map[int64][]string{}
	for _, e := range evs {
		span := map[string]string{"s": "produce", "t": "work", "f": "consume"}[e.Ph]
		if span == "" {
			continue
		}
		assert.Equal(t, "job", e.Name)
		assert.Equal(t, "pipeline", e.Cat)
		inside(e, span)
		chains[flowID(t, e)] = append(chains[flowID(t, e)], e.Ph)
		if e.Ph == "f" {
			assert.Equal(t, "e", e.Bp, "flow ends bind to the enclosing slice")
		}
	}
	require.Len(t, chains, 20, "ids are unique per flow")
	for id, chain := range chains {
		assert.Equal(t, []string{"s", "t", "f"}, chain, "flow %v", id)
	}
}

// flowID reads the numeric "id" of a flow event.
func flowID(t *testing.T, e event) int64 {
	t.Helper()
	id, err := e.ID.Int64()
	require.NoError(t, err, "flow ids are numbers")
	return id
}

func TestCategoriesFilter(t *testing.T) {
	tr, path := newTestTracer(t, WithCategories("db", "http"))
	db, http, cache := Category("db"), Category("http"), Category("cache")
	tr.Span("query", db)()
	tr.Span("get", http)()
	tr.Span("lookup", cache)()
	tr.Instant("hit", cache)
	tr.Counter("entries", cache, Int("n", 1))
	tr.AsyncBegin("fill", cache).End()
	tr.FlowBegin("load", cache).End()
	tr.Span("uncategorised")()
	require.Zero(t, allocsPerRun(100, func() { tr.Span("lookup", cache)() }))

	require.NoError(t, tr.SetCategories("cache"))
	tr.Span("query again", db)()
	tr.Span("lookup again", cache)()
	require.NoError(t, tr.SetCategories())
	tr.Span("query all", db)()
	require.Error(t, tr.SetCategories("a,b"), "a comma would split the category")
	require.NoError(t, tr.Close())

	var names []string
	for _, e := range readClosed(t, path) {
		if e.Ph != "M" && e.Ph != "C" || e.Name == "entries" {
			names = append(names, e.Name+"/"+e.Cat)
		}
	}
	assert.Equal(t, []string{"query/db", "get/http", "uncategorised/", "lookup again/cache", "query all/db"}, names)
	assert.Zero(t, tr.Stats().Dropped, "filtered events are not drops")
}

func TestProcessLabels(t *testing.T) {
	tr, path := newTestTracer(t, WithProcessLabels("canary", "eu-west"))
	require.NoError(t, tr.Close())
	assert.Equal(t, "canary,eu-west", find(t, readClosed(t, path), "M", "process_labels").Args["labels"])
}

func TestEventKindsZeroAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	tr, _ := newTestTracer(t)
	cat := Category("bench")
	cases := map[string]func(){
		"Counter":            func() { tr.Counter("c", Int("a", 1), Float64("b", 2)) },
		"Async":              func() { a := tr.AsyncBegin("a", cat); a.Instant("n"); a.End() },
		"Flow":               func() { f := tr.FlowBegin("f", cat); f.Step(); f.End() },
		"SpanCategory4Args":  func() { tr.Span("s", cat, Int("a", 1), String("b", "x"), Bool("c", true), Float64("d", 1))() },
		"InstantGlobal":      func() { tr.InstantGlobal("g", cat) },
		"PackageCounterOff":  func() { Counter("c", Int("a", 1)) },
		"PackageAsyncOff":    func() { AsyncBegin("a").End() },
		"PackageFlowOff":     func() { FlowBegin("f").End() },
		"PackageCategoryOff": func() { defer Span("s", cat)() },
	}
	for name, f := range cases {
		assert.Zero(t, allocsPerRun(1000, f), name)
	}
}

// TestOverlappingAsyncChildren is issue 10 item 9: children of one
// operation that overlap (two goroutines each beginning one) were drawn
// wrong in both viewers. A child that begins while a sibling holds the
// operation's track gets a track of its own; children that do not overlap
// still nest on the operation's, and a child's children nest on its.
func TestOverlappingAsyncChildren(t *testing.T) {
	tr, path := newTestTracer(t)
	op := tr.AsyncBegin("request")
	first := op.Begin("first")
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // overlaps first, from another goroutine
		defer wg.Done()
		second := op.Begin("second")
		second.Begin("inner").End()
		second.End()
	}()
	wg.Wait()
	first.End()
	op.Begin("third").End() // after both: nests again
	op.End()
	require.NoError(t, tr.Close())

	evs := readClosed(t, path)
	checkAsync(t, evs) // every track a stack, in time order
	local := func(name string) string { return find(t, evs, "b", name).ID2["local"].(string) }
	assert.Equal(t, local("request"), local("first"), "the first child nests")
	assert.Equal(t, local("request"), local("third"), "a child after the others nests")
	assert.NotEqual(t, local("request"), local("second"), "a child that overlaps a sibling has a track of its own")
	assert.True(t, strings.HasPrefix(local("second"), local("request")+"."), local("second"))
	assert.Equal(t, local("second"), local("inner"), "its children nest on its track")
}

// TestAsyncTracksAreTheTracers: a child that never ends holds its
// parent's track for the life of its tracer, and no longer. Another
// tracer's children nest on their operations' tracks even when the first
// holds every flag it has (a test, or an example, that runs after one that
// left children open used to draw its children on tracks of their own).
func TestAsyncTracksAreTheTracers(t *testing.T) {
	leaky, _ := newTestTracer(t)
	held := func() (n int) {
		for i := range leaky.asyncTracks {
			if leaky.asyncTracks[i].Load() {
				n++
			}
		}
		return n
	}
	for i := 0; i < 100_000 && held() < len(leaky.asyncTracks); i++ {
		leaky.AsyncBegin("abandoned").Begin("child never ended")
	}
	require.Equal(t, len(leaky.asyncTracks), held(), "every flag held by a child left open")
	op := leaky.AsyncBegin("request")
	assert.Zero(t, op.Begin("child").flag, "a parent whose flag is held: its child takes a track of its own")
	require.NoError(t, leaky.Close())

	tr, path := newTestTracer(t)
	op = tr.AsyncBegin("request")
	child := op.Begin("child")
	assert.NotZero(t, child.flag)
	child.End()
	op.End()
	require.NoError(t, tr.Close())
	evs := readClosed(t, path)
	checkAsync(t, evs)
	local := func(name string) string { return find(t, evs, "b", name).ID2["local"].(string) }
	assert.Equal(t, local("request"), local("child"), "another tracer's child nests")
}

// TestAsyncKeepsItsCategory is issue 11 item 4: an operation keeps the
// category it began with. A Category arg on a later event is ignored, and
// switching the category off after the begin does not drop the end, which
// would leave the operation open for ever.
func TestAsyncKeepsItsCategory(t *testing.T) {
	tr, path := newTestTracer(t)
	db := Category("db")
	op := tr.AsyncBegin("query", db)
	flow := tr.FlowBegin("handoff", db)
	require.NoError(t, tr.SetCategories("other")) // db is off from now on
	assert.Equal(t, Async{}, tr.AsyncBegin("not recorded", db))
	end := tr.Span("receiver")
	flow.End(Category("other"))
	end()
	op.Instant("progress", Category("other"))
	op.End(Category("disabled"), Int("rows", 3))
	require.NoError(t, tr.Close())

	evs := readClosed(t, path)
	assert.Equal(t, 1, checkAsync(t, evs))
	for _, e := range byName(evs, "query") {
		assert.Equal(t, "db", e.Cat, "%s", e.Ph)
	}
	assert.Equal(t, "db", find(t, evs, "n", "progress").Cat)
	assert.EqualValues(t, 3, find(t, evs, "e", "query").Args["rows"])
	assert.Equal(t, "db", find(t, evs, "f", "handoff").Cat)
	assert.Empty(t, byName(evs, "not recorded"))
}

// TestArgsAtSpanEnd is issue 11 item 2: what is known when a span ends (a
// status, a size) is given to the function Span returned. A short span's
// X event holds the start's args and then the end's; a span written as B
// gets them on its E, which both viewers add to the span's.
func TestArgsAtSpanEnd(t *testing.T) {
	tr, path := newTestTracer(t)
	func() {
		end := tr.Span("request", String("route", "/items"))
		end(Int("status", 404), Int("bytes", 12), Category("ignored"))
	}()
	long := tr.LongSpan("upload", Int("parts", 3))
	long(Bool("ok", true))
	func() { defer tr.Span("plain")() }()
	require.NoError(t, tr.Close())

	evs := readClosed(t, path)
	x := find(t, evs, "X", "request")
	assert.Equal(t, map[string]any{"route": "/items", "status": 404.0, "bytes": 12.0}, x.Args)
	assert.Empty(t, x.Cat, "a Category given to the end is ignored: the span's is its start's")
	assert.Equal(t, map[string]any{"parts": 3.0}, find(t, evs, "B", "upload").Args)
	assert.Equal(t, map[string]any{"ok": true}, find(t, evs, "E", "upload").Args)
	assert.Nil(t, find(t, evs, "X", "plain").Args)
}

// TestEndArgsAllocations: a plain end allocates nothing; args given to an
// end cost the one allocation of their slice, which escapes through the
// function value, and no more.
func TestEndArgsAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	tr, _ := newTestTracer(t)
	assert.Zero(t, allocsPerRun(1000, func() { defer tr.Span("x")() }))
	assert.Equal(t, 1.0, allocsPerRun(1000, func() {
		end := tr.Span("x")
		end(Int("status", 200), String("k", "v"))
	}))
}

// TestArgConstructors: Err, Duration and Time (issue 11 item 2). Duration
// and Time are formatted by the flusher, so recording them allocates
// nothing.
func TestArgConstructors(t *testing.T) {
	tr, path := newTestTracer(t)
	at := time.Date(2026, 11, 23, 12, 30, 0, 123456789, time.FixedZone("CET", 3600))
	end := tr.Span("call", Time("at", at), Err(nil))
	end(Err(errors.New("boom")), Duration("took", 1500*time.Microsecond), Duration("tiny", 250), Duration("neg", -2*time.Second))
	require.NoError(t, tr.Close())
	assert.Equal(t, map[string]any{
		"at": "2026-11-23T11:30:00.123456789Z", "error": "boom",
		"took": "1.5ms", "tiny": "250ns", "neg": "-2s",
	}, find(t, readClosed(t, path), "X", "call").Args)

	if raceEnabled {
		return
	}
	tr2, _ := newTestTracer(t)
	d, now := Duration("took", time.Second), Time("at", at)
	assert.Zero(t, allocsPerRun(1000, func() { tr2.Instant("x", d, now) }))
}

// TestRepeatedArgKeys: an event's args never hold a key twice, as the
// file has them (a JSON parser keeps one of the two; so do the viewers): a
// later arg replaces an earlier one of the same key, whether both came in
// one call or one at a span's start and the other at its end, and keys
// are compared as written, after escaping.
func TestRepeatedArgKeys(t *testing.T) {
	tests := []struct {
		name  string
		lanes bool
		rec   func(tr *Tracer)
		ph    string
		args  string // the event's "args" object, as written
	}{
		{"a start's arg given again at the end", false, func(tr *Tracer) {
			tr.Span("start and end", Int("status", 0), String("path", "/"))(Int("status", 200))
		}, "X", `{"path":"/","status":200}`},
		{"one call", false, func(tr *Tracer) {
			tr.Instant("one call", Int("k", 1), String("k", "x"))
		}, "i", `{"k":"x"}`},
		{"three times, others between", false, func(tr *Tracer) {
			tr.Instant("three times", Int("a", 1), Int("b", 2), Int("a", 3), Bool("c", true), Int("a", 5))
		}, "i", `{"b":2,"c":true,"a":5}`},
		{"different bytes, the same key written", false, func(tr *Tracer) {
			tr.Instant("escaped", Int("bad \xff", 1), Int("bad \xfe", 2))
		}, "i", `{"bad \ufffd":2}`},
		{"quotes and backslashes", false, func(tr *Tracer) {
			tr.Instant("quoted", Int(`a"b`, 1), Int(`a\`, 2), Int(`a"b`, 3))
		}, "i", `{"a\\":2,"a\"b":3}`},
		{"invalid UTF-8, no key repeated", false, func(tr *Tracer) {
			tr.Instant("invalid", Int("\xff", 1), Int("ok", 2))
		}, "i", `{"\ufffd":1,"ok":2}`},
		{"keys past MaxStringLen, the same where cut", false, func(tr *Tracer) {
			long := strings.Repeat("k", MaxStringLen)
			tr.Instant("long", Int(long+"1", 1), Int(long+"2", 2))
		}, "i", `{"` + strings.Repeat("k", MaxStringLen) + `…[truncated 1 bytes]":2}`},
		{"no key repeated", false, func(tr *Tracer) {
			tr.Instant("distinct", Int("b", 1), Int("a", 2), Int("c", 3))
		}, "i", `{"b":1,"a":2,"c":3}`},
		{"a LongSpan's B and E are two events", false, func(tr *Tracer) {
			tr.LongSpan("long", Int("k", 1), Int("k", 2))(Int("k", 3))
		}, "B", `{"k":2}`},
		{"a lane's goroutine arg", true, func(tr *Tracer) {
			tr.Instant("on a lane", Int("goroutine", -1))
		}, "i", `{"goroutine":-1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts []Option
			if tt.lanes {
				opts = append(opts, WithLanes())
			}
			tr, path := newTestTracer(t, opts...)
			tt.rec(tr)
			require.NoError(t, tr.Close())
			readClosed(t, path) // strict JSON
			var lines []string
			for _, l := range strings.Split(readFile(t, path), "\n") {
				if strings.Contains(l, `"ph":"`+tt.ph+`"`) && strings.Contains(l, `"args":`) {
					lines = append(lines, l)
				}
			}
			require.Len(t, lines, 1, "the event must be in the file once")
			assert.Contains(t, lines[0], `"args":`+tt.args+`}`)
		})
	}
}

// TestTimeArg: Time shows any time.Time, to the nanosecond where int64
// nanoseconds hold it (1678 to 2262) and to the second beyond (the zero
// Time, an unset deadline, among them), never a wrapped-around date.
func TestTimeArg(t *testing.T) {
	tests := []struct {
		name string
		at   time.Time
		want string
	}{
		{"zero", time.Time{}, "0001-01-01T00:00:00Z"},
		{"year 3000", time.Date(3000, 1, 2, 3, 4, 5, 6, time.UTC), "3000-01-02T03:04:05Z"},
		{"year 1600", time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC), "1600-01-01T00:00:00Z"},
		{"latest in nanoseconds", time.Unix(0, math.MaxInt64), "2262-04-11T23:47:16.854775807Z"},
		{"earliest in nanoseconds", time.Unix(0, math.MinInt64), "1677-09-21T00:12:43.145224192Z"},
		{"just past the latest", time.Unix(0, math.MaxInt64).Add(time.Second), "2262-04-11T23:47:17Z"},
		{"in another zone", time.Date(2026, 11, 23, 12, 30, 0, 1, time.FixedZone("CET", 3600)), "2026-11-23T11:30:00.000000001Z"},
	}
	tr, path := newTestTracer(t)
	for _, tt := range tests {
		tr.Instant(tt.name, Time("at", tt.at))
	}
	require.NoError(t, tr.Close())
	evs := readClosed(t, path)
	for _, tt := range tests {
		assert.Equal(t, tt.want, find(t, evs, "i", tt.name).Args["at"], tt.name)
	}
}

// countingStringer counts its String calls; a nil one panics, as a method
// on a nil pointer does.
type countingStringer struct {
	text  string
	calls atomic.Int32
}

func (c *countingStringer) String() string {
	c.calls.Add(1)
	return c.text
}

// panicky's String method panics.
type panicky struct{}

func (panicky) String() string { panic("no text") }

// TestStringerArg: Stringer is formatted when the event is recorded, and
// only then, and a nil or panicking Stringer gives the text fmt would
// (issue 11 item 2).
func TestStringerArg(t *testing.T) {
	var log errorLog
	tr, path := newTestTracer(t, WithCategories("on"), WithErrorHandler(log.handle))
	addr, skipped := &countingStringer{text: "10.0.0.1:443 \"quoted\""}, &countingStringer{text: "never"}
	var nilPtr *countingStringer
	tr.Span("dial", Stringer("addr", addr), Stringer("nil", nil), Stringer("nil pointer", nilPtr), Stringer("panics", panicky{}))()
	tr.Instant("filtered", Category("off"), Stringer("x", skipped))
	tr.Counter("load", Stringer("x", skipped))
	require.NoError(t, tr.Close())

	assert.Equal(t, map[string]any{
		"addr": "10.0.0.1:443 \"quoted\"", "nil": "<nil>", "nil pointer": "<nil>",
		"panics": "%!v(PANIC=String method: no text)",
	}, find(t, readClosed(t, path), "X", "dial").Args)
	assert.Equal(t, int32(1), addr.calls.Load(), "called once")
	assert.Zero(t, skipped.calls.Load(), "not called for an event not recorded")
	assert.Equal(t, uint64(2), tr.Stats().Refused, "a counter series must be a number: the series, and the counter left with none")

	off := &countingStringer{text: "off"}
	Span("no default tracer", Stringer("x", off))()
	assert.Zero(t, off.calls.Load())
	if raceEnabled {
		return
	}
	tr2, _ := newTestTracer(t)
	assert.Zero(t, allocsPerRun(1000, func() { tr2.Instant("x", Stringer("addr", addr)) }))
}
