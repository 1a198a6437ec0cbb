package tracefile

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readAll reads every event of a trace held in s, with the problems.
func readAll(t testing.TB, s string) ([]Event, []Problem) {
	t.Helper()
	var problems []Problem
	r := NewReader(strings.NewReader(s))
	r.OnProblem = func(p Problem) { problems = append(problems, p) }
	var evs []Event
	for {
		ev, err := r.Next()
		if err == io.EOF {
			return evs, problems
		}
		require.NoError(t, err)
		c := *ev
		c.Raw = bytes.Clone(ev.Raw)
		c.Args = append([]Arg(nil), ev.Args...)
		evs = append(evs, c)
	}
}

func TestEventFields(t *testing.T) {
	evs, problems := readAll(t, `[{"name":"a\"b","cat":"c","ph":"X","ts":1.5,"dur":2,"pid":7,"tid":"main","args":{"n":3,"s":"x","o":{"k":[1,2]}}},
{"ph":"b","id2":{"local":"0x1f"},"ts":1e3,"pid":1,"tid":2,"scope":"s","name":"\u00e9t\u00e9"},
{"ph":"f","id":12,"bp":"e","ts":-0.001,"pid":4294967296,"tid":1.5}
]`)
	require.Empty(t, problems)
	require.Len(t, evs, 3)

	x := evs[0]
	assert.Equal(t, "X", string(x.Ph))
	assert.Equal(t, `a"b`, x.Name.String())
	assert.True(t, x.Name.Escaped)
	assert.Equal(t, "c", x.Cat.String())
	assert.Equal(t, int64(1500), x.TS)
	assert.Equal(t, int64(2000), x.Dur)
	assert.Equal(t, Num{Kind: NumInt, Int: 7, Raw: []byte("7")}, x.Pid)
	assert.Equal(t, NumString, x.Tid.Kind)
	assert.Equal(t, "main", string(x.Tid.Str))
	require.Len(t, x.Args, 3)
	assert.Equal(t, 3.0, x.Arg("n").Float())
	assert.Equal(t, "x", x.Arg("s").Str.String())
	assert.Equal(t, `{"k":[1,2]}`, string(x.Arg("o").Value))
	assert.Equal(t, `"x"`, string(x.Raw[x.Arg("s").Span.Start:x.Arg("s").Span.End]))
	assert.Equal(t, "1.5", string(x.Raw[x.TSSpan.Start:x.TSSpan.End]))
	assert.Equal(t, "7", string(x.Raw[x.PidSpan.Start:x.PidSpan.End]))
	assert.Equal(t, 1, x.Line)

	b := evs[1]
	assert.Equal(t, `"0x1f"`, string(b.ID))
	assert.True(t, b.IDLocal)
	assert.Equal(t, int64(1_000_000), b.TS)
	assert.Equal(t, "été", b.Name.String())
	assert.Equal(t, 2, b.Line)

	f := evs[2]
	assert.Equal(t, "12", string(f.ID))
	assert.False(t, f.IDLocal)
	assert.Equal(t, "e", f.BP.String())
	assert.Equal(t, int64(-1), f.TS)
	assert.True(t, f.Pid.Bounds)
	assert.True(t, f.Tid.Frac)
}

func TestMicros(t *testing.T) {
	for in, want := range map[string]int64{
		"0": 0, "1": 1000, "1.5": 1500, "1.234": 1234, "1.2345": 1235, "-2.5": -2500,
		"1e3": 1_000_000, "1795427017966317.292": 1795427017966317292, "0.0005": 1,
	} {
		assert.Equal(t, want, micros([]byte(in)), in)
		s := scanner{}
		s.reset([]byte(in + ","))
		end, ns, ok := s.number(0)
		assert.Equal(t, len(in), end, in)
		if ok {
			assert.Equal(t, want, ns, in)
		}
	}
}

// TestForms reads one trace written three ways: the tracer package's
// (one event per line, trailing comma, no "]"), one line, and the object
// form, pretty-printed.
func TestForms(t *testing.T) {
	events := []string{
		`{"name":"a","ph":"X","ts":1,"dur":1,"pid":1,"tid":1}`,
		`{"name":"b","ph":"i","ts":2,"pid":1,"tid":1,"s":"t"}`,
	}
	forms := map[string]string{
		"lines":  "[\n" + strings.Join(events, ",\n") + ",\n",
		"one":    "[" + strings.Join(events, ",") + "]",
		"object": `{"displayTimeUnit":"ns","traceEvents":[` + "\n  " + strings.Join(events, ",\n  ") + "\n" + `],"metadata":{"x":[1,{"y":null}]}}`,
	}
	for name, text := range forms {
		t.Run(name, func(t *testing.T) {
			evs, problems := readAll(t, text)
			assert.Empty(t, problems)
			require.Len(t, evs, 2)
			assert.Equal(t, events[0], string(evs[0].Raw))
			assert.Equal(t, events[1], string(evs[1].Raw))
		})
	}
}

// TestBufferBoundaries reads events across every possible cut of the
// read buffer, through a reader that returns one byte at a time.
func TestBufferBoundaries(t *testing.T) {
	text := "[\n" + `{"name":"\u00e9\n","ph":"X","ts":123.456,"dur":7,"pid":1,"tid":1,"args":{"k":"\u00e9t\u00e9 ☃"}},` + "\n" +
		`{"name":"x","ph":"C","ts":1e2,"pid":1,"args":{"v":-1.5e-3}}` + "\n]"
	want, _ := readAll(t, text)
	require.Len(t, want, 2)
	r := NewReader(iotestOneByte{strings.NewReader(text)})
	var problems []Problem
	r.OnProblem = func(p Problem) { problems = append(problems, p) }
	for i := range want {
		ev, err := r.Next()
		require.NoError(t, err)
		assert.Equal(t, string(want[i].Raw), string(ev.Raw))
		assert.Equal(t, want[i].TS, ev.TS)
		assert.Equal(t, want[i].Line, ev.Line)
	}
	_, err := r.Next()
	assert.Equal(t, io.EOF, err)
	assert.Empty(t, problems)
}

type iotestOneByte struct{ r io.Reader }

func (o iotestOneByte) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	return o.r.Read(p[:1])
}

// FuzzScanner checks the scanner against encoding/json: it must never
// panic, it must accept a value exactly when json.Valid does (but for
// nesting deeper than encoding/json's 10,000 levels, which the viewers
// read, and so does the scanner), and a trace made of the value as its
// only event must give the event back.
func FuzzScanner(f *testing.F) {
	for _, s := range []string{
		`{"name":"a","ph":"X","ts":1.5,"dur":2,"pid":1,"tid":1,"args":{"a":[1,{"b":null}],"c":"\u00e9"}}`,
		`{"id2":{"local":"0x1"},"ph":"b","cat":"c"}`, `{"ts":01}`, `{"ts":1.}`, `{"ts":-}`, `{"a":"\x01"}`,
		`{"a":"\ud800"}`, `[1,2,3]`, `"x"`, `1e5`, `{"a":tru}`, `{"a" : 1 , "b" : [ ] }`, "{\"a\":\"\xff\"}",
		`{"pid":1.0,"tid":-0}`, `{"ts":123456789012345678901234}`,
		`{"args":{"a":[[{"b":[]},{}],[]],"c":{"d":{}}}}`, `{"args":{"a":[1,]}}`, `{"args":{"a":{"b":1,}}}`,
		`[[[[{"a":[{"b":{"c":[1,2,{"d":"e"}]}}]}]]]]`, `{"args":{"a":[1 2]}}`, `{"args":{"a":{"b" 1}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// A trailing space ends a number at the end of data.
		in := append(bytes.Clone(data), ' ')
		var s scanner
		s.reset(in)
		start := s.ws(0)
		end := -1
		if start < len(in) {
			if in[start] == '{' {
				var e Event
				end = s.event(start, &e)
			} else {
				end = s.value(start)
			}
		}
		if end > 0 {
			end = s.ws(end)
		}
		ours := end == len(in)
		if ours && !json.Valid(data) && depth(data) > 10000 {
			return
		}
		assert.Equal(t, json.Valid(data), ours, "%q: scanner says %v (end %d, %q)", data, ours, end, s.errMsg)

		// As the only event of a trace, through the Reader.
		trimmed := bytes.TrimSpace(data)
		if !json.Valid(data) || len(trimmed) == 0 || trimmed[0] != '{' {
			return
		}
		evs, problems := readAll(t, "[\n"+string(data)+"\n]")
		for _, p := range problems {
			assert.Contains(t, []Kind{KindUTF8, KindDetect}, p.Kind, "%q: %v", data, p)
		}
		require.Len(t, evs, 1, "%q", data)
		assert.Equal(t, string(trimmed), string(evs[0].Raw))
	})
}

// depth returns the deepest nesting of brackets in data, outside strings.
func depth(data []byte) int {
	d, deepest, in, esc := 0, 0, false, false
	for _, c := range data {
		switch {
		case esc:
			esc = false
		case in && c == '\\':
			esc = true
		case c == '"':
			in = !in
		case in:
		case c == '{' || c == '[':
			d++
			deepest = max(deepest, d)
		case c == '}' || c == ']':
			d--
		}
	}
	return deepest
}

// TestDeepArgs reads args nested far deeper than encoding/json's 10,000
// levels, as Perfetto does, without recursion, and tells how deep their
// objects nest (catapult fails past about 7,000).
func TestDeepArgs(t *testing.T) {
	const n = 200_000
	for _, tc := range []struct {
		name  string
		value string
		depth int
	}{
		{"arrays", strings.Repeat("[", n) + strings.Repeat("]", n), 1},
		{"objects", strings.Repeat(`{"b":`, n) + "1" + strings.Repeat("}", n), n + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := `[{"name":"x","ph":"X","ts":1,"dur":1,"pid":1,"tid":1,"args":{"a":` + tc.value + "}},\n" +
				`{"name":"y","ph":"X","ts":5,"dur":1,"pid":1,"tid":1}]`
			evs, problems := readAll(t, text)
			require.Empty(t, problems)
			require.Len(t, evs, 2)
			assert.Equal(t, tc.depth, evs[0].ArgsDepth)
			assert.Equal(t, "y", evs[1].Name.String())
		})
	}
}

// FuzzReader checks that no input makes the Reader panic or loop, and
// that it finds the events of any valid trace array.
func FuzzReader(f *testing.F) {
	f.Add([]byte("[\n{\"ph\":\"X\",\"ts\":1},\n{\"ph\":\"E\"},\n"))
	f.Add([]byte(`{"traceEvents":[{"ph":"B"}]}`))
	f.Add([]byte("[{\"a\":1},,{\"b\":2}]x"))
	f.Add([]byte("[{\"a\":1}{\"b\":2},]"))
	f.Add([]byte("[{\"a\":[1,],\"b\":{\"c\":\"x\ny\",},},\n{\"d\":\"\t\"}]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var problems int
		r := NewReader(bytes.NewReader(data))
		r.OnProblem = func(Problem) { problems++ }
		n := 0
		for {
			ev, err := r.Next()
			if err != nil {
				require.Equal(t, io.EOF, err)
				break
			}
			require.True(t, json.Valid(ev.Raw), "%q: the Reader gave %q", data, ev.Raw)
			n++
		}
		var arr []json.RawMessage
		if json.Unmarshal(data, &arr) != nil {
			return
		}
		objects := 0
		for _, v := range arr {
			if bytes.HasPrefix(bytes.TrimSpace(v), []byte("{")) {
				objects++
			}
		}
		assert.Equal(t, objects, n, "%q", data)
	})
}

// TestMaxEvent: an event larger than maxEvent stops the Reader with an
// error, as docs/cli.md says, however the buffer grew to it; one just
// under it is read.
func TestMaxEvent(t *testing.T) {
	defer func(m int) { maxEvent = m }(maxEvent)
	maxEvent = 3 << 20
	for _, tc := range []struct {
		size int
		ok   bool
	}{{maxEvent - 1000, true}, {maxEvent + 1000, false}} {
		text := `[{"name":"x","ph":"X","ts":1,"dur":1,"pid":1,"tid":1,"args":{"s":"` + strings.Repeat("a", tc.size) + `"}},` + "\n" +
			`{"name":"y","ph":"X","ts":5,"dur":1,"pid":1,"tid":1}]`
		r := NewReader(strings.NewReader(text))
		var err error
		n := 0
		for err == nil {
			if _, err = r.Next(); err == nil {
				n++
			}
		}
		if tc.ok {
			assert.Equal(t, io.EOF, err)
			assert.Equal(t, 2, n)
		} else {
			assert.ErrorContains(t, err, "an event larger than 3 MiB")
			assert.Equal(t, 0, n)
		}
	}
}
