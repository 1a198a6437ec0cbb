package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gotracer/tracer/cmd/tracer/internal/trace"
	"github.com/gotracer/tracer/internal/tracecheck"
	"github.com/gotracer/tracer/internal/tracefile"
	"github.com/klauspost/compress/gzip"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// strictEvents parses a file as strict JSON, as a gzip file's first
// member only (all chrome://tracing reads), and returns its events.
func strictEvents(t *testing.T, path string) []map[string]any {
	t.Helper()
	data := readPlain(t, path)
	// A cleanly closed plain file is the object form, and so is what
	// repair writes of one, with the members beside the events.
	if trimmed := bytes.TrimSpace(data); len(trimmed) > 0 && trimmed[0] == '{' {
		var obj map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(data, &obj), "must be strict JSON")
		var evs []map[string]any
		require.NoError(t, json.Unmarshal(obj["traceEvents"], &evs), "must hold traceEvents")
		return evs
	}
	var evs []map[string]any
	require.NoError(t, json.Unmarshal(data, &evs), "must be strict JSON")
	return evs
}

func count(evs []map[string]any, ph, name string) int {
	n := 0
	for _, e := range evs {
		if e["ph"] == ph && (name == "" || e["name"] == name) {
			n++
		}
	}
	return n
}

func TestRepairTorn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := writeFile(t, dir, "torn.json", "[\n"+ev+"\n"+ev+",\n"+`{"name":"a","ph":"X","ts":1,"du`)
	before, err := os.ReadFile(in)
	require.NoError(t, err)
	code, stdout, stderr := runCmd("repair", in)
	require.Equal(t, 0, code, stderr)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "torn.json:3: fixed: no comma between two events")
	assert.Contains(t, stderr, "torn.json:4: dropped: the file ends inside an event")
	assert.Contains(t, stderr, "wrote 2 events to "+filepath.Join(dir, "torn.repaired.json"))
	assert.Len(t, strictEvents(t, filepath.Join(dir, "torn.repaired.json")), 2)
	after, err := os.ReadFile(in)
	require.NoError(t, err)
	assert.Equal(t, before, after, "the input is left alone without -i")

	// To standard output.
	code, stdout, _ = runCmd("repair", "-q", "-o", "-", in)
	require.Equal(t, 0, code)
	var evs []any
	require.NoError(t, json.Unmarshal([]byte(stdout), &evs))
	assert.Len(t, evs, 2)
}

func TestRepairInPlace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := writeFile(t, dir, "t.json", "[\n"+ev+",\n"+`{"name":"caf`+"\xff"+`","ph":"i","ts":1,"pid":1,"tid":1},`+"\n"+`{"na`)
	st, err := os.Stat(in)
	require.NoError(t, err)
	code, _, stderr := runCmd("repair", "-i", in)
	require.Equal(t, 0, code, stderr)
	evs := strictEvents(t, in)
	require.Len(t, evs, 2)
	assert.Equal(t, "caf\ufffd", evs[1]["name"])
	st2, err := os.Stat(in)
	require.NoError(t, err)
	assert.False(t, os.SameFile(st, st2), "replaced by a rename, not rewritten in place")
	leftovers, _ := filepath.Glob(filepath.Join(dir, ".*tmp"))
	assert.Empty(t, leftovers)
	code, _, _ = runCmd("check", in)
	assert.Equal(t, 0, code)
}

// TestRepairCrashed repairs the files of a process killed by SIGKILL, plain
// and gzip, and loads the results in both real importers.
func TestRepairCrashed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plain := crashed(t, filepath.Join(dir, "crashed.json"))
	gz := crashed(t, filepath.Join(dir, "crashed.json.gz"))
	cutGz := cut(t, generate(t, filepath.Join(dir, "cut.json.gz"), 1<<20))
	var outs []string
	for _, in := range []string{plain, gz, cutGz} {
		out := repairedName(in)
		code, _, stderr := runCmd("repair", "-close-open", in)
		require.Equal(t, 0, code, stderr)
		evs := strictEvents(t, out) // a gzip output is one member: all of it is read
		assert.Greater(t, len(evs), 100)
		outs = append(outs, out)
		// The tracer package's file: written as the object a clean
		// Close of a plain file writes, its times read to the
		// nanosecond by chrome://tracing.
		assert.True(t, bytes.HasPrefix(readPlain(t, out), []byte(`{"displayTimeUnit":"ns","traceEvents":[`+"\n")), "%s", out)
		// A file cut short holds flow events whose enclosing span ended
		// after the cut (a span is written when it ends, or as a B event
		// once it is older than a flush interval): repair cannot bring
		// that span back, and check may say so. Nothing else may be wrong.
		problems, _, err := checkFile(out, true, func(tracefile.Problem) {})
		require.NoError(t, err)
		for k := range problems {
			assert.Equal(t, trace.KindFlow, k, "%v", problems)
		}
		if in != cutGz {
			// The lifetime span was open: -close-open ends it.
			assert.Equal(t, 1, count(evs, "B", "lifetime"))
			assert.Equal(t, 1, count(evs, "E", "lifetime"))
			assert.Contains(t, stderr, "closed ")
		}
	}
	if heavyRun() {
		importers(t, outs...)
	}
}

// readPlain returns the contents of the file at path, gunzipped if its
// name ends in .gz (its first member).
func readPlain(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		require.NoError(t, err)
		zr.Multistream(false)
		data, err = io.ReadAll(zr)
		require.NoError(t, err)
	}
	return data
}

// TestRepairSubMicrosecondSiblings repairs a file in the form the tracer
// package leaves when it is killed (spaces, then the bare array, its
// process metadata first, cut after an event) holding a span with ten
// back-to-back children of 300 ns: chrome://tracing reads the bare array
// to the microsecond and draws the children as a staircase, ten levels
// deep; the repair is the object a clean Close writes, with
// "displayTimeUnit":"ns", and both viewers show them one level under
// their parent. A bare array of another producer (no anchor in its
// process metadata: its times are microseconds) stays one.
func TestRepairSubMicrosecondSiblings(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString(strings.Repeat(" ", len(`{"displayTimeUnit":"ns","traceEvents":`)) + "[\n")
	b.WriteString(`{"name":"process_name","ph":"M","pid":7,"tid":0,"args":{"name":"svc","ts0_wall":"2026-11-27T15:11:44.109195149Z","ts0_unix_ns":1795792304109195149,"ts0_mono_ns":25799239046074}},` + "\n")
	for i := range 10 {
		fmt.Fprintf(&b, `{"name":"sibling","ph":"X","ts":%s,"dur":0.300,"pid":7,"tid":3},`+"\n", tracefile.AppendMicros(nil, int64(10_000+300*i)))
	}
	b.WriteString(`{"name":"parent","ph":"X","ts":9.900,"dur":3.300,"pid":7,"tid":3},` + "\n")
	dir := t.TempDir()
	killed := writeFile(t, dir, "killed.json", b.String())
	other := writeFile(t, dir, "other.json", strings.Replace(b.String(), `"ts0_unix_ns"`, `"started_ns"`, 1))
	repaired := filepath.Join(dir, "repaired.json")
	code, _, stderr := runCmd("repair", "-o", repaired, killed)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "as the object a clean Close writes")
	data := readPlain(t, repaired)
	require.True(t, bytes.HasPrefix(data, []byte(`{"displayTimeUnit":"ns","traceEvents":[`+"\n")), "%.60s", data)
	var obj struct {
		DisplayTimeUnit string            `json:"displayTimeUnit"`
		TraceEvents     []json.RawMessage `json:"traceEvents"`
	}
	require.NoError(t, json.Unmarshal(data, &obj), "strict JSON")
	assert.Equal(t, "ns", obj.DisplayTimeUnit)
	assert.Equal(t, strictEvents(t, writeFile(t, dir, "terminated.json", string(terminated([]byte(b.String()))))), strictEvents(t, repaired), "every event kept")

	otherOut := filepath.Join(dir, "other.repaired.json")
	code, _, stderr = runCmd("repair", "-o", otherOut, other)
	require.Equal(t, 0, code, stderr)
	assert.True(t, bytes.HasPrefix(readPlain(t, otherOut), []byte("[\n")), "another producer's array stays one")

	// The deepest level of thread 3 in each viewer.
	depth := func(r tracecheck.Report) (perfetto, catapult int) {
		perfetto, catapult = -1, -1
		tracks, _ := r["slice_tracks"].([]any)
		for _, tk := range tracks {
			if m := tk.(map[string]any); m["tid"] == 3.0 && m["track_type"] == "thread_execution" {
				perfetto = int(m["max_depth"].(float64))
			}
		}
		procs, _ := r["processes"].([]any)
		for _, p := range procs {
			threads, _ := p.(map[string]any)["threads"].([]any)
			for _, th := range threads {
				if m := th.(map[string]any); m["tid"] == 3.0 {
					catapult = int(m["maxDepth"].(float64))
				}
			}
		}
		return perfetto, catapult
	}
	pf, cat := tracecheck.Load(t, killed, repaired, otherOut)
	for i := range pf {
		require.Equal(t, true, pf[i]["ok"], "%v", pf[i]["error"])
		require.Equal(t, true, cat[i]["ok"], "%v", cat[i]["error"])
	}
	p, _ := depth(pf[0])
	_, c := depth(cat[0])
	assert.Equal(t, 1, p, "Perfetto, the killed file: the siblings one level under the parent")
	assert.Greater(t, c, 1, "the premise: chrome://tracing draws the killed file's siblings as a staircase")
	p, _ = depth(pf[1])
	_, c = depth(cat[1])
	assert.Equal(t, 1, p, "Perfetto, the repaired file")
	assert.Equal(t, 1, c, "chrome://tracing, the repaired file: the siblings one level under the parent, not a staircase")
	_, c = depth(cat[2])
	assert.Greater(t, c, 1, "another producer's array, at the microseconds it is in")
}

// TestRepairClosesOpenAsyncs checks that -close-open ends async slices
// still open (a file cut between an async b and its e, as a crash leaves
// it), each with an e that both viewers pair with its b: same name,
// category, scope and id, id2.local or id as the b had it.
func TestRepairClosesOpenAsyncs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := writeFile(t, dir, "cut.json", "[\n"+
		`{"name":"upload","cat":"io","ph":"b","ts":10,"pid":7,"tid":3,"id2":{"local":"0x2eb"}},`+"\n"+
		`{"name":"fetch","cat":"net","ph":"b","ts":11,"pid":7,"tid":4,"scope":"db","id":"0x1"},`+"\n"+
		`{"name":"done","cat":"net","ph":"b","ts":12,"pid":7,"tid":4,"id":"0x2"},`+"\n"+
		`{"name":"done","cat":"net","ph":"e","ts":13,"pid":7,"tid":4,"id":"0x2"},`+"\n"+
		`{"name":"step","ph":"X","ts":20,"dur":5,"pid":7,"tid":3},`+"\n")
	out := filepath.Join(dir, "repaired.json")
	code, _, stderr := runCmd("repair", "-close-open", "-o", out, in)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "closed 2 open spans")
	evs := strictEvents(t, out)
	ends := map[string]map[string]any{}
	for _, e := range evs {
		if e["ph"] == "e" && e["args"] != nil {
			ends[e["name"].(string)] = e
		}
	}
	require.Len(t, ends, 2)
	assert.Equal(t, map[string]any{"local": "0x2eb"}, ends["upload"]["id2"])
	assert.Equal(t, "io", ends["upload"]["cat"])
	assert.EqualValues(t, 25, ends["upload"]["ts"], "at the last timestamp")
	assert.Equal(t, "0x1", ends["fetch"]["id"])
	assert.Equal(t, "db", ends["fetch"]["scope"])
	problems, _, err := checkFile(out, true, func(tracefile.Problem) {})
	require.NoError(t, err)
	assert.Empty(t, problems)
	if heavyRun() {
		importers(t, out)
	}

	code, _, stderr = runCmd("repair", "-o", filepath.Join(dir, "kept.json"), in)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "left 2 spans open (-close-open ends them)")
}

// importers loads files in Perfetto's trace_processor and in catapult
// (chrome://tracing) with the tools in ../shared/importers, and checks
// that both load them without error.
func importers(t *testing.T, files ...string) {
	t.Helper()
	dir := os.Getenv("TRACER_IMPORTERS")
	if dir == "" {
		dir = "../../../shared/importers"
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "playwright-core")); err != nil {
		t.Skipf("the importers are not set up (%v): run %s/setup", err, dir)
	}
	if err := exec.Command(filepath.Join(dir, "perfetto", "trace_processor_shell"), "--version").Run(); err != nil {
		t.Skipf("trace_processor_shell does not run (%v): run %s/setup", err, dir)
	}
	if _, err := exec.LookPath("chromium"); err != nil {
		t.Skipf("no chromium for catapult-check (%v): run %s/setup", err, dir)
	}
	type result struct {
		File     string `json:"file"`
		OK       bool   `json:"ok"`
		Error    any    `json:"error"`
		Warnings []struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"warnings"`
	}
	for _, tool := range []string{"perfetto-check", "catapult-check"} {
		// One run for all the files: catapult-check starts a browser.
		out, err := exec.Command(filepath.Join(dir, tool), append([]string{"--brief"}, files...)...).Output()
		require.NoError(t, err, "%s: %.2000s", tool, out)
		var res []result
		if len(files) == 1 {
			res = make([]result, 1)
			err = json.Unmarshal(out, &res[0])
		} else {
			err = json.Unmarshal(out, &res)
		}
		require.NoError(t, err, "%.2000s", out)
		require.Len(t, res, len(files))
		for _, r := range res {
			assert.True(t, r.OK, "%s %s", tool, r.File)
			assert.Nil(t, r.Error, "%s %s", tool, r.File)
			// A flow event whose span was never written (it ended after
			// the cut, or was open at the kill) binds to no slice. (Read
			// to the microsecond, as the bare array was, catapult also
			// nested the workload's back-to-back spans of tens of
			// nanoseconds into each other, moving flows off their
			// slices: about 70 warnings a file, where the repair's
			// object form, with displayTimeUnit ns, has none or few.)
			for _, w := range r.Warnings {
				assert.True(t, strings.HasPrefix(w.Type, "flow_slice_"), "%s %s: %s", tool, r.File, w.Message)
			}
		}
	}
}

// TestRepairKeepsWhatPerfettoReads repairs files that are not JSON but
// that Perfetto reads whole (chrome://tracing refuses them): the repair
// keeps every event, as strict JSON, and Perfetto finds the same slices
// in it as in the input.
func TestRepairKeepsWhatPerfettoReads(t *testing.T) {
	t.Parallel()
	x := func(name string, ts int, args string) string {
		return `{"name":"` + name + `","ph":"X","ts":` + itoa(ts) + `,"dur":1,"pid":1,"tid":1` + args + `}`
	}
	tests := map[string]struct {
		content string
		events  int
	}{
		"comma in args, one line": {"[" + x("a", 1, `,"args":{"k":1,}`) + "," + x("b", 3, "") + "]", 2},
		"commas in nested args":   {"[\n" + x("a", 1, `,"args":{"k":[1,2,],"m":{"x":1,},}`) + ",\n" + x("b", 3, "") + "\n]", 2},
		"raw newline in a name":   {"[" + x("a\nb", 1, "") + "," + x("c", 3, "") + "]", 2},
		"raw tab in an arg":       {"[\n" + x("a", 1, `,"args":{"s":"x`+"\t"+`y"}`) + ",\n" + x("b", 3, "") + "\n]", 2},
	}
	dir := t.TempDir()
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			in := writeFile(t, dir, strings.ReplaceAll(name, " ", "_")+".json", tt.content)
			out := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".out.json")
			code, _, stderr := runCmd("repair", "-o", out, in)
			require.Equal(t, 0, code, stderr)
			assert.Contains(t, stderr, "fixed: ")
			assert.Contains(t, stderr, "rewrote 1 events as JSON")
			evs := strictEvents(t, out)
			require.Len(t, evs, tt.events)
			code, stdout, _ := runCmd("check", out)
			assert.Equal(t, 0, code, stdout)

			const q = "select count(*) as n, group_concat(name, '|') as names from slice;"
			assert.Equal(t, tracecheck.Query(t, in, q), tracecheck.Query(t, out, q), "Perfetto's slices")
		})
	}
}

// TestRepairCorpusKeepsPerfettoSlices repairs every file of other tools'
// making that Perfetto loads, and checks that Perfetto finds in the
// repaired file every slice it found in the file itself.
func TestRepairCorpusKeepsPerfettoSlices(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join(corpusDir, "verdicts.json"))
	require.NoError(t, err)
	var verdicts map[string]verdict
	require.NoError(t, json.Unmarshal(data, &verdicts))
	dir := t.TempDir()
	const q = "select count(*) as n, coalesce(sum(dur), 0) as total from slice where dur >= 0;"
	for i, name := range slices.Sorted(maps.Keys(verdicts)) {
		if v := verdicts[name]; !sampled(i) || v.Perfetto == "refuses the file" || v.Perfetto == "shows nothing" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			in := filepath.Join(corpusDir, name)
			out := filepath.Join(dir, name)
			code, _, stderr := runCmd("repair", "-q", "-o", out, in)
			require.Equal(t, 0, code, stderr)
			strictEvents(t, out)
			assert.Equal(t, tracecheck.Query(t, in, q), tracecheck.Query(t, out, q))
		})
	}
}

// TestRepairInPlaceCrashed: a file cut by SIGKILL ends on an event
// boundary with its array open, which repair -i closes (the README's
// use), rather than calling it nothing to repair.
func TestRepairInPlaceCrashed(t *testing.T) {
	t.Parallel()
	path := crashed(t, filepath.Join(t.TempDir(), "killed.json"))
	before, err := os.ReadFile(path)
	require.NoError(t, err)
	code, _, stderr := runCmd("repair", "-i", path)
	require.Equal(t, 0, code, stderr)
	assert.NotContains(t, stderr, "nothing to repair")
	assert.Contains(t, stderr, "closed the array a crash left open, as the object a clean Close writes")
	assert.True(t, bytes.HasPrefix(readPlain(t, path), []byte(`{"displayTimeUnit":"ns","traceEvents":[`+"\n")))
	evs := strictEvents(t, path)
	// Every event of the cut file is kept: the repair only closes it.
	want := strictEvents(t, writeFile(t, t.TempDir(), "terminated.json", string(terminated(before))))
	assert.Equal(t, want, evs)
}

// terminated returns a trace cut on an event boundary closed as the
// viewers close it.
func terminated(data []byte) []byte {
	out, _ := tracefile.Terminate(data)
	return out
}

// TestRepairKeepsSystemTraceEvents: the object form's other members
// (Chromium's systemTraceEvents, which both viewers read, its metadata)
// are kept beside the repaired events.
func TestRepairKeepsSystemTraceEvents(t *testing.T) {
	t.Parallel()
	sys := `# tracer: nop\n#\n           app-1234  [000] ...1   100.000000: tracing_mark_write: B|1234|work\n           app-1234  [000] ...1   100.001000: tracing_mark_write: E|1234\n`
	in := writeFile(t, t.TempDir(), "chrome.json", `{"traceEvents": [`+"\n"+
		`{"name": "a", "ph": "X", "ts": 0, "dur": 5, "pid": 1, "tid": 1},`+"\n"+
		`{"name": "bad", "ph": "X", "ts": 1, "dur": 1, "pid": 1, "tid": 1, "args": {"s": "a	tab"}}],`+"\n"+
		`"systemTraceEvents": "`+sys+`", "metadata": {"clock-domain": "LINUX_CLOCK_MONOTONIC"}}`)
	out := filepath.Join(t.TempDir(), "out.json")
	code, _, stderr := runCmd("repair", "-o", out, in)
	require.Equal(t, 0, code, stderr)
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	var obj struct {
		TraceEvents       []map[string]any `json:"traceEvents"`
		SystemTraceEvents string           `json:"systemTraceEvents"`
		Metadata          map[string]any   `json:"metadata"`
	}
	require.NoError(t, json.Unmarshal(data, &obj), "strict JSON")
	assert.Len(t, obj.TraceEvents, 2)
	assert.Contains(t, obj.SystemTraceEvents, "tracing_mark_write: B|1234|work")
	assert.Equal(t, "LINUX_CLOCK_MONOTONIC", obj.Metadata["clock-domain"])
	const q = "select name, ts, dur from slice order by ts;"
	assert.Equal(t, tracecheck.Query(t, in, q), tracecheck.Query(t, out, q), "Perfetto's slices, the system trace's among them")
}

// TestRepairCloseOpenAtLastTS: a B at the last ts of a file that has X
// events is ended where Perfetto sees its E after it (it sorts an E
// before a B of its ts, which would leave the slice open), and spans
// open around it end no earlier.
func TestRepairCloseOpenAtLastTS(t *testing.T) {
	t.Parallel()
	for _, ts := range []string{"20", "1800000000000000"} { // relative, and absolute microseconds
		t.Run(ts, func(t *testing.T) {
			in := writeFile(t, t.TempDir(), "open.json", "[\n"+
				`{"name":"x","ph":"X","ts":1,"dur":2,"pid":1,"tid":1},`+"\n"+
				`{"name":"outer","ph":"B","ts":5,"pid":1,"tid":1},`+"\n"+
				`{"name":"inner","ph":"B","ts":`+ts+`,"pid":1,"tid":1},`+"\n")
			out := filepath.Join(t.TempDir(), "out.json")
			code, _, stderr := runCmd("repair", "-close-open", "-o", out, in)
			require.Equal(t, 0, code, stderr)
			rows := tracecheck.Query(t, out, "select name, depth, dur from slice order by ts;")
			require.Len(t, rows, 3)
			for _, r := range rows {
				assert.NotEqual(t, "-1", r["dur"], "%s left open", r["name"])
			}
			assert.Equal(t, "inner", rows[2]["name"])
			assert.Equal(t, "1", rows[2]["depth"], "inner still nested in outer")
		})
	}
}
