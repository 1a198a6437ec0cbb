package main

import (
	"compress/gzip"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gotracer/tracer/cmd/tracer/internal/corpus"
	"github.com/gotracer/tracer/internal/tracecheck"
	"github.com/gotracer/tracer/internal/tracefile"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A toolFile is one file the tool comparisons read: a trace of the
// corpus of real tools' traces (testdata/tools), plain or gzip, whole or
// cut at a seeded random byte as a crash leaves it.
type toolFile struct {
	name string // the corpus file's, and the variant: "go-build plain cut"
	path string
	cut  bool
}

// toolFiles writes, in dir, each committed trace of the corpus plain and
// gzip, and a copy of each cut at a random byte (seeded by the file's
// name and seed, which are logged), plain and gzip. A quick run (see
// quickOr) takes two of the four of each trace, one whole and one cut,
// plain and gzip in turn from one trace to the next.
func toolFiles(t *testing.T, dir string, seed uint64) []toolFile {
	t.Helper()
	files, err := corpus.Files()
	require.NoError(t, err)
	var out []toolFile
	for i, f := range files {
		if f.Large {
			continue
		}
		r, err := f.Open()
		require.NoError(t, err)
		plain, err := io.ReadAll(r)
		r.Close()
		require.NoError(t, err)
		base := strings.TrimSuffix(f.Name, ".json.gz")
		var h uint64
		for _, c := range base {
			h = h*31 + uint64(c)
		}
		rng := rand.New(rand.NewPCG(seed, h))
		cutAt := 1 + rng.IntN(len(plain)-1)
		gz := gzipBytes(t, plain)
		gzCutAt := 1 + rng.IntN(len(gz)-1)
		t.Logf("%s: plain cut at byte %d of %d, gzip at %d of %d (seed %d)", base, cutAt, len(plain), gzCutAt, len(gz), seed)
		for _, v := range []struct {
			variant string
			data    []byte
			cut     bool
		}{
			{"plain", plain, false},
			{"gzip", gz, false},
			{"plain cut", plain[:cutAt], true},
			{"gzip cut", gz[:gzCutAt], true},
		} {
			// Quick: plain whole and gzip cut of one trace, gzip whole
			// and plain cut of the next.
			if gzip := (i%2 == 0) == v.cut; !heavyRun() && strings.HasPrefix(v.variant, "gzip") != gzip {
				continue
			}
			ext := ".json"
			if strings.HasPrefix(v.variant, "gzip") {
				ext = ".json.gz"
			}
			path := filepath.Join(dir, base+"-"+strings.ReplaceAll(v.variant, " ", "-")+ext)
			require.NoError(t, os.WriteFile(path, v.data, 0o644))
			out = append(out, toolFile{name: base + " " + v.variant, path: path, cut: v.cut})
		}
	}
	return out
}

func gzipBytes(t *testing.T, data []byte) []byte {
	t.Helper()
	var b strings.Builder
	zw := gzip.NewWriter(&b)
	_, err := zw.Write(data)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return []byte(b.String())
}

// viewerSays returns what an importer's report says of a file: that it
// refuses it, that it shows nothing, or the names of the import errors
// or warnings it reports, sorted.
func viewerSays(r tracecheck.Report, field, key string) []string {
	if r["ok"] != true {
		return []string{tracefile.Refuses}
	}
	var what []string
	items, _ := r[field].([]any)
	for _, it := range items {
		if m, ok := it.(map[string]any); ok {
			what = append(what, fmt.Sprint(m[key]))
		}
	}
	slices.Sort(what)
	return slices.Compact(what)
}

// viewerCounts returns how often the importers report each import error
// and warning, as checkSays counts them.
func viewerCounts(perfetto, catapult tracecheck.Report) map[string]int {
	out := map[string]int{}
	if perfetto["ok"] != true {
		out["perfetto "+tracefile.Refuses] = 1
	} else if items, ok := perfetto["importErrors"].([]any); ok {
		for _, it := range items {
			m, _ := it.(map[string]any)
			v, _ := m["value"].(float64)
			out["perfetto "+fmt.Sprint(m["name"])] += int(v)
		}
	}
	if catapult["ok"] != true {
		out["catapult "+tracefile.Refuses] = 1
	} else if items, ok := catapult["warnings"].([]any); ok {
		for _, it := range items {
			m, _ := it.(map[string]any)
			out["catapult "+fmt.Sprint(m["type"])]++
		}
	}
	return out
}

// checkSays returns what tracer check says each viewer reports of the
// file at path (see tracefile.Problem), and how often.
func checkSays(t *testing.T, path string) (perfetto, catapult []string, counts map[string]int) {
	t.Helper()
	counts = map[string]int{}
	_, _, err := checkFile(path, true, func(p tracefile.Problem) {
		if p.Perfetto != "" {
			perfetto = append(perfetto, p.Perfetto)
			counts["perfetto "+p.Perfetto]++
		}
		if p.Catapult != "" {
			catapult = append(catapult, p.Catapult)
			counts["catapult "+p.Catapult]++
		}
	})
	require.NoError(t, err)
	for _, s := range []*[]string{&perfetto, &catapult} {
		slices.Sort(*s)
		*s = slices.Compact(*s)
		if slices.Contains(*s, tracefile.Refuses) {
			*s = []string{tracefile.Refuses} // nothing else is seen
		}
	}
	return perfetto, catapult, counts
}

// TestCheckToolsAgainstViewers runs check on every trace of the corpus
// of real tools' traces, plain and gzip, whole and cut at a random byte,
// and compares what it says each viewer reports with what the viewers'
// importers report: whether each loads the file, and the names of the
// import errors (Perfetto) and warnings (catapult) it reports.
func TestCheckToolsAgainstViewers(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("loads 40 files in both importers")
	}
	files := toolFiles(t, t.TempDir(), 1)
	paths := make([]string, len(files))
	for i, f := range files {
		paths[i] = f.path
	}
	perfetto, catapult := tracecheck.Load(t, paths...)
	for i, f := range files {
		t.Run(f.name, func(t *testing.T) {
			p, c, counts := checkSays(t, f.path)
			assert.Equal(t, viewerSays(perfetto[i], "importErrors", "name"), p, "Perfetto (check's counts %v)", counts)
			assert.Equal(t, viewerSays(catapult[i], "warnings", "type"), c, "catapult (check's counts %v)", counts)
			if want := viewerCounts(perfetto[i], catapult[i]); !maps.Equal(want, counts) {
				t.Logf("how often: the viewers %v, check %v", want, counts)
			}
		})
	}
}

// perfettoCounters asks trace_processor, per counter series, its samples,
// least and greatest values.
const perfettoCounters = `select t.name as name, count(*) as n, min(c.value) as lo, max(c.value) as hi
from counter c join counter_track t on c.track_id = t.id group by t.id;`

// TestStatsToolsAgainstPerfetto compares stats with trace_processor on
// every trace of the corpus of real tools' traces, plain and gzip, and on
// a copy cut at a random byte where Perfetto loads it (the bare [ form):
// per span name the count, total and self time, per thread its slices and
// busy time (comparePerfetto), and per counter series its samples, least
// and greatest values.
func TestStatsToolsAgainstPerfetto(t *testing.T) {
	t.Parallel()
	for _, f := range toolFiles(t, t.TempDir(), 1) {
		if strings.HasSuffix(f.name, "gzip cut") || f.cut && firstByte(t, f.path) == '{' {
			continue // neither viewer loads it
		}
		t.Run(f.name, func(t *testing.T) {
			var tolerance int64
			if strings.HasPrefix(f.name, "go-build") {
				tolerance = 512 // absolute µs, which trace_processor rounds to 256 ns
			}
			compareStats(t, f.path, tolerance, true) // stats counts a B never ended to the end of the trace
			s, err := computeStats(f.path, true)
			require.NoError(t, err)
			var want, have []string
			for _, row := range tracecheck.Query(t, f.path, perfettoCounters) {
				want = append(want, fmt.Sprintf("%s n=%s [%s, %s]", row["name"], row["n"], num(row["lo"]), num(row["hi"])))
			}
			for _, c := range s.Counters {
				have = append(have, fmt.Sprintf("%s %s n=%d [%s, %s]", c.Name, c.Key, c.Samples, num(fmt.Sprint(float64(c.Min))), num(fmt.Sprint(float64(c.Max)))))
			}
			slices.Sort(want)
			slices.Sort(have)
			assert.Equal(t, want, have, "counters")
		})
	}
}

// num writes a number as trace_processor's CSV and Go's %v may both
// write it, to compare them.
func num(s string) string {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return s
	}
	return strconv.FormatFloat(f, 'g', 12, 64)
}

// firstByte returns the first byte of the file at path.
func firstByte(t *testing.T, path string) byte {
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return strings.TrimSpace(string(data[:min(len(data), 64)]))[0]
}

// TestCutToolsAgainstPerfetto cuts the middle third of each trace of the
// corpus of real tools' traces out and compares what trace_processor
// shows of the window in the cut with what it shows of that window in the
// original (compareCutWith): slices, clipped, and their depth (their times
// left out on go-build's absolute microseconds, which trace_processor
// rounds), and flows: the cut keeps every arrow of the window, and may
// bind more (trace_processor binds a flow event to a slice that ended
// before it, which in the window may be another).
func TestCutToolsAgainstPerfetto(t *testing.T) {
	t.Parallel()
	for _, f := range toolFiles(t, t.TempDir(), 1) {
		if !strings.HasSuffix(f.name, " plain") {
			continue
		}
		t.Run(f.name, func(t *testing.T) {
			s, err := computeStats(f.path, true)
			require.NoError(t, err)
			from, to := s.Start+s.Duration/3, s.Start+2*s.Duration/3
			compareCutWith(t, f.path, from, to, strings.HasPrefix(f.name, "go-build"), true)
		})
	}
}

// TestRepairToolsAgainstPerfetto repairs each trace of the corpus of real
// tools' traces cut at a random byte, plain and gzip: the repaired file
// holds every slice trace_processor shows of the cut one (where it loads
// it), and none the uncut file does not have.
func TestRepairToolsAgainstPerfetto(t *testing.T) {
	t.Parallel()
	const q = "select name, ts from slice order by ts, name;"
	files := toolFiles(t, t.TempDir(), 1)
	whole := map[string]string{}
	for _, f := range files {
		if !f.cut {
			whole[strings.TrimSuffix(strings.TrimSuffix(f.name, " plain"), " gzip")] = f.path
		}
	}
	for _, f := range files {
		if !f.cut {
			continue
		}
		t.Run(f.name, func(t *testing.T) {
			base := strings.TrimSuffix(strings.TrimSuffix(f.name, " plain cut"), " gzip cut")
			out := filepath.Join(t.TempDir(), "repaired.json")
			code, _, stderr := runCmd("repair", "-q", "-o", out, f.path)
			require.Equal(t, 0, code, stderr)
			got := tracecheck.Query(t, out, q)
			uncut := map[string]bool{}
			for _, r := range tracecheck.Query(t, whole[base], q) {
				uncut[r["name"]+"@"+r["ts"]] = true
			}
			for _, r := range got {
				assert.True(t, uncut[r["name"]+"@"+r["ts"]], "%s at %s is not in the uncut file", r["name"], r["ts"])
			}
			if strings.HasSuffix(f.name, "plain cut") && firstByte(t, f.path) == '[' {
				assert.Equal(t, tracecheck.Query(t, f.path, q), got, "the slices Perfetto shows of the cut file")
			}
		})
	}
}
