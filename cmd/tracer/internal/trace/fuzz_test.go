package trace

import (
	"bytes"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gotracer/tracer/internal/tracefile"
)

// FuzzAnalyzer feeds whatever events the Reader finds in any input to
// an Analyzer: it must never panic or loop. The Reader itself is fuzzed
// in internal/tracefile.
func FuzzAnalyzer(f *testing.F) {
	f.Add([]byte("[\n{\"ph\":\"X\",\"ts\":1},\n{\"ph\":\"E\"},\n"))
	f.Add([]byte(`{"traceEvents":[{"ph":"B","pid":1,"tid":1,"ts":1},{"ph":"E","pid":1,"tid":1,"ts":0}]}`))
	f.Add([]byte(`[{"ph":"b","id2":{"local":"0x1"},"cat":"c","ts":1},{"ph":"s","id":1,"ts":2},{"ph":"C","name":"q","args":{"d":"3"}}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := tracefile.NewReader(bytes.NewReader(data))
		a := NewAnalyzer()
		a.Stats = true
		a.OnProblem = func(tracefile.Problem) {}
		for {
			ev, err := r.Next()
			if err != nil {
				require.Equal(t, io.EOF, err)
				break
			}
			a.Add(ev)
		}
		a.Finish(r.Unterminated())
	})
}
