package tracefile

import (
	"bytes"
)

// Terminate applies the documented repair to a trace cut off by a crash
// (the bare array with no closing ']', as the tracer leaves a killed
// process's file): it closes the array after its last whole element,
// dropping white space, the trailing comma and, if the last element is
// torn, what is left of it; torn reports that. The elements before are
// kept as they are, valid JSON or not, so that a strict parser of the
// result still sees every one: Terminate closes a file, it does not
// clean it (tracer repair does). Any other data, a closed trace, the
// object form {"traceEvents":[...]} or not a trace at all, is returned as
// it is, data itself; a repaired file is a new slice, never data's
// memory written over.
func Terminate(data []byte) (out []byte, torn bool) {
	r := NewReader(bytes.NewReader(data))
	for {
		if _, err := r.Next(); err != nil {
			break // io.EOF: a bytes.Reader fails no other way
		}
	}
	if !r.Unterminated() || r.obj {
		return data, false
	}
	out = make([]byte, 0, r.elemEnd+3)
	out = append(out, data[:r.elemEnd]...)
	return append(out, "\n]\n"...), r.torn
}
