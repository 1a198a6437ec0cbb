package tables

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gotracer/tracer/cmd/tracer/internal/corpus"
)

// A genEvent is an event of a generated trace: its time, for sorting,
// and its JSON text.
type genEvent struct {
	ts   int64
	text string
}

// writeEvents writes evs, in their order, as a trace file at path.
func writeEvents(t *testing.T, path string, evs []genEvent) {
	t.Helper()
	var b strings.Builder
	b.WriteString("[\n")
	for i, e := range evs {
		if i > 0 {
			b.WriteString(",\n")
		}
		b.WriteString(e.text)
	}
	b.WriteString("\n]\n")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
}

// genFlows returns n chains of flow events, each an s, t events and an f
// ("bp":"e" two times in three), 2 to 4 of them at times at draws, in
// time order, each on one of threads 1 to 3, with suffix written after
// its ts (".5": half a microsecond later).
func genFlows(r *rand.Rand, n int, at func() int64, suffix string) []genEvent {
	var evs []genEvent
	for id := range n {
		k := 2 + r.IntN(3)
		times := make([]int64, k)
		for i := range times {
			times[i] = at()
		}
		slices.Sort(times)
		for i, ts := range times {
			ph, bp := "t", ""
			switch {
			case i == 0:
				ph = "s"
			case i == k-1:
				ph = "f"
				if r.IntN(3) > 0 {
					bp = `,"bp":"e"`
				}
			}
			evs = append(evs, genEvent{ts, fmt.Sprintf(`{"name":"f","cat":"c","ph":%q,"id":%d,"ts":%d%s,"pid":1,"tid":%d%s}`, ph, id, ts, suffix, 1+r.IntN(3), bp)})
		}
	}
	return evs
}

// A toolTrace is a small file of the corpus of real tools' traces, whole
// or cut, written out plain.
type toolTrace struct {
	name string // "go-build whole", "go-build cut"
	base string // the file's name without .json.gz
	path string
}

// toolTraces writes each small file of the corpus into dir, whole and
// cut at two thirds (but for the object form, which neither viewer loads
// cut), and returns them.
func toolTraces(t *testing.T, dir string) []toolTrace {
	t.Helper()
	files, err := corpus.Files()
	require.NoError(t, err)
	var out []toolTrace
	for _, f := range files {
		if f.Large {
			continue
		}
		r, err := f.Open()
		require.NoError(t, err)
		data, err := io.ReadAll(r)
		r.Close()
		require.NoError(t, err)
		base := strings.TrimSuffix(f.Name, ".json.gz")
		for _, v := range []struct {
			name string
			data []byte
		}{{"whole", data}, {"cut", data[:len(data)*2/3]}} {
			if v.name == "cut" && data[0] == '{' {
				continue // neither viewer loads the object form cut
			}
			path := filepath.Join(dir, base+"-"+v.name+".json")
			require.NoError(t, os.WriteFile(path, v.data, 0o644))
			out = append(out, toolTrace{base + " " + v.name, base, path})
		}
	}
	return out
}
