package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gotracer/tracer"
	"github.com/gotracer/tracer/cmd/tracer/internal/trace"
	"github.com/gotracer/tracer/internal/tracefile"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ev is a well-formed X event on pid 1, tid 1.
const ev = `{"name":"a","ph":"X","ts":1,"dur":1,"pid":1,"tid":1}`

// TestCheckBroken runs check on a hand-made file for every problem it
// names, and checks the line and kind of what it reports.
func TestCheckBroken(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		content string
		line    int
		kind    tracefile.Kind
	}{
		{"syntax", "[\n" + ev + ",\n" + `{"name":"a","ph":"X","ts":1,,"pid":1},` + "\n" + ev + ",\n", 3, tracefile.KindSyntax},
		{"torn last line", "[\n" + ev + ",\n" + `{"name":"a","ph":"X","t`, 3, tracefile.KindTorn},
		{"invalid UTF-8", "[\n" + `{"name":"caf` + "\xe9" + `","ph":"i","ts":1,"pid":1,"tid":1}` + ",\n", 2, tracefile.KindUTF8},
		{"control character", "[\n" + ev + ",\n" + `{"name":"a` + "\x07" + `","ph":"i","ts":1,"pid":1,"tid":1}` + ",\n", 3, tracefile.KindStrict},
		{"raw newline in a string", "[" + `{"name":"a` + "\n" + `b","ph":"X","ts":1,"dur":1,"pid":1,"tid":1}` + "]", 1, tracefile.KindStrict},
		{"comma before } in args", "[\n" + `{"name":"a","ph":"X","ts":1,"dur":1,"pid":1,"tid":1,"args":{"k":1,}}` + "\n]", 2, tracefile.KindStrict},
		{"systemTraceEvents not a string", `{"traceEvents":[` + ev + `],` + "\n" + `"systemTraceEvents":{}}`, 2, tracefile.KindFraming},
		{"legacy T event", "[\n" + ev + ",\n" + `{"name":"op","cat":"c","ph":"T","id":1,"ts":2,"pid":1,"tid":1}` + "\n]", 3, trace.KindPhase},
		{"S without id", "[\n" + ev + ",\n" + `{"name":"op","cat":"c","ph":"S","ts":2,"pid":1,"tid":1}` + "\n]", 3, trace.KindAsync},
		{"X without pid", "[\n" + ev + ",\n" + `{"name":"a","ph":"X","ts":1,"dur":1,"tid":1}` + "\n]", 3, trace.KindPid},
		{"E of no open B", "[\n" + `{"name":"a","ph":"B","ts":5,"pid":1,"tid":1},` + "\n" + `{"name":"b","ph":"E","ts":6,"pid":1,"tid":1}` + "\n]", 3, trace.KindNesting},
		{"B and E across the end of an X", "[\n" + `{"name":"x","ph":"X","ts":0,"dur":5,"pid":1,"tid":1},` + "\n" + `{"name":"b","ph":"B","ts":1,"pid":1,"tid":1},` + "\n" + `{"name":"b","ph":"E","ts":10,"pid":1,"tid":1}` + "\n]", 3, trace.KindNesting},
		{"flow duplicate id", "[\n" + `{"name":"a","ph":"X","ts":0,"dur":5,"pid":1,"tid":1},` + "\n" + `{"name":"f","cat":"c","ph":"s","id":1,"ts":1,"pid":1,"tid":1},` + "\n" + `{"name":"f","cat":"c","ph":"s","id":1,"ts":2,"pid":1,"tid":1}` + "\n]", 4, trace.KindFlow},
		{"negative ts", "[\n" + ev + ",\n" + `{"name":"a","ph":"X","ts":-5,"dur":1,"pid":1,"tid":1}` + "\n]", 3, trace.KindTS},
		{"ts a string of no number", "[\n" + ev + ",\n" + `{"name":"a","ph":"X","ts":"+5","dur":1,"pid":1,"tid":1}` + "\n]", 3, trace.KindTS},
		{"deeper than 512", "[\n" + strings.Repeat(`{"name":"r","ph":"B","ts":1,"pid":1,"tid":1},`+"\n", 600) + strings.Repeat(`{"name":"r","ph":"E","ts":2,"pid":1,"tid":1},`+"\n", 600), 89, trace.KindDepth}, // the B of the slice 513 levels high
		{"no [{ at the start", "[" + strings.Repeat(" ", 200) + ev + "]", 1, tracefile.KindDetect},
		{"only [", "[\n", 1, tracefile.KindDetect},
		{"negative pid", "[\n" + `{"name":"a","ph":"i","ts":1,"pid":-1,"tid":1}` + "\n]", 2, trace.KindIDs},
		{"tid above 2^32", "[\n" + ev + ",\n" + `{"name":"a","ph":"i","ts":1,"pid":1,"tid":4294967296}` + "\n]", 3, trace.KindIDs},
		{"E without B", "[\n" + ev + ",\n" + `{"name":"a","ph":"E","ts":5,"pid":1,"tid":1}` + "\n]", 3, trace.KindNesting},
		{"E before its B", "[\n" + `{"name":"a","ph":"B","ts":5,"pid":1,"tid":1},` + "\n" + `{"name":"a","ph":"E","ts":4,"pid":1,"tid":1}` + "\n]", 3, trace.KindNesting},
		{"E of another span", "[\n" + `{"name":"a","ph":"B","ts":5,"pid":1,"tid":1},` + "\n" + `{"name":"b","ph":"E","ts":6,"pid":1,"tid":1}` + "\n]", 3, trace.KindNesting},
		{"overlapping X", "[\n" + ev + ",\n" + `{"name":"b","ph":"X","ts":1.5,"dur":1,"pid":1,"tid":1}` + "\n]", 3, trace.KindOverlap},
		{"async e without b", "[\n" + ev + ",\n" + `{"name":"op","cat":"c","ph":"e","ts":2,"pid":1,"tid":1,"id2":{"local":"0x1"}}` + "\n]", 3, trace.KindAsync},
		{"async without cat", "[\n" + ev + ",\n" + `{"name":"op","ph":"b","ts":2,"pid":1,"tid":1,"id":1}` + "\n]", 3, trace.KindAsync},
		{"flow outside slices", "[\n" + ev + ",\n" + `{"name":"f","ph":"s","ts":9,"pid":1,"tid":1,"id":1}` + "\n]", 3, trace.KindFlow},
		{"unknown phase", "[\n" + ev + ",\n" + `{"name":"a","ph":"Q","ts":2,"pid":1,"tid":1}` + "\n]", 3, trace.KindPhase},
		{"no phase", "[\n" + ev + ",\n" + `{"name":"a","ts":2,"pid":1,"tid":1}` + "\n]", 3, trace.KindPhase},
		{"no ts", "[\n" + ev + ",\n" + `{"name":"a","ph":"i","pid":1,"tid":1}` + "\n]", 3, trace.KindTS},
		{"counter with a string", "[\n" + ev + ",\n" + `{"name":"c","ph":"C","ts":2,"pid":1,"args":{"v":"1x"}}` + "\n]", 3, trace.KindCounter},
		{"missing comma", "[\n" + ev + "\n" + ev + "\n]", 3, tracefile.KindFraming},
		{"comma before ]", "[\n" + ev + ",\n]", 3, tracefile.KindFraming},
		{"text after the array", "[\n" + ev + "\n]\nxyz", 4, tracefile.KindFraming},
		{"unterminated traceEvents", `{"traceEvents":[` + "\n" + ev + ",\n", 3, tracefile.KindFraming},
		{"not a trace", "hello", 1, tracefile.KindNotJSON},
		{"byte order mark", "\xef\xbb\xbf[\n" + ev + "\n]", 1, tracefile.KindFraming},
		{"empty", "", 1, tracefile.KindFraming},
	}
	dir := t.TempDir()
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, dir, strings.ReplaceAll(tt.name, " ", "_")+".json", tt.content)
			var got []tracefile.Problem
			problems, _, err := checkFile(path, true, func(p tracefile.Problem) { got = append(got, p) })
			require.NoError(t, err)
			require.NotEmpty(t, got, "case %d", i)
			assert.Equal(t, tt.kind, got[0].Kind, "%v", got)
			assert.Equal(t, tt.line, got[0].Line, "%v", got)
			assert.NotZero(t, problems[tt.kind])
			assert.NotContains(t, got[0].Msg, "\n", "one line")

			code, stdout, stderr := runCmd("check", path)
			assert.Equal(t, 1, code)
			assert.Contains(t, stdout, path+":"+itoa(tt.line)+": ")
			assert.Empty(t, stderr)
		})
	}
}

// TestCheckAccepts runs check on hand-made files that are not as the
// tracer package writes them but that both viewers load whole: check
// must find nothing.
func TestCheckAccepts(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"pretty-printed":           "[\n  {\n    \"name\": \"a\",\n    \"ph\": \"X\",\n    \"ts\": 1,\n    \"dur\": 2,\n    \"pid\": 1,\n    \"tid\": 1\n  }\n]",
		"white space first":        strings.Repeat(" ", 100) + "[" + ev + "]",
		"numbers in strings":       `[{"name":"a","ph":"X","ts":"100.5","dur":"2","pid":1,"tid":1},{"name":"b","ph":"X","ts":"2e2","dur":1,"pid":1,"tid":1}]`,
		"counter values strings":   `[{"name":"c","ph":"C","ts":1,"pid":1,"args":{"v":".75"}},{"name":"c","ph":"C","ts":2,"pid":1,"args":{"v":"+10.5"}},{"name":"c","ph":"C","ts":3,"pid":1,"args":{"v":"050"}}]`,
		"systemTraceEvents":        `{"traceEvents":[` + ev + `],"systemTraceEvents":"# tracer: nop\n"}`,
		"E without name":           `[{"name":"a","ph":"B","ts":1,"pid":1,"tid":1},{"ph":"E","ts":2,"pid":1,"tid":1}]`,
		"global instant, no pid":   `[` + ev + `,{"name":"g","ph":"i","s":"g","ts":1}]`,
		"512 deep":                 "[" + strings.Repeat(`{"name":"r","ph":"B","ts":1,"pid":1,"tid":1},`, 512) + strings.Repeat(`{"name":"r","ph":"E","ts":2,"pid":1,"tid":1},`, 511) + `{"name":"r","ph":"E","ts":2,"pid":1,"tid":1}]`,
		"zero-length at the end":   `[{"name":"p","ph":"X","ts":0,"dur":5,"pid":1,"tid":1},{"name":"c","ph":"X","ts":5,"dur":0,"pid":1,"tid":1}]`,
		"unknown top-level member": `{"otherData":{"v":1},"traceEvents":[` + ev + `],"metadata":{"x":[1]}}`,
	}
	dir := t.TempDir()
	for name, content := range tests {
		t.Run(name, func(t *testing.T) {
			path := writeFile(t, dir, strings.ReplaceAll(name, " ", "_")+".json", content)
			var got []tracefile.Problem
			_, _, err := checkFile(path, true, func(p tracefile.Problem) { got = append(got, p) })
			require.NoError(t, err)
			assert.Empty(t, got)
		})
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestCheckLibraryFiles checks the files the tracer package writes:
// closed, plain and gzip, rotated, and left by a process killed with
// SIGKILL. Only the gzip file of a killed process has a problem it must
// have: it is in several members, of which chrome://tracing reads the
// first. A file that holds part of a timeline (a rotated file, a file cut
// short, the file of a killed process) may also hold flow events whose
// enclosing span ends after its end, which the viewers draw without an
// arrow, and (cut short, or killed) the begin of an async operation whose
// end it lost, which chrome://tracing warns of: check says so.
func TestCheckLibraryFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rotated := generate(t, filepath.Join(dir, "rot.json"), 256<<10, tracer.WithMaxFileSize(64<<10))
	rotatedSet, err := filepath.Glob(filepath.Join(dir, "rot.*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, rotatedSet)
	type expect struct {
		want    tracefile.Kind   // must be found, if not ""
		allowed []tracefile.Kind // may be found
	}
	partial := []tracefile.Kind{trace.KindFlow}
	cutShort := []tracefile.Kind{trace.KindFlow, trace.KindAsync} // a rotated file ends its async operations
	files := map[string]expect{
		generate(t, filepath.Join(dir, "closed.json"), 1<<20):    {},
		generate(t, filepath.Join(dir, "closed.json.gz"), 1<<20): {},
		rotated:       {allowed: partial},
		rotatedSet[0]: {allowed: partial},
		crashed(t, filepath.Join(dir, "crashed.json")):    {allowed: cutShort},
		crashed(t, filepath.Join(dir, "crashed.json.gz")): {want: tracefile.KindMembers, allowed: cutShort},
		// A cut member also cuts the event it was in; a closed gzip file
		// is in the object form, which cut where an event ends is the
		// {"traceEvents":[ form cut, which neither viewer loads.
		cut(t, generate(t, filepath.Join(dir, "cut.json.gz"), 1<<20)): {want: tracefile.KindGzip, allowed: append(cutShort, tracefile.KindTorn, tracefile.KindFraming)},
	}
	for path, e := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			var got []tracefile.Problem
			problems, events, err := checkFile(path, true, func(p tracefile.Problem) { got = append(got, p) })
			require.NoError(t, err)
			assert.Positive(t, events)
			if e.want == "" && len(e.allowed) == 0 {
				assert.Empty(t, got)
				code, stdout, _ := runCmd("check", path)
				assert.Equal(t, 0, code, stdout)
				return
			}
			if e.want != "" {
				assert.NotZero(t, problems[e.want], "%v", got)
			}
			for k := range problems {
				assert.Contains(t, append([]tracefile.Kind{e.want}, e.allowed...), k, "%v", got)
			}
		})
	}
}

// TestCheckCutInsideAnAsyncEnd: a file cut (or a process killed) between
// an async operation's begin and its end, or inside the end, holds a "b"
// whose "e" it lost; chrome://tracing warns of it, and check says so
// (TestCheckLibraryFiles' cut file was once cut there).
func TestCheckCutInsideAnAsyncEnd(t *testing.T) {
	t.Parallel()
	b := `{"name":"upload","cat":"io","ph":"b","ts":2,"pid":1,"tid":1,"id2":{"local":"0x1"}},`
	e := `{"name":"upload","cat":"io","ph":"e","ts":3,"pid":1,"tid":1,"id2":{"local":"0x1"}},`
	dir := t.TempDir()
	for name, content := range map[string]string{
		"before the end": "[\n" + ev + ",\n" + b + "\n",
		"inside the end": "[\n" + ev + ",\n" + b + "\n" + e[:len(e)/2],
	} {
		t.Run(name, func(t *testing.T) {
			path := writeFile(t, dir, strings.ReplaceAll(name, " ", "_")+".json", content)
			var got []tracefile.Problem
			problems, _, err := checkFile(path, true, func(p tracefile.Problem) { got = append(got, p) })
			require.NoError(t, err)
			require.Equal(t, 1, problems[trace.KindAsync], "%v", got)
			for _, p := range got {
				if p.Kind == trace.KindAsync {
					assert.Equal(t, 3, p.Line, "the b's line")
					assert.Contains(t, p.Msg, `"upload" never ended`)
				}
			}
		})
	}
}

// cut cuts the gzip file at path in the middle of its member.
func cut(t *testing.T, path string) string {
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, data[:len(data)*2/3], 0o644))
	return path
}

func TestUsage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := writeFile(t, dir, "good.json", "[\n"+ev+"\n]\n")
	for _, tt := range []struct {
		args []string
		code int
		err  string
	}{
		{nil, 2, "usage:"},
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{[]string{"check"}, 2, "no file to check"},
		{[]string{"check", "-x", good}, 2, "flag provided but not defined"},
		{[]string{"check", filepath.Join(dir, "missing.json")}, 1, "no such file"},
		{[]string{"check", filepath.Join(dir, "missing.json"), good}, 1, "missing.json: no such file"},
		{[]string{"check", dir}, 1, "is a directory"},
		{[]string{"check", writeFile(t, dir, "cut.gz", "\x1f\x8b\x08")}, 1, "cut.gz: not a readable gzip file: unexpected EOF"},
		{[]string{"stats", writeFile(t, dir, "bin", "\xc3\x28garbage")}, 1, "no events read, and 1 problem: run tracer check"},
		{[]string{"repair"}, 2, "repair takes one file"},
		{[]string{"repair", "-i", "-o", "x", good}, 2, "exclude each other"},
		{[]string{"merge", good}, 2, "-o OUT is required"},
		{[]string{"merge", "-o", filepath.Join(dir, "m.json"), "-offset", "nope", good}, 2, "FILE=DURATION"},
		{[]string{"merge", "-o", filepath.Join(dir, "m.json"), "-offset", "other.json=1s", good}, 2, "not among the files"},
		{[]string{"stats"}, 2, "stats takes one file"},
		{[]string{"stats", "-sort", "colour", good}, 2, `-sort "colour"`},
		{[]string{"check", good}, 0, ""},
		{[]string{"help"}, 0, ""},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, _, stderr := runCmd(tt.args...)
			assert.Equal(t, tt.code, code, stderr)
			assert.Contains(t, stderr, tt.err)
			assert.NotContains(t, stderr, "panic")
			assert.NotContains(t, stderr, "goroutine ")
		})
	}
}

// TestCheckTimesAndDepths: a ts past what Perfetto holds is said to be
// that, not "negative"; args nested past what catapult reads are a
// problem, and past encoding/json's 10,000 levels still JSON.
func TestCheckTimesAndDepths(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	deep := func(n int) string {
		return `{"name":"x","ph":"X","ts":1,"dur":1,"pid":1,"tid":1,"args":{"a":` + strings.Repeat(`{"b":`, n) + "1" + strings.Repeat("}", n) + "}}"
	}
	for _, tc := range []struct {
		name, event, want string
	}{
		{"huge ts", `{"name":"x","ph":"X","ts":1e300,"dur":2,"pid":1,"tid":1}`, "past the latest time Perfetto holds"},
		{"overflowing ts", `{"name":"x","ph":"X","ts":9300000000000000,"dur":2,"pid":1,"tid":1}`, "past the latest time Perfetto holds"},
		{"deep args", deep(8000), "nested 8001 levels deep: chrome://tracing refuses the file"},
		{"args deeper than encoding/json", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := tc.event
			if ev == "" {
				ev = `{"name":"x","ph":"X","ts":1,"dur":1,"pid":1,"tid":1,"args":{"a":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + "}}"
			}
			path := writeFile(t, dir, "t.json", "[\n"+ev+",\n"+`{"name":"y","ph":"X","ts":5,"dur":1,"pid":1,"tid":1}`+"\n]\n")
			code, stdout, _ := runCmd("check", path)
			if tc.want == "" {
				assert.Equal(t, 0, code, stdout)
				return
			}
			assert.Equal(t, 1, code)
			assert.Contains(t, stdout, tc.want)
			assert.NotContains(t, stdout, "at a negative ts")
		})
	}
}
