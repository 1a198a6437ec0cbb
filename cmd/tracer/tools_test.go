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
// name and seed, which are logged), plain and gzip.
func toolFiles(t *testing.T, dir string, seed uint64) []toolFile {
	t.Helper()
	files, err := corpus.Files()
	require.NoError(t, err)
	var out []toolFile
	for _, f := range files {
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
