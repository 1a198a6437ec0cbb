package tracer

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// checkAligned checks what alignEvents promises: out is in with newlines
// added only before lines, and no line of at most pageSize bytes crosses
// a multiple of pageSize when out is written at offset off.
func checkAligned(t testing.TB, in, out []byte, off int64) {
	t.Helper()
	// Removing the padding gives the input back: padding is newlines
	// inserted where a line starts.
	var lines, outLines [][]byte
	for l := range bytes.SplitAfterSeq(in, []byte("\n")) {
		if len(l) > 0 {
			lines = append(lines, l)
		}
	}
	pos := off
	for l := range bytes.SplitAfterSeq(out, []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		start := pos
		pos += int64(len(l))
		if len(l) == 1 && l[0] == '\n' && (len(outLines) >= len(lines) || len(lines[len(outLines)]) != 1) {
			continue // padding
		}
		outLines = append(outLines, l)
		if len(l) <= pageSize {
			require.Equal(t, start/pageSize, (pos-1)/pageSize,
				"a line of %d bytes at offset %d crosses a page boundary", len(l), start)
		}
	}
	require.Equal(t, len(lines), len(outLines))
	for i := range lines {
		require.Equal(t, string(lines[i]), string(outLines[i]))
	}
}

func randomLines(rng *rand.Rand, n int) []byte {
	var b []byte
	for range n {
		size := 1 + rng.IntN(300)
		if rng.IntN(10) == 0 {
			size = 1 + rng.IntN(3*pageSize) // some longer than a page
		}
		b = append(b, strings.Repeat("x", size-1)...)
		b = append(b, '\n')
	}
	return b
}

func TestAlignEvents(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		in := randomLines(rng, rng.IntN(200))
		off := rng.Int64N(5 * pageSize)
		out := alignEvents(nil, in, off)
		checkAligned(t, in, out, off)
		assert.LessOrEqual(t, len(out)-len(in), (len(in)/pageSize+2)*pageSize)
	}
	// The checker can fail.
	in := []byte(strings.Repeat("y", 99) + "\n")
	assert.True(t, fails(func(ft testing.TB) { checkAligned(ft, in, in, pageSize-50) }), "a line across a boundary")
	assert.True(t, fails(func(ft testing.TB) { checkAligned(ft, in, append([]byte("z"), in...), 0) }), "changed content")
}

func FuzzAlignEvents(f *testing.F) {
	f.Add([]byte("{}\n{}\n"), int64(4090))
	f.Add([]byte(strings.Repeat("a", 5000)+"\n"+"b\n"), int64(1))
	f.Add([]byte("no newline at the end"), int64(pageSize-3))
	f.Add([]byte("\n\n\nx\n"), int64(pageSize-1))
	f.Fuzz(func(t *testing.T, in []byte, off int64) {
		if off < 0 {
			off = -off
		}
		off %= 1 << 40
		if len(in) > 0 && in[len(in)-1] != '\n' {
			in = append(in[:len(in):len(in)], '\n') // the flusher writes whole lines
		}
		checkAligned(t, in, alignEvents(nil, in, off), off)
	})
}

// TestEveryPageCutIsAnEventBoundary writes a real trace with events of
// many sizes and cuts the file at every multiple of the page size, where a
// kill or a full disk can stop a write: every cut must leave whole events
// that parse after the documented repair.
func TestEveryPageCutIsAnEventBoundary(t *testing.T) {
	t.Parallel()
	tr, path := newTestTracer(t)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 3000 {
		tr.Span("ev", Int("i", i), String("pad", strings.Repeat("p", rng.IntN(900))))()
		if i%500 == 0 {
			require.NoError(t, tr.Flush())
		}
	}
	require.NoError(t, tr.Close())
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Greater(t, len(data), 100*pageSize)
	all := readClosed(t, path)
	assert.Len(t, byPhase(all, "X"), 3000)
	data = asRunning(data) // the file as a kill would find it

	padding := 0
	for cut := pageSize; cut < len(data); cut += pageSize {
		prefix := data[:cut]
		trimmed := bytes.TrimRight(prefix, "\n")
		padding += len(prefix) - len(trimmed) - 1
		require.True(t, bytes.HasSuffix(trimmed, []byte("},")), "cut at %d ends inside an event: %q", cut, prefix[len(prefix)-40:])
		if cut/pageSize%25 == 0 {
			var evs []event
			require.NoError(t, json.Unmarshal(repair(prefix), &evs), "cut at %d", cut)
		}
	}
	t.Logf("%d bytes, %d pages, %d bytes of padding at the cuts (%.2f%%)",
		len(data), len(data)/pageSize, padding, 100*float64(padding)/float64(len(data)))
}
