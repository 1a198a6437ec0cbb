// Package traceparent reads and makes W3C Trace Context traceparent
// header values (https://www.w3.org/TR/trace-context/), for tracehttp,
// which sends and receives them, and tracer merge, which binds the two
// ends of a request by them.
package traceparent

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"strconv"
)

// Len is the length of a version 00 traceparent, "00-" + 32 hex digits of
// trace id + "-" + 16 of parent id + "-" + 2 of flags.
const Len = 55

// Parse checks v the way the specification tells a receiver to: version
// 00 exactly Len characters; a later version at least that, with a "-"
// after them if longer; lowercase hex everywhere; neither id all zeros;
// version ff invalid. It returns the first Len characters (the fields a
// version 00 reader understands) and the parent id, the id of the
// caller's span, as a number.
func Parse(v string) (canonical string, parent uint64, ok bool) {
	if len(v) < Len || v[2] != '-' || v[35] != '-' || v[52] != '-' {
		return "", 0, false
	}
	version := v[0:2]
	if !isHex(version) || version == "ff" || (version == "00" && len(v) != Len) || (len(v) > Len && v[Len] != '-') {
		return "", 0, false
	}
	trace, span, flags := v[3:35], v[36:52], v[53:55]
	if !isHex(trace) || !isHex(span) || !isHex(flags) || allZero(trace) || allZero(span) {
		return "", 0, false
	}
	parent, err := strconv.ParseUint(span, 16, 64)
	if err != nil {
		return "", 0, false
	}
	return v[:Len], parent, true
}

// New returns a version 00 traceparent with a random trace id and parent
// id, flagged sampled (the caller records the request), and the parent id:
// the header of a request that starts a trace.
func New() (string, uint64) {
	// The trace id, then the parent id: one read for both. All zeros is
	// invalid for either.
	var ids [24]byte
	for [16]byte(ids[:16]) == [16]byte{} || [8]byte(ids[16:]) == [8]byte{} {
		_, _ = rand.Read(ids[:]) // never fails: crypto/rand panics rather than return an error
	}
	var b [Len]byte
	copy(b[:], "00-")
	hex.Encode(b[3:35], ids[:16])
	b[35] = '-'
	copy(b[53:], "01")
	return withParent(b[:], [8]byte(ids[16:]))
}

// Child returns the traceparent of a request sent on behalf of the request
// whose traceparent, as Parse returned it, is in: version 00 (the version
// this package writes, whatever in's), in's trace id and flags as they
// are, and a new random parent id, which it returns too. W3C Trace Context
// asks that of every hop: one trace id down the call chain, a parent id
// for each call.
func Child(in string) (string, uint64) {
	var b [Len]byte
	copy(b[:], in[:Len])
	copy(b[:], "00")
	var span [8]byte
	for span == [8]byte{} {
		_, _ = rand.Read(span[:])
	}
	return withParent(b[:], span)
}

// withParent writes the parent id span and the "-" after it into the
// traceparent b, whose other fields are set, and returns b and the parent
// id.
func withParent(b []byte, span [8]byte) (string, uint64) {
	hex.Encode(b[36:52], span[:])
	b[52] = '-'
	return string(b), binary.BigEndian.Uint64(span[:])
}

// TraceID returns the trace id of a traceparent Parse accepted, its 32 hex
// digits.
func TraceID(canonical string) string { return canonical[3:35] }

// BindID returns the bind_id of the flow from a request's client span to
// its server span, made of the parent id: "0x" and 16 hex digits, which
// both Perfetto and chrome://tracing read.
func BindID(parent uint64) string {
	return "0x" + strconv.FormatUint(parent, 16)
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// allZero reports whether s is all '0' digits.
func allZero(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '0' {
			return false
		}
	}
	return true
}
