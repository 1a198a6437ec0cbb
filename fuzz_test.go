package tracer

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gotracer/tracer/internal/tracecheck"
	"github.com/stretchr/testify/require"
)

// The fuzz targets here go through the real file: they record events with
// the fuzzed input, close the tracer, and parse the file strictly. Run one
// with, for example:
//
//	go test -run '^$' -fuzz '^FuzzEventStrings$' -fuzztime 1m .
//
// Their seed corpora are in testdata/fuzz and run with every go test.

// readStrict parses a closed trace strictly, keeping numbers as written.
func readStrict(t testing.TB, path string) []event {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.True(t, utf8.Valid(data), "the file must be valid UTF-8")
	parseClosed(t, data) // strict, in the form it has
	data = asArray(data)
	require.True(t, bytes.HasPrefix(data, []byte("[\n{\"")), "file must start with [ and an event: %.40q", data)
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	var evs []event
	require.NoError(t, dec.Decode(&evs), "closed file must be strict JSON")
	require.False(t, dec.More(), "nothing may follow the array")
	return evs
}

// wantFloat is how a float64 arg reads back from the file.
func wantFloat(f float64) any {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	}
	return f
}

// FuzzEventStrings records every kind of event with fuzzed names, keys
// and values (any bytes: invalid UTF-8, control characters, quotes,
// backslashes, empty, and long enough to be truncated) and numbers (NaN,
// infinities, extremes), and checks the file shows each faithfully.
func FuzzEventStrings(f *testing.F) {
	f.Add("decode", "bytes", "v", uint16(1), 1.5, int64(-3), uint64(7), true)
	f.Add("", "", "", uint16(0), math.NaN(), int64(math.MinInt64), uint64(math.MaxUint64), false)
	f.Add("q\"b\\s/", "\x00\x1f\x7f", "\xff\xfe\xc3", uint16(3), math.Inf(1), int64(math.MaxInt64), uint64(0), true)
	f.Add("\u2028\u2029", "é🚀", "\n\r\t", uint16(5000), math.Inf(-1), int64(0), uint64(1), false)
	f.Add("x", "k", "🚀", uint16(1025), math.Copysign(0, -1), int64(1), uint64(2), true) // cut inside a rune
	path := filepath.Join(f.TempDir(), "fuzz.json")
	f.Fuzz(func(t *testing.T, name, key, value string, rep uint16, fl float64, i int64, u uint64, b bool) {
		long := ""
		if len(value) > 0 {
			long = strings.Repeat(value, min(int(rep), 3*MaxStringLen/len(value)+1))
		}
		tr, err := New(path, withClock(newTestClock()))
		require.NoError(t, err)
		tr.SetGoroutineName(name)
		tr.Span(name, String(key, value), String("long", long), Float64("f", fl),
			Int64("i", i), Uint64("u", u), Bool("b", b))()
		tr.LongSpan(name, String(key, value))()
		tr.Instant(name, String(key, value))
		tr.InstantGlobal(long)
		_ = tr.Span(name, String(key, long)) // still open at Close: a B event
		require.NoError(t, tr.Close())

		evs := readStrict(t, path)
		checkTracks(t, evs)
		wantName, wantKey := expectString(name), expectString(key)
		byPh := map[string][]event{}
		for _, e := range evs {
			byPh[e.Ph] = append(byPh[e.Ph], e)
		}
		require.Len(t, byPh["X"], 1)
		require.Len(t, byPh["B"], 2)
		require.Len(t, byPh["E"], 1)
		require.Len(t, byPh["i"], 2)

		x := byPh["X"][0]
		require.Equal(t, wantName, x.Name)
		numbers := map[string]any{
			"f": wantFloat(fl), "i": strconv.FormatInt(i, 10), "u": strconv.FormatUint(u, 10),
			"b": b, "long": expectString(long),
		}
		if _, clash := numbers[wantKey]; !clash {
			require.Equal(t, expectString(value), x.Args[wantKey])
		}
		delete(numbers, wantKey) // a clashing key: the later value wins
		for k, want := range numbers {
			got := x.Args[k]
			if n, ok := got.(json.Number); ok {
				if _, isFloat := want.(float64); isFloat {
					v, err := n.Float64()
					require.NoError(t, err)
					got = v
				} else {
					got = n.String()
				}
			}
			require.Equal(t, want, got, "arg %q", k)
		}

		require.Equal(t, wantName, byPh["B"][0].Name)
		require.Equal(t, wantName, byPh["E"][0].Name, "E carries its B's name")
		require.Equal(t, map[string]any{wantKey: expectString(value)}, byPh["B"][0].Args)
		require.Equal(t, wantName, byPh["i"][0].Name)
		require.Equal(t, expectString(long), byPh["i"][1].Name)
		require.Equal(t, "g", byPh["i"][1].S)
		open := byPh["B"][1]
		require.Equal(t, wantName, open.Name)
		require.Equal(t, map[string]any{wantKey: expectString(long)}, open.Args)
		for _, m := range byPh["M"] {
			if m.Name == "thread_name" {
				require.Equal(t, wantName, m.Args["name"])
			}
		}
		if len(long) > MaxStringLen {
			require.Contains(t, x.Args["long"], "…[truncated ", "a long string shows it was cut")
		}
	})
}

// FuzzRecordSequence drives one goroutine through a fuzzed sequence of
// recording calls, including misuse (ending spans out of order, ending one
// twice), in a ring small enough to wrap and overflow, with flushes in
// between. Whatever happens, the file must be strict JSON whose tracks
// nest, with no event twice; without misuse or drops, every event must be
// there.
func FuzzRecordSequence(f *testing.F) {
	f.Add([]byte{0, 0, 5, 2, 2})
	f.Add([]byte{0, 1, 10, 6, 2, 9, 12, 7, 17, 2, 6})
	f.Add([]byte{0, 0, 0, 3, 13, 4, 2, 2, 2})
	f.Add(bytes.Repeat([]byte{0, 7, 97, 5, 2, 1, 2}, 40))
	path := filepath.Join(f.TempDir(), "fuzz.json")
	f.Fuzz(func(t *testing.T, ops []byte) {
		ops = ops[:min(len(ops), 4000)]
		tr, err := New(path, WithBufferLimit(chunkBytes), withClock(newTestClock()))
		require.NoError(t, err)
		var open, ended []func(...Arg)
		id, misuse := 0, false
		nextID := func() Arg { id++; return Int("id", id-1) }
		for i, op := range ops {
			arg := int(op / 10)
			switch op % 10 {
			case 0:
				open = append(open, tr.Span("span", nextID()))
			case 1:
				open = append(open, tr.LongSpan("begin", nextID()))
			case 2: // end the innermost span
				if n := len(open); n > 0 {
					open[n-1]()
					ended = append(ended, open[n-1])
					open = open[:n-1]
				}
			case 3: // end another one: misuse
				if n := len(open); n > 1 {
					k := arg % (n - 1)
					open[k]()
					ended = append(ended, open[k])
					open = append(open[:k], open[k+1:]...)
					misuse = true
				}
			case 4: // end one again: misuse
				if n := len(ended); n > 0 {
					ended[arg%n]()
					misuse = true
				}
			case 5:
				tr.Instant("instant", nextID())
			case 6:
				require.NoError(t, tr.Flush())
			case 7: // more args than a record holds, maybe more than allowed
				args := append([]Arg{nextID()}, manyArgs("k", arg%(maxArgs+8))...)
				tr.Span("many", args...)()
			case 8:
				tr.SetGoroutineName(string(ops[i:min(i+8, len(ops))]))
			case 9: // the open spans grow older than the flush interval
				ageAll(tr)
			}
		}
		require.NoError(t, tr.Close())

		evs := readStrict(t, path)
		checkTracks(t, evs)
		seen := map[string]int{}
		for _, e := range evs {
			if e.Ph == "E" || e.Args["id"] == nil {
				continue
			}
			seen[e.Args["id"].(json.Number).String()]++
		}
		for k, n := range seen {
			require.Equal(t, 1, n, "event %s written %d times", k, n)
		}
		st := tr.Stats()
		if !misuse && st.Dropped == 0 {
			for k := range id {
				require.Equal(t, 1, seen[strconv.Itoa(k)], "event %d", k)
			}
			require.Zero(t, st.Unmatched)
		}
	})
}

// FuzzRetimed: spans with any name and args, begun before a tee and
// ended during it (an X, re-timed for the tee by encoder.retimeForTee, a
// rewrite of the encoded bytes), or written as B before it (the tee's
// head), reach the tee's trace as strict JSON, with the name, category
// and args the file has, beginning later than in the file and ending
// when they ended.
func FuzzRetimed(f *testing.F) {
	f.Add("decode", "bytes", "v", uint8(0))
	f.Add(`"ts":1,"dur":2`, `"ph":"X","ts":`, `,"dur":9`, uint8(1))
	f.Add("q\"b\\s/\x00", "\xff\xfe", "🚀\n\"ts\":", uint8(2))
	f.Add("x", "ts", "1", uint8(0))
	f.Add("dur", "dur", "ts", uint8(1))
	cats := []string{"", `"ts":`, `c","dur":1`}
	f.Fuzz(func(t *testing.T, name, key, value string, c uint8) {
		var file, tee bytes.Buffer
		clock := newTestClock()
		tr, err := NewWithWriter(&file, withClock(clock))
		require.NoError(t, err)
		args := []Arg{String(key, value), Int("n", 1)}
		if cat := cats[int(c)%len(cats)]; cat != "" {
			args = append(args, Category(cat))
		}
		endOld := tr.Span(name, args...)
		clock.ageAll()
		require.NoError(t, tr.Flush()) // its B is written: the tee's head
		clock.old.Store(never)
		endYoung := tr.Span(name, args...) // its X comes during the tee
		te, err := tr.Tee(&tee)
		require.NoError(t, err)
		endYoung()
		endOld()
		require.NoError(t, te.Stop())
		require.NoError(t, tr.Close())

		inFile := tracecheck.Tracks(t, tracecheck.Parse(t, asArray(file.Bytes())))
		require.True(t, utf8.Valid(tee.Bytes()))
		inTee := tracecheck.Tracks(t, tracecheck.Parse(t, tee.Bytes()))
		ns := tracecheck.Nanos
		for tid, want := range inFile {
			got := inTee[tid]
			require.Len(t, got, len(want), "track %d", tid)
			for i := range want {
				require.Equal(t, want[i].Name, got[i].Name)
				require.Equal(t, want[i].Args, got[i].Args)
				require.Less(t, ns(want[i].Start), ns(got[i].Start), "begun before the tee: later in it")
				require.Equal(t, ns(want[i].End), ns(got[i].End), "ended during it: as in the file")
			}
		}
	})
}
