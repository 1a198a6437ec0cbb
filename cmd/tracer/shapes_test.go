package main

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/gotracer/tracer/internal/tracefile"
)

// A shape says how genTrace lays out and writes the spans of a trace,
// the ways producers differ: the tracer package writes an X when a span
// ends and cuts spans that outlive a flush into B and E; other producers
// write X events when spans begin, or in no order at all.
type shape struct {
	order    string // "end" (children first), "start" (parents first) or "shuffle" (X in any order)
	cut      float64
	zero     float64 // share of slices of zero duration
	flush    float64 // share of children that start or end with their parent
	recurse  float64 // share of children named as their parent
	pids     int
	tids     int
	depth    int
	fanout   int
	async    bool
	short    bool // short children, many of them
	instants bool // instants of a thread, which Perfetto shows as slices
	distinct bool // every span name differs
	chain    int  // a recursion this many levels deep after each thread's spans
	ties     bool // B and E events at the times of other events of their track, in any order at one time
}

// genSpan is a span genTrace made.
type genSpan struct {
	name       string
	start, end int64 // nanoseconds
	pid, tid   int
	depth      int
	be         bool // written as B and E
}

// genTrace returns a random trace of shape sh as one event per line, and
// its spans.
func genTrace(r *rand.Rand, sh shape) (string, []genSpan) {
	var spans []genSpan
	names := []string{"parse", "render", "block", "inline", "emit", "walk"}
	pick := func(parent string) string {
		if parent != "" && r.Float64() < sh.recurse {
			return parent
		}
		if sh.distinct {
			return fmt.Sprintf("request %d", len(spans))
		}
		return names[r.IntN(len(names))]
	}
	var grow func(pid, tid int, start, end int64, depth int, parent string)
	grow = func(pid, tid int, start, end int64, depth int, parent string) {
		if depth >= sh.depth || end-start < 2 {
			return
		}
		n := r.IntN(sh.fanout + 1)
		t := start
		for range n {
			if t >= end {
				break
			}
			s := t + r.Int64N((end-t)/4+1)
			e := s + r.Int64N(end-s+1)
			if sh.short {
				s = t + r.Int64N(min((end-t)/4, 3)+1)
				e = s + r.Int64N(min(end-s, 10)+1)
			}
			if r.Float64() < sh.flush {
				if r.IntN(2) == 0 {
					s = start
				} else {
					e = end
				}
				s = max(s, t)
			}
			if r.Float64() < sh.zero {
				e = s
			}
			sp := genSpan{name: pick(parent), start: s, end: e, pid: pid, tid: tid, depth: depth, be: r.Float64() < sh.cut}
			spans = append(spans, sp)
			grow(pid, tid, s, e, depth+1, sp.name)
			t = e
			if r.IntN(3) == 0 {
				t++ // a gap; else the next sibling starts where this one ended
			}
		}
	}
	for p := 1; p <= sh.pids; p++ {
		for th := 1; th <= sh.tids; th++ {
			t := int64(r.IntN(1000))
			for range 1 + r.IntN(4) {
				d := int64(1 + r.IntN(100000))
				if r.Float64() < sh.zero {
					d = 0
				}
				sp := genSpan{name: pick(""), start: t, end: t + d, pid: p, tid: th, be: r.Float64() < sh.cut}
				spans = append(spans, sp)
				grow(p, th, t, t+d, 1, sp.name)
				t += d + int64(r.IntN(3))*1000
			}
			// A deep recursion, each level a nanosecond inside the one
			// around it, named as it (or not, at times).
			var name string
			if sh.chain > 0 {
				name = pick("")
			}
			for i := range sh.chain {
				if r.IntN(8) == 0 {
					name = pick("")
				}
				s, e := t+int64(i), t+int64(2*sh.chain-i)
				spans = append(spans, genSpan{name: name, start: s, end: e, pid: p, tid: th, depth: i, be: r.Float64() < sh.cut})
			}
		}
	}
	// A B or E at the time of another event of its track is left out:
	// in what order Perfetto takes them is not the file's, and not
	// settled here (see docs/cli.md).
	type at struct {
		pid, tid int
		ts       int64
	}
	uses := map[at]int{}
	for _, sp := range spans {
		uses[at{sp.pid, sp.tid, sp.start}]++
		uses[at{sp.pid, sp.tid, sp.end}]++
	}
	for i := range spans {
		sp := &spans[i]
		sp.be = sp.be && (sh.ties || uses[at{sp.pid, sp.tid, sp.start}] == 1 && uses[at{sp.pid, sp.tid, sp.end}] == 1)
		// (A B and its E at one ts: Perfetto takes the E first, and the
		// B never ends, which stats counts to the end of the trace, and
		// trace_processor's slice table holds with dur -1.)
		sp.be = sp.be && !(sh.ties && sp.start == sp.end)
	}
	if sh.ties {
		// Nor a B at the start of an X: Perfetto takes the X first,
		// so that a B/E pair around it crosses its end, which ties
		// make a maze of (see docs/cli.md).
		for changed := true; changed; {
			changed = false
			xStarts := map[at]bool{}
			for _, sp := range spans {
				if !sp.be {
					xStarts[at{sp.pid, sp.tid, sp.start}] = true
				}
			}
			for i := range spans {
				if sp := &spans[i]; sp.be && xStarts[at{sp.pid, sp.tid, sp.start}] {
					sp.be, changed = false, true
				}
			}
		}
	}
	type ev struct {
		at   int64 // when the producer writes it
		seq  int   // ties: as made
		text string
	}
	var evs []ev
	ts := func(ns int64) string { return string(tracefile.AppendMicros(nil, ns)) }
	for i, sp := range spans {
		id := fmt.Sprintf(`"pid":%d,"tid":%d`, sp.pid, sp.tid)
		// At one time, the producer writes the Es first, innermost first,
		// then the Bs, outermost first.
		// (Room for 2048 levels at one ns: a deep recursion's.)
		endAt, startAt := sp.end*4096+2047-int64(sp.depth), sp.start*4096+2048+int64(sp.depth)
		if sh.ties {
			endAt, startAt = sp.end*4096+r.Int64N(4096), sp.start*4096+r.Int64N(4096)
		}
		if sp.be {
			b := fmt.Sprintf(`{"name":%q,"ph":"B","ts":%s,%s}`, sp.name, ts(sp.start), id)
			e := fmt.Sprintf(`{"name":%q,"ph":"E","ts":%s,%s}`, sp.name, ts(sp.end), id)
			if sp.start == sp.end {
				evs = append(evs, ev{startAt, i, b + ",\n" + e})
				continue
			}
			evs = append(evs, ev{startAt, i, b}, ev{endAt, i, e})
			continue
		}
		x := fmt.Sprintf(`{"name":%q,"ph":"X","ts":%s,"dur":%s,%s}`, sp.name, ts(sp.start), ts(sp.end-sp.start), id)
		switch sh.order {
		case "end":
			evs = append(evs, ev{endAt, i, x})
		case "start":
			evs = append(evs, ev{startAt, i, x})
		default:
			evs = append(evs, ev{r.Int64N(1<<50) * 32, i, x})
		}
	}
	if sh.instants {
		// Some at the times of spans, never at those of a B or E.
		beAt := map[at]bool{}
		for _, sp := range spans {
			if sp.be {
				beAt[at{sp.pid, sp.tid, sp.start}], beAt[at{sp.pid, sp.tid, sp.end}] = true, true
			}
		}
		for i, sp := range spans {
			when := min(sp.start+int64(i%3), sp.end)
			if i%2 == 1 {
				when = sp.end
			}
			if beAt[at{sp.pid, sp.tid, when}] {
				continue
			}
			evs = append(evs, ev{when*4096 + 2048 + 32, i, fmt.Sprintf(`{"name":"mark","ph":"i","ts":%s,"pid":%d,"tid":%d}`, ts(when), sp.pid, sp.tid)})
		}
	}
	if sh.async {
		for i := range 20 {
			s := int64(r.IntN(100000))
			evs = append(evs,
				ev{s*4096 + 2048, -i - 1, fmt.Sprintf(`{"name":"op","cat":"io","ph":"b","id":"0x%x","ts":%s,"pid":1,"tid":1}`, i, ts(s))},
				ev{(s+500)*4096 + 2048, -i - 1, fmt.Sprintf(`{"name":"op","cat":"io","ph":"e","id":"0x%x","ts":%s,"pid":1,"tid":1}`, i, ts(s+500))})
		}
	}
	slices.SortStableFunc(evs, func(a, b ev) int {
		if a.at != b.at {
			if a.at < b.at {
				return -1
			}
			return 1
		}
		return a.seq - b.seq
	})
	var b strings.Builder
	b.WriteString("[\n")
	for p := 1; p <= sh.pids; p++ {
		fmt.Fprintf(&b, `{"name":"process_name","ph":"M","pid":%d,"tid":0,"args":{"name":"p%d"}},`+"\n", p, p)
	}
	for i, e := range evs {
		b.WriteString(e.text)
		if i < len(evs)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("]\n")
	return b.String(), spans
}
