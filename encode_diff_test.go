package tracer

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gotracer/tracer/internal/jsonenc"

	"github.com/stretchr/testify/require"
)

// diffEvent is one event as a recording call describes it.
type diffEvent struct {
	k     kind
	flags uint8
	name  string
	id    uint64
	cs    catScope
	args  []Arg
	gid   uint64
	at    int64
	dur   int64 // spans: written as X with this duration
	endAt int64 // kindEnd: the E event's time, of the span that began as this
}

// slotsOf lays e out in slots the way Tracer.record does.
func slotsOf(e diffEvent) []slot {
	args := e.args
	if len(args) > maxArgs {
		args = args[:maxArgs]
	}
	cs := e.cs.from(args)
	extra := cs != (catScope{}) || e.k.hasID()
	n := argSlots(args) + 1
	if extra {
		n++
	}
	s := make([]slot, n)
	s[0] = slot{num: uint64(e.at) | rawDone, meta: headMeta(e.k, e.flags, n, extra, e.gid)}
	s[0].setStr(e.name)
	putEvent(s, extra, cs, e.id, args)
	return s
}

// refRecordsOf lays e out in the records the reference encoder read: args
// inline, then in continuation records, category and scope included.
func refRecordsOf(e diffEvent) []refRecord {
	args := e.args
	if len(args) > maxArgs {
		args = args[:maxArgs]
	}
	cs := e.cs.from(args)
	r := refRecord{at: e.at, gid: e.gid, id: e.id, name: e.name, kind: e.k, flags: e.flags,
		nargs: uint8(len(args)), cat: cs.cat, scope: cs.scope, track: cs.track}
	i := copy(r.args[:], args)
	recs := []refRecord{r}
	for i < len(args) {
		var c refRecord
		i += copy(c.args[:], args[i:])
		recs = append(recs, c)
	}
	return recs
}

var diffStrings = []string{
	"", "x", "decode", "a much longer span name that is still cached",
	`quote " backslash \ slash /`, "ctrl \x00\x01\x1f\x7f\n\r\t", "bad utf8 \xff\xfe\xc3",
	"emoji 🚀 and é", "\u2028\u2029", strings.Repeat("long", 40), strings.Repeat("é", MaxStringLen),
}

func randomString(rng *rand.Rand) string {
	if rng.IntN(4) == 0 {
		// A string made now, whose memory the garbage collector can reuse
		// for another string of the same length once it is gone.
		return "dyn" + strconv.Itoa(rng.IntN(50))
	}
	return diffStrings[rng.IntN(len(diffStrings))]
}

func randomArgs(rng *rand.Rand) []Arg {
	n := rng.IntN(6)
	if rng.IntN(10) == 0 {
		n = rng.IntN(maxArgs + 8)
	}
	args := make([]Arg, n)
	for i := range args {
		key := randomString(rng)
		switch rng.IntN(10) {
		case 0:
			args[i] = String(key, randomString(rng))
		case 1:
			args[i] = Int64(key, rng.Int64()-math.MaxInt64/2)
		case 2:
			args[i] = Uint64(key, rng.Uint64())
		case 3:
			args[i] = Float64(key, []float64{0, -1.5, math.NaN(), math.Inf(1), math.Inf(-1), 1e300, 5e-324}[rng.IntN(7)])
		case 4:
			args[i] = Bool(key, rng.IntN(2) == 0)
		case 5:
			args[i] = Category(randomString(rng)[:0] + "cat" + strconv.Itoa(rng.IntN(3)))
		case 6:
			args[i] = Namespace("scope" + strconv.Itoa(rng.IntN(3)))
		case 7:
			switch rng.IntN(3) {
			case 0:
				args[i] = Arg{} // the zero Arg
			case 1:
				args[i] = Duration(key, time.Duration(rng.Int64N(1<<45)-1<<44))
			default:
				if rng.IntN(4) == 0 { // beyond int64 nanoseconds: see Time
					args[i] = Time(key, time.Date(rng.IntN(20000)-5000, 1, 2, 3, 4, 5, 6, time.UTC).AddDate(0, 0, rng.IntN(400)))
				} else {
					args[i] = Time(key, time.Unix(0, rng.Int64N(1<<62)))
				}
			}
		case 8:
			args[i] = String(key, "")
		default:
			args[i] = Int(key, rng.IntN(1000))
		}
	}
	return args
}

func randomEvent(rng *rand.Rand) diffEvent {
	kinds := []kind{kindSpan, kindBegin, kindEnd, kindInstant, kindCounter, kindThreadName, kindThreadSort,
		kindAsyncBegin, kindAsyncInstant, kindAsyncEnd, kindFlowBegin, kindFlowStep, kindFlowEnd}
	e := diffEvent{
		k:    kinds[rng.IntN(len(kinds))],
		name: randomString(rng),
		args: randomArgs(rng),
		gid:  rng.Uint64N(1 << 40),
		at:   rng.Int64N(1<<50) - 1000,
		dur:  rng.Int64N(1 << 40),
	}
	if rng.IntN(3) == 0 {
		e.cs = catScope{cat: categories.id("c" + strconv.Itoa(rng.IntN(3))), scope: scopes.id("s" + strconv.Itoa(rng.IntN(3)))}
		if e.k >= kindAsyncBegin && e.k <= kindAsyncEnd {
			e.cs.track = rng.Uint32()
		}
	}
	if e.k.hasID() {
		e.id = rng.Uint64()
		if e.k == kindThreadSort {
			e.id = uint64(rng.Int64N(2000) - 1000)
		}
	}
	switch e.k {
	case kindInstant:
		e.flags = []uint8{scopeThread, scopeProcess, scopeGlobal}[rng.IntN(3)]
	case kindEnd:
		e.endAt = e.at + e.dur
	}
	return e
}

// TestEncoderMatchesReference encodes random events of every kind, with
// hostile strings and every kind of arg, with today's encoder and with the
// reference (the encoder before records became slots): the output must be
// the same, byte for byte.
func TestEncoderMatchesReference(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	const base = 12345
	enc := newEncoder(processID, base) // one encoder throughout: its cache is under test too
	ref := refEncoder{pid: processID, base: base}
	runs := 200_000
	if testing.Short() || raceEnabled {
		runs = 20_000
	}
	for i := range runs {
		e := randomEvent(rng)
		s := slotsOf(e)
		recs := refRecordsOf(e)
		enc.buf, ref.buf = enc.buf[:0], ref.buf[:0]
		switch e.k {
		case kindSpan:
			// Some of the args may be given to the end: the X event holds
			// the start's and then the end's, as the reference's holds
			// them all.
			start, end := splitEndArgs(rng, e)
			s = slotsOf(start)
			enc.complete(&s[0], s[1:], end, e.dur)
			ref.complete(&recs[0], recs[1:], e.dur)
		case kindBegin:
			enc.begin(&s[0], s[1:])
			ref.begin(&recs[0], recs[1:])
		case kindEnd: // the E of a span that began as this event
			enc.end(&s[0], s[1:], nil, e.endAt, 0, 0)
			ref.end(&recs[0], e.endAt)
			line := bytes.Clone(enc.buf)
			endToInstant(line)
			require.Equal(t, strings.Replace(string(enc.buf), `"ph":"E"`, `"ph":"i"`, 1), string(line),
				"event %d: endToInstant finds its phase", i)
		default:
			enc.event(&s[0], s[1:])
			ref.event(&recs[0], recs[1:])
		}
		require.Equal(t, string(ref.buf), string(enc.buf), "event %d: %+v", i, e)
	}
}

// TestCompleteShortMatchesReference holds the X events of the common shape
// (no category), which complete writes in one go up to the args
// (completeShort), to the reference encoder's bytes, around each limit of
// that path: names and arg keys of every length about the size of a
// jsonenc.Short, escaped or not, durations about the 10µs of Micros's
// short form, times across milliseconds, and goroutine ids of every size.
// TestEncoderMatchesReference gives the same path every kind of arg.
func TestCompleteShortMatchesReference(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	const base = 12345
	enc := newEncoder(processID, base)
	ref := refEncoder{pid: processID, base: base}
	var strs []string
	for n := range jsonenc.ShortMax + 8 {
		strs = append(strs, strings.Repeat("n", n), strings.Repeat("n", max(n-1, 0))+`"`)
	}
	durs := []int64{0, 1, 999, 1000, 9_999, 10_000, 10_001, 999_999, 1e6, 1 << 40, -1, -10_000}
	gids := []uint64{1, 9, 10, 4242, 1<<40 - 1}
	at := int64(base + 999_000)
	for i := range 40_000 {
		e := diffEvent{k: kindSpan, name: strs[rng.IntN(len(strs))], gid: gids[rng.IntN(len(gids))],
			at: at, dur: durs[rng.IntN(len(durs))]}
		at += rng.Int64N(2000)
		for range rng.IntN(4) {
			key := strs[rng.IntN(len(strs))]
			if rng.IntN(2) == 0 {
				e.args = append(e.args, Int64(key, rng.Int64()-math.MaxInt64/2))
			} else {
				e.args = append(e.args, Uint64(key, rng.Uint64()>>rng.IntN(64)))
			}
		}
		recs := refRecordsOf(e)
		start, end := splitEndArgs(rng, e)
		s := slotsOf(start)
		enc.buf, ref.buf = enc.buf[:0], ref.buf[:0]
		enc.complete(&s[0], s[1:], end, e.dur)
		ref.complete(&recs[0], recs[1:], e.dur)
		require.Equal(t, string(ref.buf), string(enc.buf), "event %d: %+v", i, e)
	}
}

// splitEndArgs returns e with its args cut in two at random, and the
// slots of the second part, as record lays out the args given to a span's
// end. Only a tail of plain args moves: Category and Namespace belong to the
// start.
func splitEndArgs(rng *rand.Rand, e diffEvent) (diffEvent, []slot) {
	if len(e.args) == 0 || len(e.args) > maxArgs {
		return e, nil
	}
	cut := len(e.args)
	for cut > 0 && rng.IntN(3) > 0 {
		if k := e.args[cut-1].kind; k == argCategory || k == argScope {
			break
		}
		cut--
	}
	endArgs := e.args[cut:]
	end := make([]slot, argSlots(endArgs))
	putArgs(end, endArgs)
	e.args = e.args[:cut:cut]
	return e, end
}

// BenchmarkEncoder times the encoder alone on the event BenchmarkEncode
// records, an X event named "decode" with one int arg, against the
// reference encoder in the same run: the ratio holds on a noisy machine
// where the absolute times do not. It reports X events a second on one
// core.
func BenchmarkEncoder(b *testing.B) {
	e := diffEvent{k: kindSpan, name: "decode", gid: 4242, at: 123_456_789, dur: 4_321, args: []Arg{Int("n", 1234)}}
	s, recs := slotsOf(e), refRecordsOf(e)
	b.Run("now", func(b *testing.B) {
		enc := newEncoder(processID, 1000)
		for b.Loop() {
			if len(enc.buf) > batchBytes {
				enc.buf = enc.buf[:0]
			}
			enc.complete(&s[0], s[1:], nil, e.dur)
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/1e6, "Mevents/s")
	})
	b.Run("reference", func(b *testing.B) {
		ref := refEncoder{pid: processID, base: 1000}
		for b.Loop() {
			if len(ref.buf) > batchBytes {
				ref.buf = ref.buf[:0]
			}
			ref.complete(&recs[0], recs[1:], e.dur)
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/1e6, "Mevents/s")
	})
}

// TestNumberFormatting checks the encoder's integer and time formatting
// against strconv at every power-of-ten boundary and at random.
func TestNumberFormatting(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	values := []uint64{0, 1, math.MaxUint64, math.MaxInt64, 1 << 63}
	for p := uint64(1); p < math.MaxUint64/10; p *= 10 {
		values = append(values, p-1, p, p+1)
	}
	for range 100_000 {
		values = append(values, rng.Uint64()>>rng.IntN(64))
	}
	for _, v := range values {
		require.Equal(t, strconv.FormatUint(v, 10), string(jsonenc.Uint(nil, v)))
		require.Equal(t, strconv.FormatInt(int64(v), 10), string(jsonenc.Int(nil, int64(v))))
		ns := int64(v)
		want := strconv.FormatInt(ns/1000, 10)
		if ns < 0 && ns/1000 == 0 {
			want = "-0"
		}
		frac := ns % 1000
		if frac < 0 {
			frac = -frac
		}
		want += "." + strconv.FormatInt(1000+frac, 10)[1:]
		if ns == math.MinInt64 {
			continue // not a time the tracer can take
		}
		require.Equal(t, want, string(jsonenc.Micros(nil, ns)), "%d", ns)
	}
}
