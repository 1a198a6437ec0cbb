package tracer

import (
	"bytes"
	"math"
	"os"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/gotracer/tracer/internal/imported"
	"github.com/gotracer/tracer/internal/jsonenc"
)

// MaxStringLen is the longest name, category, key or string value written
// as is, in bytes. A longer string is cut at a character boundary and ends
// with a marker saying how many bytes were cut, so a runaway value cannot
// make a trace unloadable.
const MaxStringLen = jsonenc.MaxStringLen

// processID is the pid written on every event.
var processID = os.Getpid()

// An encoder turns events into JSON lines: one event per line, each
// followed by a comma. It appends to buf and never reflects or allocates
// beyond growing buf and its cache.
//
// It is fast (BenchmarkEncoder; docs/performance.md has the figures)
// because most of an event is known in advance: names and keys are
// escaped once and then copied from a cache keyed by their data pointer
// and length (see cached), with the start of the event (`{"name":...,
// "ph":"X","ts":`) and the key's colon; the pid and tid fragment is
// formatted once per track; and timestamps, which a flush writes in
// increasing runs, keep the digits of their millisecond and write the
// six digits after it with 32-bit arithmetic (jsonenc.Timestamps).
type encoder struct {
	buf    []byte
	cur    *batch // the batch buf belongs to, nil if none: see start
	body   []byte // during endFile, the batch's own buf
	events int    // events in the batch so far
	seq    uint64 // the number the batch gets: batches finished so far

	pid   int
	base  int64       // nanotime of ts 0
	names *trackNames // told of every track with an event, if not nil

	// With WithLanes: the lanes goroutines' events go to, a lane for the
	// next event instead (tidNext, once), and the goroutine of the event
	// being written, whose id its args start with.
	shared  *sharedTracks
	tidNext uint64
	gidArg  uint64

	pidTid []byte // `,"pid":N,"tid":`
	pidFld []byte // `,"pid":N`
	cache  [nameCacheSize]cachedString
	ts     jsonenc.Timestamps
	tids   [tidCacheSize]cachedTid
}

// tidCacheSize is the number of formatted track ids the encoder keeps:
// the goroutines a flush's events come from, mostly the same few in a row.
const tidCacheSize = 64

// A cachedTid is `,"pid":N,"tid":T` for the track id tid, formatted
// once.
type cachedTid struct {
	tid uint64
	f   jsonenc.Short // room for a pid and a tid of up to 20 digits each
}

func newEncoder(pid int, base int64) encoder {
	e := encoder{pid: pid, base: base}
	e.pidFld = strconv.AppendInt([]byte(`,"pid":`), int64(pid), 10)
	e.pidTid = append(append([]byte(nil), e.pidFld...), `,"tid":`...)
	return e
}

// drawOn tells e of the track names to keep (see trackNames) and the
// lanes goroutines are drawn on (see WithLanes), either nil if none.
func (e *encoder) drawOn(names *trackNames, shared *sharedTracks) {
	e.names, e.shared = names, shared
}

// nextOnLane draws the next event written on lane tid rather than on the
// lane its goroutine holds.
func (e *encoder) nextOnLane(tid uint64) { e.tidNext = tid }

// The batch.
//
// The encoder fills one batch at a time and counts its events; the
// flusher decides what goes into it and when it goes to the writer. Each
// method that writes an event counts it, but for the tracer's own
// (the process metadata and the drop counter), which Stats leaves out.

// start makes b, a free batch, the one the encoder fills.
func (e *encoder) start(b *batch) {
	b.reset()
	e.cur, e.buf, e.events = b, b.buf[:0], 0
}

// started reports whether the encoder has a batch to fill.
func (e *encoder) started() bool { return e.cur != nil }

// size returns the bytes encoded into the batch so far.
func (e *encoder) size() int { return len(e.buf) }

// pos returns where the next event goes: the batch's number and the
// offset in it, which a failed write's report is compared with (see
// failure).
func (e *encoder) pos() (seq uint64, off int) { return e.seq, len(e.buf) }

// empty reports whether the batch holds nothing to do.
func (e *encoder) empty() bool { return e.cur == nil || len(e.buf) == 0 && e.cur.op == opWrite }

// finish hands back the batch, with its events and its number, for the
// writer's queue, or nil if it holds nothing to do.
func (e *encoder) finish() *batch {
	if e.empty() {
		return nil
	}
	b := e.cur
	b.seal(e.buf, e.events, e.seq)
	e.seq++
	e.cur, e.buf, e.events = nil, nil, 0
	return b
}

// endFile makes what the encoder writes next, until newFile, the end of
// the file the batch ends: a rotation (see flusher.maybeRotate).
func (e *encoder) endFile() {
	e.body, e.buf = e.buf, e.cur.endBuf()
}

// newFile makes the batch start a new file: what the encoder wrote since
// endFile ends the old one, and what it writes next is the new file's
// head, its opening ("[" and the process metadata, up to opened) first,
// up to headDone.
func (e *encoder) newFile() {
	e.cur.startsFile(e.buf)
	e.buf, e.body = e.body[:0], nil
}

// opened marks the end of a new file's opening.
func (e *encoder) opened() { e.cur.markOpening(len(e.buf)) }

// headDone marks the end of a new file's head.
func (e *encoder) headDone() { e.cur.markHead(len(e.buf)) }

// openArray starts a trace in the empty buffer.
func (e *encoder) openArray() { e.buf = append(e.buf[:0], "[\n"...) }

// endsWithEvent reports whether the buffer ends with an event, which can
// end the array.
func (e *encoder) endsWithEvent() bool { return bytes.HasSuffix(e.buf, []byte("},\n")) }

// closeArray ends the array after the last event, which loses its comma.
func (e *encoder) closeArray() { e.buf = closeArray(e.buf) }

// closeArray ends the array of events b, which ends with an event and its
// ",\n": the comma goes.
func closeArray(b []byte) []byte {
	return append(b[:len(b)-2], "\n]\n"...)
}

// apart makes the encoder write into a new buffer of size bytes, for a
// trace built aside (the head New writes, a flight recorder's dump, a
// tee's head and end), and returns the function that hands that buffer
// back and restores the batch under way. What it writes aside is in no
// batch: an E event there notes nothing for the failed-write protocol.
func (e *encoder) apart(size int) (done func() []byte) {
	saved, events, cur := e.buf, e.events, e.cur
	e.buf, e.cur = make([]byte, 0, size), nil
	return func() []byte {
		b := e.buf
		e.buf, e.events, e.cur = saved, events, cur
		return b
	}
}

// drain appends what the source holds, up to limit bytes in all.
func (e *encoder) drain(src imported.Source, limit int) (more bool) {
	var n int
	e.buf, n, more = src.Drain(e.buf, limit-len(e.buf))
	e.events += n
	return more
}

// nameCacheSize is the number of escaped strings the encoder keeps: names,
// keys and categories, which programs write as constants, so a few
// hundred cover them.
const (
	nameCacheSize  = 1024
	maxCachedBytes = 128
)

// A cachedString is a string the encoder escaped before. Keying it on the
// data pointer and length is safe because p, a real pointer, keeps the
// string alive as long as the entry holds it: no other string can be
// allocated at the same address meanwhile, and Go strings do not change.
type cachedString struct {
	p   *byte
	n   uint64
	esc []byte // the JSON string, quotes included

	// As an event's name: `{"name":NAME,"ph":"P","ts":` for the phase P
	// it was last used with and no category, the start of most events;
	// headPh is 0 if none is kept, or if it does not fit a Short.
	head   jsonenc.Short
	headPh byte
	key    jsonenc.Short // as an arg's key: the JSON string and a colon, if it fits
}

// appendCached appends the string held by s (its n and p) as JSON.
func (e *encoder) appendCached(b []byte, s *slot) []byte {
	if c := e.cached(s); c != nil {
		return append(b, c.esc...)
	}
	return jsonenc.String(b, s.str())
}

// cached returns the cache entry of the string held by s (its n and p),
// or nil for a string too long to keep.
func (e *encoder) cached(s *slot) *cachedString {
	n := uint64(uint32(s.n)) // a span start keeps its token above
	if n > maxCachedBytes {
		return nil
	}
	c := &e.cache[(uintptr(unsafe.Pointer(s.p))>>3^uintptr(n))%nameCacheSize]
	if c.p != s.p || c.n != n || c.esc == nil {
		c.esc = jsonenc.String(c.esc[:0], s.str())
		c.p, c.n, c.headPh, c.key = s.p, n, 0, jsonenc.Short{}
	}
	return c
}

// setHead makes c's head the start of an event of phase ph, and reports
// whether it fits a Short.
func (e *encoder) setHead(c *cachedString, ph byte) bool {
	c.headPh = 0
	if len(`{"name":`)+len(c.esc)+len(phaseTs[ph]) > jsonenc.ShortMax {
		return false
	}
	var head [jsonenc.ShortMax]byte
	c.head.Set(append(append(append(head[:0], `{"name":`...), c.esc...), phaseTs[ph]...))
	c.headPh = ph
	return true
}

// setKey makes c's key, and reports whether it fits a Short.
func (e *encoder) setKey(c *cachedString) bool {
	if len(c.esc)+len(":") > jsonenc.ShortMax {
		return false
	}
	var key [jsonenc.ShortMax]byte
	return c.key.Set(append(append(key[:0], c.esc...), ':'))
}

// appendCachedString is appendCached for a string held elsewhere.
func (e *encoder) appendCachedString(b []byte, v string) []byte {
	s := slot{n: uint64(len(v)), p: unsafe.StringData(v)}
	return e.appendCached(b, &s)
}

// event appends an event that stands alone: instant, counter or metadata.
func (e *encoder) event(h *slot, rest []slot) {
	e.events++
	b := e.buf
	switch h.kind() {
	case kindThreadName:
		b = append(b, `{"name":"thread_name","ph":"M"`...)
		b = e.appendIDs(b, h.gid())
		b = append(b, `,"args":{"name":`...)
		b = jsonenc.String(b, h.str())
		e.buf = append(b, "}},\n"...)
	case kindThreadSort:
		b = append(b, `{"name":"thread_sort_index","ph":"M"`...)
		b = e.appendIDs(b, h.gid())
		b = append(b, `,"args":{"sort_index":`...)
		b = strconv.AppendInt(b, int64(rest[0].num), 10)
		e.buf = append(b, "}},\n"...)
	case kindInstant:
		b = e.appendHead(b, h, rest, 'i', h.at())
		b = append(b, `,"s":"`...)
		b = append(b, h.flags(), '"')
		b = e.appendIDs(b, h.gid())
		e.buf = e.appendTail(b, h, rest)
	case kindCounter:
		b = e.appendHead(b, h, rest, 'C', h.at())
		b = append(b, e.pidFld...)
		e.buf = e.appendTail(b, h, rest)
	case kindAsyncBegin, kindAsyncInstant, kindAsyncEnd:
		// id2.local puts the async track under this process in Perfetto;
		// a plain id would land on a global track.
		x := &rest[0]
		b = e.appendHead(b, h, rest, asyncPhase[h.kind()-kindAsyncBegin], h.at())
		b = e.appendIDs(b, h.gid())
		if h.kind() != kindAsyncBegin {
			// The goroutine is the begin's: an operation may end on
			// another, and catapult warns of an arg its phases differ on.
			e.gidArg = 0
		}
		b = appendAsyncID(b, x)
		b = appendScope(b, x)
		e.buf = e.appendTail(b, h, rest)
	case kindFlowBegin, kindFlowStep, kindFlowEnd:
		x := &rest[0]
		b = e.appendHead(b, h, rest, flowPhase[h.kind()-kindFlowBegin], h.at())
		b = e.appendIDs(b, h.gid())
		if h.kind() != kindFlowBegin {
			// The goroutine is the start's, as for an async operation:
			// catapult warns of an arg a flow's phases differ on.
			e.gidArg = 0
		}
		b = append(b, `,"id":`...)
		b = strconv.AppendUint(b, x.num, 10)
		if h.kind() == kindFlowEnd {
			// Bind to the enclosing slice, like s and t, rather than
			// to the next slice that begins after it.
			b = append(b, `,"bp":"e"`...)
		}
		b = appendScope(b, x)
		e.buf = e.appendTail(b, h, rest)
	}
}

var (
	asyncPhase = [...]byte{'b', 'n', 'e'}
	flowPhase  = [...]byte{'s', 't', 'f'}
)

// appendScope writes the scope held by the extra slot x.
// appendAsyncID appends the id2 field of an async event whose extra slot
// is x. A scoped id is written "scope:0x1": Perfetto keys async tracks on
// category and id2.local alone, so the scope must be part of the id for
// operations with the same id in two scopes to stay apart. A child on a
// track of its own (see Async.Begin) is "0x1.2a".
func appendAsyncID(b []byte, x *slot) []byte {
	b = append(b, `,"id2":{"local":`...)
	if scope := uint16(x.meta >> 16); scope != 0 {
		b = jsonenc.String(b, scopes.name(scope))
		b = append(b[:len(b)-1], ":0x"...) // inside the string
	} else {
		b = append(b, `"0x`...)
	}
	b = strconv.AppendUint(b, x.num, 16)
	if track := x.meta >> 32; track != 0 {
		b = append(b, '.')
		b = strconv.AppendUint(b, track, 16)
	}
	return append(b, `"}`...)
}

func appendScope(b []byte, x *slot) []byte {
	scope := uint16(x.meta >> 16)
	if scope == 0 {
		return b
	}
	b = append(b, `,"scope":`...)
	return jsonenc.String(b, scopes.name(scope))
}

// complete appends the X event of a span that started with h and lasted
// dur; its args are the start's, then the end's (endArgs).
func (e *encoder) complete(h *slot, rest, endArgs []slot, dur int64) {
	e.events++
	if e.completeShort(h, rest, endArgs, dur) {
		return
	}
	b := e.appendHead(e.buf, h, rest, 'X', h.at())
	b = append(b, `,"dur":`...)
	b = jsonenc.Micros(b, dur)
	b = e.appendIDs(b, h.gid())
	e.buf = e.appendArgs(b, args(h, rest), endArgs)
}

// spanRoom is the spare capacity completeShort makes before an event:
// enough for its head (a Short), the timestamp (a Short of its
// millisecond's digits and 7 bytes), the duration (7 and 26), and the
// Short of the pid and tid after them.
const spanRoom = 4 * jsonenc.ShortMax

// completeShort appends what complete would for the X event of the most
// common shape, and reports whether it did: no category, no lanes, a name
// that fits the encoder's Shorts. It writes the same bytes as the general
// path in fewer steps up to the args: one function, the cached pieces
// copied whole (jsonenc.Short.Put) into room made once, the fixed ones
// byte by byte, where each piece of the general path is a call, an append
// and a capacity check. BenchmarkEncoder measures it, and the
// differential and fuzz tests hold it to the reference encoder's bytes.
func (e *encoder) completeShort(h *slot, rest, endArgs []slot, dur int64) bool {
	if e.shared != nil || h.hasExtra() {
		return false
	}
	c := e.cached(h)
	if c == nil || (c.headPh != 'X' && !e.setHead(c, 'X')) {
		return false
	}
	b := e.buf
	if cap(b)-len(b) < spanRoom {
		b = slices.Grow(b, spanRoom)
	}
	i := c.head.Put(b[:cap(b)], len(b))
	if j, ok := e.ts.Put(b[:cap(b)], i, h.at()-e.base); ok {
		b = b[:j]
	} else {
		b = e.ts.Append(b[:i], h.at()-e.base)
	}
	b = append(b, ',', '"', 'd', 'u', 'r', '"', ':')
	if 0 <= dur && dur < 10_000 {
		b = b[:jsonenc.PutMicros(b[:cap(b)], len(b), uint32(dur))]
	} else {
		b = jsonenc.Micros(b, dur)
	}
	tid := h.gid()
	if t := &e.tids[tid%tidCacheSize]; t.tid == tid && t.f.Len() != 0 {
		if e.names != nil {
			e.names.see(tid)
		}
		b = b[:t.f.Put(b[:cap(b)], len(b))]
	} else {
		b = e.appendTid(b, tid) // tells e.names too
	}
	e.buf = e.appendArgs(b, rest, endArgs)
	return true
}

// begin appends the B event of a span that started with h.
func (e *encoder) begin(h *slot, rest []slot) {
	e.events++
	b := e.appendHead(e.buf, h, rest, 'B', h.at())
	b = e.appendIDs(b, h.gid())
	e.buf = e.appendTail(b, h, rest)
}

// end appends the E event, at time at, of the span that began with h,
// with the args given to its end (both viewers add them to the span's),
// and notes in the batch where it is and where its B is (batch bBatch at
// bOff), should a write fail (see failures).
func (e *encoder) end(h *slot, rest, endArgs []slot, at int64, bBatch uint64, bOff int) {
	e.events++
	start := len(e.buf)
	b := e.appendHead(e.buf, h, rest, 'E', at)
	b = e.appendIDs(b, h.gid())
	e.gidArg = 0 // on the B already: catapult warns of an arg both give
	e.buf = e.appendArgs(b, endArgs, nil)
	if e.cur != nil {
		e.cur.noteEnd(endRef{start: start, end: len(e.buf), bBatch: bBatch, bOff: bOff})
	}
}

// skipForTee notes that the event written since start is to be left out
// of tee s's copy of the batch: see flusher.noteFlow.
func (e *encoder) skipForTee(s *teeStream, start int) {
	e.cur.noteTeeSkip(teeSkip{s: s, start: start, end: len(e.buf)})
}

// retimeForTee gives tee s, in place of the event written since start, a
// copy of it that begins at at, and for an X event lasts dur: a span
// clipped to the tee's window (see flusher.clipForTees).
func (e *encoder) retimeForTee(s *teeStream, start int, at, dur int64) {
	alt := e.cur.teeAlt()
	from := len(alt)
	e.cur.noteTeeVariant(s, start, len(e.buf), from, retimed(alt, e.buf[start:], at-e.base, dur))
}

// retimed appends to dst the event line as the encoder wrote it, with
// its ts moved to ts (nanoseconds from ts 0) and, if it has a dur, its
// dur to dur. Its ts is the first `"ts":` of the line: the name and the
// category before it are JSON strings, which cannot hold an unescaped
// quote; an X event's dur follows its ts at once (see complete).
func retimed(dst, line []byte, ts, dur int64) []byte {
	const tsKey, durKey = `"ts":`, `,"dur":`
	i := bytes.Index(line, []byte(tsKey))
	if i < 0 {
		return append(dst, line...)
	}
	i += len(tsKey)
	dst = jsonenc.Micros(append(dst, line[:i]...), ts)
	i += numberLen(line[i:])
	if bytes.HasPrefix(line[i:], []byte(durKey)) {
		i += len(durKey)
		dst = jsonenc.Micros(append(dst, durKey...), dur)
		i += numberLen(line[i:])
	}
	return append(dst, line[i:]...)
}

// numberLen returns the length of the JSON number (as Micros writes one)
// at the start of b.
func numberLen(b []byte) int {
	n := 0
	for n < len(b) && (b[n] >= '0' && b[n] <= '9' || b[n] == '.' || b[n] == '-') {
		n++
	}
	return n
}

// noteRepeat notes that the event written since start, at the head of a
// new file, repeats the B event (or "b") at bOff of batch bBatch, should
// the new file be refused (see failures.refused).
func (e *encoder) noteRepeat(start int, bBatch uint64, bOff int) {
	e.cur.noteRepeat(endRef{start: start, end: len(e.buf), bBatch: bBatch, bOff: bOff})
}

// phaseTs holds `,"ph":"P","ts":` for every phase letter P.
var phaseTs = func() (p [128]string) {
	for c := 'A'; c <= 'z'; c++ {
		p[c] = `,"ph":"` + string(c) + `","ts":`
	}
	return p
}()

// appendHead starts the event whose head is h: name, category, phase and
// timestamp.
func (e *encoder) appendHead(b []byte, h *slot, rest []slot, ph byte, at int64) []byte {
	if x := extra(h, rest); (x == nil || uint16(x.meta) == 0) && ph != 'b' && ph != 'n' && ph != 'e' {
		// No category: name and phase come as one, from the cache.
		if c := e.cached(h); c != nil && (c.headPh == ph || e.setHead(c, ph)) {
			return e.ts.Append(c.head.Append(b), at-e.base)
		}
	}
	b = append(b, `{"name":`...)
	b = e.appendCached(b, h)
	if x := extra(h, rest); x != nil && uint16(x.meta) != 0 {
		b = append(b, `,"cat":`...)
		b = e.appendCachedString(b, categories.name(uint16(x.meta)))
	} else if ph == 'b' || ph == 'n' || ph == 'e' {
		// chrome://tracing ignores nestable async events without a
		// category ("require a cat parameter"); an empty one will do.
		b = append(b, `,"cat":""`...)
	}
	b = append(b, phaseTs[ph]...)
	return e.ts.Append(b, at-e.base)
}

// appendIDs appends the pid and tid of an event of goroutine gid: gid
// itself, or the lane it is drawn on (see WithLanes).
func (e *encoder) appendIDs(b []byte, gid uint64) []byte {
	if e.shared == nil {
		return e.appendTid(b, gid)
	}
	tid := e.tidNext
	if tid == 0 {
		tid = e.shared.tid(gid)
	}
	e.tidNext, e.gidArg = 0, gid
	return e.appendTid(b, tid)
}

// appendTid appends the pid and the track id tid.
func (e *encoder) appendTid(b []byte, tid uint64) []byte {
	if e.names != nil {
		e.names.see(tid)
	}
	c := &e.tids[tid%tidCacheSize]
	if c.tid != tid || c.f.Len() == 0 {
		var f [jsonenc.ShortMax]byte
		c.f.Set(jsonenc.Uint(append(f[:0], e.pidTid...), tid)) // fits: see maxTidPiece
		c.tid = tid
	}
	return c.f.Append(b)
}

// maxTidPiece is the longest pid and tid appendTid writes: a pid of an
// int's 20 characters and a tid of a uint64's 20 digits.
const maxTidPiece = len(`,"pid":`) + 20 + len(`,"tid":`) + 20

var _ [jsonenc.ShortMax - maxTidPiece]struct{} // compiles only if it fits a Short

// appendTail ends an event with its args. Category and scope are not args:
// they are in the extra slot.
func (e *encoder) appendTail(b []byte, h *slot, rest []slot) []byte {
	return e.appendArgs(b, args(h, rest), nil)
}

// appendArgs ends an event with the args in as and then in more (a span's
// start and end args, in one object).
func (e *encoder) appendArgs(b []byte, as, more []slot) []byte {
	gid := e.gidArg
	e.gidArg = 0
	if len(as)+len(more) > 1 || gid != 0 {
		return e.appendArgObject(b, as, more, gid)
	}
	// The fixed pieces go byte by byte: appending a string constant is a
	// call to memmove, which for a few bytes costs more than the stores.
	if len(as)+len(more) == 0 {
		return append(b, '}', ',', '\n')
	}
	// One arg of one slot, the most common case: no key can repeat.
	if len(as) == 0 {
		as = more
	}
	b = append(b, ',', '"', 'a', 'r', 'g', 's', '"', ':', '{')
	b = e.appendArgList(b, as)
	b[len(b)-1] = '}' // for the comma after the arg
	return append(b, '}', ',', '\n')
}

// appendArgObject is appendArgs for more than one arg, or an arg and the
// goroutine arg gid of an event on a lane.
func (e *encoder) appendArgObject(b []byte, as, more []slot, gid uint64) []byte {
	b = append(b, ',', '"', 'a', 'r', 'g', 's', '"', ':', '{')
	if mayRepeatKeys(as, more, gid != 0) {
		b = e.appendArgsOnce(b, as, more, gid)
	} else {
		if gid != 0 { // drawn on a lane: say whose event it is
			b = append(b, `"goroutine":`...)
			b = append(jsonenc.Uint(b, gid), ',')
		}
		b = e.appendArgList(b, as)
		if len(more) > 0 {
			b = e.appendArgList(b, more)
		}
	}
	// Each arg ended with a comma: the last one ends the object instead.
	b[len(b)-1] = '}'
	return append(b, '}', ',', '\n')
}

// Repeated keys.
//
// An event's args never hold a key twice: a JSON parser keeps one of the
// two, and so does each viewer. The later arg replaces the earlier, so an
// arg given to a span's end replaces one of the same key given to its
// start, as both viewers show it. Keys are compared as written: two keys
// that differ only in invalid UTF-8, or past MaxStringLen, are written
// the same. Most events have distinct, short, valid keys, which
// mayRepeatKeys tells from their raw bytes; the others take the slower
// appendArgsOnce.

// mayRepeatKeys reports whether two of the args in as and more, or one of
// them and the goroutine arg of an event on a lane, may be written with
// the same key.
func mayRepeatKeys(as, more []slot, lane bool) bool {
	keys := make([]string, 0, 2*maxArgs+1) // a start's and an end's args
	if lane {
		keys = append(keys, "goroutine")
	}
	for _, list := range [2][]slot{as, more} {
		for i := 0; i < len(list); i += argWidth(&list[i]) {
			k := list[i].str()
			if len(k) > MaxStringLen || !utf8.ValidString(k) || slices.Contains(keys, k) {
				return true
			}
			keys = append(keys, k)
		}
	}
	return false
}

// argWidth returns how many slots the arg whose head is a takes.
func argWidth(a *slot) int {
	if a.argKind() == argString && a.meta&metaHasValue != 0 {
		return 2
	}
	return 1
}

// appendArgsOnce appends the args in as and more, and before them the
// goroutine arg gid of an event on a lane, leaving out each arg whose key
// a later one repeats.
func (e *encoder) appendArgsOnce(b []byte, as, more []slot, gid uint64) []byte {
	spans := make([]argSpan, 0, 2*maxArgs+1)
	first := len(b)
	if gid != 0 {
		b = append(b, `"goroutine":`...)
		b = append(jsonenc.Uint(b, gid), ',')
		spans = append(spans, argSpan{first, first + len(`"goroutine"`), len(b)})
	}
	for _, list := range [2][]slot{as, more} {
		for i := 0; i < len(list); {
			w := argWidth(&list[i])
			at := len(b)
			b = e.appendArgList(b, list[i:i+w])
			spans = append(spans, argSpan{at, quotedEnd(b, at), len(b)})
			i += w
		}
	}
	// Compact: each kept arg moves down over those left out before it.
	out := first
	for i, a := range spans {
		if !repeatedLater(b, a, spans[i+1:]) {
			out += copy(b[out:], b[a.key:a.end])
		}
	}
	return b[:out]
}

// An argSpan is where an encoded arg is: its quoted key from key to colon
// (the ':'), then its value up to end (after its comma).
type argSpan struct{ key, colon, end int }

// quotedEnd returns where the JSON string that starts at b[at] ends:
// after its closing quote.
func quotedEnd(b []byte, at int) int {
	for i := at + 1; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++ // an escape: \", \\, \n, \u2028...
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// repeatedLater reports whether one of the args at later has a's key.
func repeatedLater(b []byte, a argSpan, later []argSpan) bool {
	key := b[a.key:a.colon]
	for _, l := range later {
		if bytes.Equal(key, b[l.key:l.colon]) {
			return true
		}
	}
	return false
}

// appendArgList appends the args in as, each followed by a comma.
func (e *encoder) appendArgList(b []byte, as []slot) []byte {
	for i := 0; i < len(as); i++ {
		a := &as[i]
		if cap(b)-len(b) < jsonenc.ShortMax {
			b = slices.Grow(b, jsonenc.ShortMax)
		}
		if c := e.cached(a); c != nil && (c.key.Len() != 0 || e.setKey(c)) {
			b = b[:c.key.Put(b[:cap(b)], len(b))]
		} else {
			b = append(jsonenc.String(b, a.str()), ':')
		}
		switch a.argKind() {
		case argString:
			if a.meta&metaHasValue != 0 {
				i++
				b = jsonenc.String(b, as[i].str())
			} else {
				b = append(b, `""`...)
			}
		case argInt:
			b = jsonenc.Int(b, int64(a.num))
		case argUint:
			b = jsonenc.Uint(b, a.num)
		case argFloat:
			b = jsonenc.Float(b, math.Float64frombits(a.num))
		case argBool:
			b = strconv.AppendBool(b, a.num != 0)
		case argDuration:
			b = jsonenc.Duration(b, time.Duration(a.num))
		case argTime:
			b = append(b, '"')
			b = time.Unix(0, int64(a.num)).UTC().AppendFormat(b, time.RFC3339Nano)
			b = append(b, '"')
		case argTimeSec:
			b = append(b, '"')
			b = time.Unix(int64(a.num), 0).UTC().AppendFormat(b, time.RFC3339Nano)
			b = append(b, '"')
		}
		b = append(b, ',')
	}
	return b
}

// anyAsync appends the "b" (with the start's args) or "e" (with endArgs)
// event, at time at, of the SpanHandle that started with h.
func (e *encoder) anyAsync(h *slot, rest, endArgs []slot, ph byte, at int64) {
	e.events++
	var b []byte
	if uint16(rest[0].meta) == 0 {
		// No category: catapult drops async events without one, and
		// tools match them by category, so give them "span".
		b = append(e.buf, `{"name":`...)
		b = e.appendCached(b, h)
		b = append(b, `,"cat":"span"`...)
		b = append(b, phaseTs[ph]...)
		b = jsonenc.Micros(b, at-e.base)
	} else {
		b = e.appendHead(e.buf, h, rest, ph, at)
	}
	b = e.appendIDs(b, h.gid())
	as := args(h, rest)
	if ph == 'e' {
		e.gidArg = 0 // on the b already
		as = endArgs
	}
	x := &rest[0]
	b = appendAsyncID(b, x)
	b = appendScope(b, x)
	e.buf = e.appendArgs(b, as, nil)
}

// anyFlow appends a flow event ("s" or "f", bound to the enclosing slice)
// of the SpanHandle that started with h, on goroutine gid's track at time
// at; its id is the SpanHandle's.
func (e *encoder) anyFlow(h *slot, rest []slot, ph byte, gid uint64, at int64) {
	e.events++
	b := e.appendHead(e.buf, h, rest, ph, at)
	b = e.appendIDs(b, gid)
	e.gidArg = 0
	b = append(b, `,"id":`...)
	b = strconv.AppendUint(b, rest[0].num, 10)
	if ph == 'f' {
		b = append(b, `,"bp":"e"`...)
	}
	b = appendScope(b, &rest[0])
	e.buf = append(b, "},\n"...)
}

// The tracer's own events: the process metadata at the top of a file and
// the drop counter.

// processName appends the process_name event: name, and the clock
// anchors of ts 0, wall the wall-clock time of it.
func (e *encoder) processName(name string, wall time.Time) {
	b := append(e.buf, `{"name":"process_name","ph":"M"`...)
	b = append(b, e.pidFld...)
	b = append(b, `,"tid":0,"args":{"name":`...)
	b = jsonenc.String(b, name)
	b = append(b, `,"ts0_wall":"`...)
	b = wall.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","ts0_unix_ns":`...)
	b = strconv.AppendInt(b, wall.UnixNano(), 10)
	b = append(b, `,"ts0_mono_ns":`...) // runtime.nanotime of ts 0: aligns an execution trace exactly
	b = strconv.AppendInt(b, e.base, 10)
	e.buf = append(b, "}},\n"...)
}

// processSortIndex appends the process_sort_index event.
func (e *encoder) processSortIndex(index int) {
	b := append(e.buf, `{"name":"process_sort_index","ph":"M"`...)
	b = append(b, e.pidFld...)
	b = append(b, `,"tid":0,"args":{"sort_index":`...)
	b = strconv.AppendInt(b, int64(index), 10)
	e.buf = append(b, "}},\n"...)
}

// processLabels appends the process_labels event.
func (e *encoder) processLabels(labels string) {
	b := append(e.buf, `{"name":"process_labels","ph":"M"`...)
	b = append(b, e.pidFld...)
	b = append(b, `,"tid":0,"args":{"labels":`...)
	b = jsonenc.String(b, labels)
	e.buf = append(b, "}},\n"...)
}

// dropCounter appends the tracer.dropped counter at nanotime at: drops
// events that will never reach the file.
func (e *encoder) dropCounter(at int64, drops uint64) {
	b := append(e.buf, `{"name":"tracer.dropped","ph":"C","ts":`...)
	b = e.ts.Append(b, at-e.base)
	b = append(b, e.pidFld...)
	b = append(b, `,"args":{"events":`...)
	b = strconv.AppendUint(b, drops, 10)
	e.buf = append(b, "}},\n"...)
}

// appendTrackName appends the thread_name and thread_sort_index events of
// track gid (a goroutine, or a lane: see WithLanes).
func (e *encoder) appendTrackName(gid uint64, tn *trackName) {
	b := e.buf
	if tn.hasName {
		b = append(b, `{"name":"thread_name","ph":"M"`...)
		b = e.appendTid(b, gid)
		b = append(b, `,"args":{"name":`...)
		b = jsonenc.String(b, tn.name)
		b = append(b, "}},\n"...)
		e.events++
	}
	if tn.hasSort {
		b = append(b, `{"name":"thread_sort_index","ph":"M"`...)
		b = e.appendTid(b, gid)
		b = append(b, `,"args":{"sort_index":`...)
		b = strconv.AppendInt(b, tn.sort, 10)
		b = append(b, "}},\n"...)
		e.events++
	}
	e.buf = b
}
