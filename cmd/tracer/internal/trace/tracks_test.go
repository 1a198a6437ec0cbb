package trace

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gotracer/tracer/internal/tracefile"
	"github.com/stretchr/testify/require"
)

// enclosesWalk is what encloses finds, by the walk of every slice of the
// tree from the newest.
func enclosesWalk(t *track, ts int64, next bool) (caught, bound bool) {
	for _, o := range t.open {
		if o.ts <= ts {
			return true, true
		}
		caught = caught || next
	}
	for j := len(t.stack) - 1; j >= 0; j-- {
		x := &t.stack[j]
		if catapultHolds(x.start, x.end, ts, x.be()) || next && x.start >= ts {
			caught = true
		}
		if x.start <= ts && ts <= x.end && (!x.be() || ts < x.end) {
			return caught || next, true
		}
		if x.depth == 0 && x.start <= ts {
			break
		}
	}
	return caught, false
}

// TestEnclosesAsWalked checks that encloses, which skips the slices that
// begin after ts, finds what the walk of them all finds: random slices
// (X events, and B/E pairs) in random order, at small times and at
// absolute ones, whose milliseconds catapult rounds; some with folds.
func TestEnclosesAsWalked(t *testing.T) {
	defer func(n int) { maxTop = n }(maxTop)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	for round := range 300 {
		r := rand.New(rand.NewPCG(seed, uint64(round)))
		maxTop = 1 << 16
		if r.IntN(3) == 0 {
			maxTop = 8 + r.IntN(64) // folds
		}
		var base int64 // µs
		if r.IntN(2) == 0 {
			base = 1_800_000_000_000_000 // the Unix epoch's, as the Go toolchain writes them
		}
		grid := 1 + r.IntN(1000) // ns: a coarse grid makes ties
		at := func(n int) int64 { return int64(n * grid) }
		dur := func(ns int64) string { return fmt.Sprintf("%d.%03d", ns/1000, ns%1000) }
		us := func(ns int64) string { return fmt.Sprintf("%d.%03d", base+ns/1000, ns%1000) }
		var b strings.Builder
		b.WriteString("[\n")
		var opens []int64
		for range 20 + r.IntN(400) {
			switch s := at(r.IntN(200)); {
			case r.IntN(4) == 0 && len(opens) < 5:
				b.WriteString(`{"name":"b","ph":"B","ts":` + us(s) + `,"pid":1,"tid":1},` + "\n")
				opens = append(opens, s)
			case r.IntN(4) == 0 && len(opens) > 0:
				e := max(opens[len(opens)-1], s)
				opens = opens[:len(opens)-1]
				b.WriteString(`{"ph":"E","ts":` + us(e) + `,"pid":1,"tid":1},` + "\n")
			default:
				b.WriteString(`{"name":"x","ph":"X","ts":` + us(s) + `,"dur":` + dur(at(r.IntN(40))) + `,"pid":1,"tid":1},` + "\n")
			}
		}
		rd := tracefile.NewReader(strings.NewReader(b.String()))
		a := NewAnalyzer()
		for {
			ev, err := rd.Next()
			if err != nil {
				break
			}
			a.Add(ev)
			for _, tr := range a.tracks {
				var times []int64
				for _, x := range tr.stack {
					times = append(times, x.start, x.end)
				}
				for _, o := range tr.open {
					times = append(times, o.ts)
				}
				for range 8 {
					ts := at(r.IntN(250))
					if len(times) > 0 && r.IntN(2) == 0 {
						ts = times[r.IntN(len(times))] + int64(r.IntN(3)-1)
					}
					ts += base * 1000
					for _, next := range []bool{false, true} {
						c, bd := tr.encloses(ts, next)
						wc, wb := enclosesWalk(tr, ts, next)
						require.Equal(t, [2]bool{wc, wb}, [2]bool{c, bd}, "seed %d round %d: ts %d next %v in %d slices", seed, round, ts, next, len(tr.stack))
					}
				}
			}
		}
	}
}
