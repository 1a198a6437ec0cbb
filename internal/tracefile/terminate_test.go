package tracefile

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTerminate(t *testing.T) {
	const a, b = `{"name":"a","ph":"X"}`, `{"name":"b","ph":"X"}`
	for _, tc := range []struct {
		name, in, want string
		torn           bool
	}{
		{"closed", "[\n" + a + "\n]\n", "[\n" + a + "\n]\n", false},
		{"trailing comma", "[\n" + a + ",\n" + b + ",\n", "[\n" + a + ",\n" + b + "\n]\n", false},
		{"no comma", "[\n" + a + ",\n" + b, "[\n" + a + ",\n" + b + "\n]\n", false},
		{"torn last line", "[\n" + a + ",\n{\"name\":\"b\",\"p", "[\n" + a + "\n]\n", true},
		{"torn inside a string", "[\n" + a + ",\n{\"name\":\"b", "[\n" + a + "\n]\n", true},
		{"page padding", "[\n" + a + ",\n\n\n\n", "[\n" + a + "\n]\n", false},
		{"head spaces", "    [\n" + a + ",\n", "    [\n" + a + "\n]\n", false},
		{"no events", "[\n", "[\n]\n", false},
		{"no events, torn", "[\n{\"na", "[\n]\n", true},
		// An invalid last line is kept whole, for a strict parser to refuse.
		{"bad last line", "[\n" + a + ",\n{\"name\":x},\n", "[\n" + a + ",\n{\"name\":x},\n]\n", false},
		{"object form", `{"traceEvents":[` + a + ",", `{"traceEvents":[` + a + ",", false},
		{"not a trace", "hello", "hello", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := []byte(tc.in)
			out, torn := Terminate(in)
			assert.Equal(t, tc.want, string(out))
			assert.Equal(t, tc.torn, torn)
			assert.Equal(t, tc.in, string(in), "the input is not written over")
		})
	}
}

// FuzzTerminate cuts a trace anywhere and checks that the repaired file
// is strict JSON holding the events the cut left whole, in order.
func FuzzTerminate(f *testing.F) {
	f.Add([]byte(`[{"name":"a","ph":"X","ts":1},{"name":"b\n,","args":{"s":"]},"}},{}]`), uint16(30))
	f.Add([]byte(`[{"a":"\"}"},{"b":[1,2,{"c":"}"}]}]`), uint16(12))
	f.Fuzz(func(t *testing.T, data []byte, cut uint16) {
		var arr []json.RawMessage
		if json.Unmarshal(data, &arr) != nil {
			return
		}
		var file bytes.Buffer
		file.WriteString("[\n")
		var ends []int // where each event's line ends in file
		for _, v := range arr {
			var c bytes.Buffer
			if json.Compact(&c, v) != nil || c.Len() == 0 || c.Bytes()[0] != '{' {
				return
			}
			file.Write(c.Bytes())
			ends = append(ends, file.Len())
			file.WriteString(",\n")
		}
		n := 2 + int(cut)%max(1, file.Len()-1)
		prefix := file.Bytes()[:min(n, file.Len())]
		out, _ := Terminate(prefix)
		var got []json.RawMessage
		require.NoError(t, json.Unmarshal(out, &got), "%q cut at %d gave %q", file.Bytes(), n, out)
		whole := 0
		for _, e := range ends {
			if e <= len(prefix) {
				whole++
			}
		}
		require.Len(t, got, whole, "%q cut at %d", file.Bytes(), n)
		for i := range got {
			var c bytes.Buffer
			require.NoError(t, json.Compact(&c, arr[i]))
			assert.Equal(t, c.String(), strings.TrimSpace(string(got[i])))
		}
	})
}
