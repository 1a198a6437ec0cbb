package main

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gotracer/tracer/cmd/tracer/internal/trace"
	"github.com/gotracer/tracer/internal/tracefile"
	"github.com/stretchr/testify/require"
)

// tieTrace returns a random trace of B and E events of a few threads
// with ties (an E at the ts of a B before it, both orders of a B and E
// at one ts, E events of other names: misplaced ends), flow events, and
// perhaps an X: early, late, or last and followed by an event out of
// order that makes Perfetto's sorter sort the ties. With distinct, its
// span names hold ids, past the number at which stats groups them.
func tieTrace(r *rand.Rand, distinct bool) string {
	var b strings.Builder
	b.WriteString("[\n")
	names := []string{"parse", "emit", "walk"}
	x := func(ts int64) {
		fmt.Fprintf(&b, `{"name":"x","ph":"X","ts":%d,"dur":%d,"pid":1,"tid":%d},`+"\n", ts, r.IntN(5), 1+r.IntN(3))
	}
	events := 200 + r.IntN(400)
	if distinct {
		events = 10_500 * 2
	}
	xAt := r.IntN(events + 1) // where the X comes, if it comes
	hasX := r.IntN(4) > 0
	ts := [4]int64{}
	open := [4][]string{}
	for i := range events {
		if hasX && i == xAt {
			x(ts[1])
		}
		tid := 1 + r.IntN(3)
		if r.IntN(3) > 0 {
			ts[tid] += int64(r.IntN(3)) // ties, often
		}
		switch k := r.IntN(20); {
		case k == 0:
			ph := "sft"[r.IntN(3)]
			fmt.Fprintf(&b, `{"name":"f","cat":"c","ph":"%c","id":%d,"ts":%d,"pid":1,"tid":%d},`+"\n", ph, r.IntN(4), ts[tid], tid)
		case k < 10 || len(open[tid]) == 0:
			name := names[r.IntN(len(names))]
			if distinct {
				name = fmt.Sprintf("request %d", i)
			}
			open[tid] = append(open[tid], name)
			fmt.Fprintf(&b, `{"name":%q,"ph":"B","ts":%d,"pid":1,"tid":%d},`+"\n", name, ts[tid], tid)
		default:
			j := len(open[tid]) - 1
			if r.IntN(8) == 0 {
				j = r.IntN(len(open[tid])) // a misplaced end
			}
			name := open[tid][j]
			open[tid] = append(open[tid][:j], open[tid][j+1:]...)
			fmt.Fprintf(&b, `{"name":%q,"ph":"E","ts":%d,"pid":1,"tid":%d},`+"\n", name, ts[tid], tid)
		}
	}
	if hasX && xAt == events {
		x(ts[1] + 10)
		if r.IntN(2) == 0 {
			// Out of order: Perfetto's sorter sorts the ties from here.
			x(int64(r.IntN(int(ts[1]) + 1)))
		}
	}
	b.WriteString(`{"name":"end","ph":"i","s":"g","ts":0,"pid":1,"tid":1}` + "\n]\n")
	return b.String()
}

// TestKeptReplayIsReadingAgain requires stats and check to say the same
// of random traces with ties whether they replay the tracks they kept
// (internal/trace/keep.go) or read the file again to replay them.
func TestKeptReplayIsReadingAgain(t *testing.T) {
	// Not parallel: it sets keepTracks.
	dir := t.TempDir()
	seeds := quickOr[uint64](60, 400)
	seed0 := rand.Uint64()
	t.Logf("seeds %d.. (%d)", seed0, seeds)
	replayed := 0
	for i := range seeds {
		seed := seed0 + i
		distinct := i%50 == 7
		path := writeFile(t, dir, fmt.Sprintf("ties-%d.json", seed), tieTrace(rand.New(rand.NewPCG(seed, 3)), distinct))
		kept, ok := sameBothWays(t, path)
		require.NoError(t, kept.statsErr, "seed %d", seed)
		require.NoError(t, kept.checkErr, "seed %d", seed)
		if ok {
			replayed++
		}
	}
	t.Logf("%d of %d replayed a kept track", replayed, seeds)
	// Not a test of nothing: most seeds replay a kept track.
	require.Greater(t, replayed, int(seeds)/4)
}

// TestKeptReplayOnRealFiles requires the same of the traces of real
// tools (webpack's is replayed from what was kept), whole and cut, and
// of every file of testdata/others.
func TestKeptReplayOnRealFiles(t *testing.T) {
	// Not parallel: it sets keepTracks.
	seed := rand.Uint64()
	paths, err := filepath.Glob(filepath.Join(corpusDir, "*"))
	require.NoError(t, err)
	for _, f := range toolFiles(t, t.TempDir(), seed) {
		paths = append(paths, f.path)
	}
	replayed := 0
	for _, path := range paths {
		if strings.HasSuffix(path, ".md") || strings.HasSuffix(path, "verdicts.json") {
			continue
		}
		// A file cut in its gzip header is not read at all: both ways
		// must say so alike.
		if _, ok := sameBothWays(t, path); ok {
			replayed++
		}
	}
	t.Logf("%d of %d files replayed a kept track", replayed, len(paths))
	require.Positive(t, replayed)
}

// bothWays is what stats and check say of a file.
type bothWays struct {
	stats    *Stats
	statsErr error
	said     []tracefile.Problem
	checkErr error
}

// sameBothWays requires stats and check to say the same of the file at
// path, errors included, whether they replay the tracks they kept or
// read the file again; it returns what they said, and whether they
// replay a kept track.
func sameBothWays(t *testing.T, path string) (bothWays, bool) {
	t.Helper()
	defer func() { keepTracks = true }()
	var got [2]bothWays
	for i, keep := range []bool{true, false} {
		keepTracks = keep
		w := &got[i]
		w.stats, w.statsErr = computeStats(path, true)
		_, _, w.checkErr = checkFile(path, true, func(p tracefile.Problem) { w.said = append(w.said, p) })
	}
	keepTracks = true
	require.Equal(t, got[1], got[0], "the file read again, then replayed from what was kept: %s", path)
	return got[0], got[0].checkErr == nil && replaysKept(t, path)
}

// replaysKept reports whether stats and check replay a track of the
// file at path from what they kept.
func replaysKept(t *testing.T, path string) bool {
	in, err := openInput(path, true, nil)
	require.NoError(t, err)
	defer in.Close()
	a := trace.NewAnalyzer()
	a.Keep = true
	require.NoError(t, in.each(func(ev *tracefile.Event) error { a.Add(ev); return nil }))
	return a.Kept(a.Tangled())
}
