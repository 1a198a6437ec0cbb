//go:build linux

package main

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDrawConfigIsFixedBySeed(t *testing.T) {
	for seed := uint64(1); seed <= 300; seed++ {
		a, b := drawConfig(seed, 5*time.Second), drawConfig(seed, 5*time.Second)
		require.Equal(t, a, b, "seed %d", seed)
		require.Equal(t, a.String(), b.String())
	}
	distinct := map[string]bool{}
	for seed := uint64(1); seed <= 100; seed++ {
		distinct[drawConfig(seed, 5*time.Second).String()] = true
	}
	assert.Len(t, distinct, 100, "every seed draws a configuration of its own")
}

// TestDrawCoversEveryFeature checks that fresh seeds reach every
// configuration, fault and workload shape the torture test has, and the
// shapes of issue 31's defects often enough for two minutes of seeds to
// meet them.
func TestDrawCoversEveryFeature(t *testing.T) {
	const seeds = 3000
	count := map[string]int{}
	for seed := uint64(1); seed <= seeds; seed++ {
		c := drawConfig(seed, 5*time.Second)
		t0 := c.Tracers[0]
		inc := func(ok bool, what string) {
			if ok {
				count[what]++
			}
		}
		inc(len(c.Tracers) > 1, "several tracers")
		inc(c.KillAt > 0, "SIGKILL")
		inc(c.TermAt > 0 && t0.Default, "SIGTERM with StopOnSignal")
		inc(c.Rival, "rival process")
		inc(c.Rival && t0.Sink.rotates(), "rival on a rotated path")
		inc(c.Tmpfs, "tmpfs")
		inc(c.Tmpfs && t0.Sink == sinkRotate, "tmpfs with plain rotation")
		inc(c.CloseWhileRunning, "close while running")
		inc(c.Importers, "importers")
		inc(c.Procs == 1, "GOMAXPROCS=1")
		for _, tc := range c.Tracers {
			inc(true, "sink "+tc.Sink.String())
			inc(tc.Fault != faultNone, "writer fault "+tc.Fault.String())
			inc(tc.FifoDiesAt > 0, "pipe reader dies")
			inc(tc.DumpOverLive, "flight dump onto a live path")
			inc(tc.Default && tc.Cycles > 0, "Start/Stop cycles")
			inc(tc.Link != linkNone, "symlink "+tc.Link.String())
			inc(tc.Lanes, "lanes")
			inc(tc.Lossless, "lossless")
			inc(tc.Categories, "categories")
			inc(tc.StopTimeout == 0, "stop timeout forever")
			inc(tc.WriterRecords, "writer records")
			kinds := map[shapeKind]bool{}
			for _, s := range tc.Shapes {
				kinds[s.Kind] = true
				inc(true, "shape "+s.Kind.String())
				inc(s.Kind == shapePool && s.Held && s.N/c.Procs > 16, "pool holding more than 16 spans a P")
				inc(s.Kind == shapePool && s.Held && c.Procs == 1 && s.N >= 20, "GOMAXPROCS=1 with 20 held")
			}
			if kinds[shapeStringers] {
				inc(true, "stringer "+tc.Stringer.String())
				inc(tc.Stringer == strFlushes && kinds[shapeFlusher], "String flushes while Flush runs")
			}
			inc(true, "handler "+tc.Handler.String())
		}
	}
	for _, want := range []string{
		"several tracers", "SIGKILL", "SIGTERM with StopOnSignal", "rival process", "rival on a rotated path",
		"tmpfs", "tmpfs with plain rotation", "close while running", "importers", "GOMAXPROCS=1",
		"sink file", "sink gzip", "sink rotate", "sink rotate-gzip", "sink writer", "sink fifo", "sink flight",
		"writer fault fail", "writer fault stall", "writer fault short", "pipe reader dies", "flight dump onto a live path",
		"Start/Stop cycles", "symlink dir", "symlink file", "lanes", "lossless", "categories", "stop timeout forever", "writer records",
		"pool holding more than 16 spans a P", "GOMAXPROCS=1 with 20 held",
		"stringer plain", "stringer records", "stringer flushes", "stringer closes", "stringer panics", "stringer sleeps",
		"String flushes while Flush runs",
		"handler count", "handler records", "handler slog", "handler flush", "handler close", "handler stop", "handler panic",
	} {
		assert.Greater(t, count[want], seeds/200, "%s: in %d of %d seeds", want, count[want], seeds)
	}
	for k := range shapeNames {
		assert.Greater(t, count["shape "+shapeKind(k).String()], seeds/20, "shape %s", shapeKind(k))
	}
}

func TestImporterSamplingIsItsOwnStream(t *testing.T) {
	n := 0
	for seed := uint64(1); seed <= 2000; seed++ {
		if drawImporters(seed) {
			n++
		}
		require.Equal(t, drawImporters(seed), drawConfig(seed, time.Second).Importers)
	}
	assert.InDelta(t, 400, n, 80, "about one seed in five loads its files in the importers")
}

func TestIDRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		tr, w, c, seq := r.IntN(1<<tracerBits), r.IntN(maxWorkers), class(r.IntN(int(numClasses))), r.Uint64N(1<<seqBits)
		id := makeID(tr, w, c, seq)
		require.Less(t, id, int64(1)<<53, "an id fits a float64 exactly, as every JSON reader reads it")
		require.GreaterOrEqual(t, id, int64(0))
		gt, gw, gc, gs := splitID(id)
		require.Equal(t, []any{tr, w, c, seq}, []any{gt, gw, gc, gs})
		require.Equal(t, float64(id), math.Floor(float64(id)))
	}
}

func TestReadSeeds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seeds.txt")
	require.NoError(t, os.WriteFile(path, []byte("# a comment\n12  # found it\n\n  7\n"), 0o644))
	seeds, err := readSeeds(path)
	require.NoError(t, err)
	require.Equal(t, []uint64{12, 7}, seeds)

	require.NoError(t, os.WriteFile(path, []byte("12x # not a seed\n"), 0o644))
	_, err = readSeeds(path)
	require.ErrorContains(t, err, "not a seed")
}

// TestSeedsFileParses checks the regression list kept in the repository.
func TestSeedsFileParses(t *testing.T) {
	seeds, err := readSeeds("seeds.txt")
	require.NoError(t, err)
	require.NotEmpty(t, seeds)
}
