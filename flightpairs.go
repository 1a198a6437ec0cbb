package tracer

import "bytes"

// Keeping async and flow pairs whole in a flight recording.
//
// The window pushes out its oldest events one by one, so it can hold the
// end of an async operation without its begin, or the end of a flow
// without its start: chrome://tracing warns about each and drops it. Spans
// do not have the problem (a flight recorder writes them whole, as X
// events). So when a trace is taken, keepPairs reads the window's events
// as it copies them: an async instant or end whose operation began before
// the window, and a flow step or end whose flow started before it, are
// left out of the trace (the window keeps them; a later trace may have
// room for the whole pair); an operation still open at the end is ended at
// the time the trace is taken, as open spans are drawn up to the end of
// the trace.
//
// It reads the fields the encoder writes, in the order it writes them,
// before any arg: "name", "cat", "ph", "id2" (async) or "id" (flows),
// "scope".

// asyncPairKey names one async operation id: category, scope and id, as the
// viewers match them. The byte strings are the JSON text of the fields.
type asyncPairKey struct{ cat, scope, id string }

// flowPairKey names one flow: Perfetto matches v1 flow events on id, category
// and name.
type flowPairKey struct{ cat, name, id string }

// pairFilter is keepPairs' state while it reads one window.
type pairFilter struct {
	open  map[asyncPairKey][][]byte // begun operations and children: their b lines, as a stack
	flows map[flowPairKey]bool      // flows started in the window
	order []asyncPairKey            // keys in the order first begun, for a stable output
}

// keepPairs reads src, the window's batches in order, each of whole
// lines, and returns the runs of its lines to keep, less the async and
// flow events whose other half is not in src, and the end events at time
// at (microseconds text) of every operation still open, and how many
// events it left out. The runs are slices of src: the caller copies them
// once, into the trace (see flusher.snapshot).
func keepPairs(src [][]byte, at []byte) (kept [][]byte, ends []byte, left int) {
	p := pairFilter{open: map[asyncPairKey][][]byte{}, flows: map[flowPairKey]bool{}}
	for _, b := range src {
		run := 0 // where the run of kept lines began
		for i := 0; i < len(b); {
			j := len(b)
			if k := bytes.IndexByte(b[i:], '\n'); k >= 0 {
				j = i + k + 1
			}
			if !p.keep(b[i:j]) {
				if run < i {
					kept = append(kept, b[run:i])
				}
				run = j
				left++
			}
			i = j
		}
		if run < len(b) {
			kept = append(kept, b[run:])
		}
	}
	for _, k := range p.order {
		for st := p.open[k]; len(st) > 0; st = st[:len(st)-1] {
			ends = appendAsyncEnd(ends, st[len(st)-1], at)
		}
	}
	return kept, ends, left
}

// keep reports whether line is kept, and notes what it begins or ends.
func (p *pairFilter) keep(line []byte) bool {
	head := line
	if i := bytes.Index(line, []byte(`,"args":{`)); i >= 0 {
		head = line[:i]
	}
	ph := strField(head, `"ph":"`)
	if len(ph) != 1 {
		return true
	}
	switch ph[0] {
	case 'b', 'n', 'e':
		k := asyncPairKey{cat: string(strField(head, `"cat":"`)), scope: string(strField(head, `"scope":"`)), id: string(strField(head, `"local":"`))}
		st := p.open[k]
		switch ph[0] {
		case 'b':
			if _, seen := p.open[k]; !seen {
				p.order = append(p.order, k)
			}
			p.open[k] = append(st, line)
		case 'n':
			return len(st) > 0
		case 'e':
			if len(st) == 0 {
				return false
			}
			p.open[k] = st[:len(st)-1]
		}
	case 's', 't', 'f':
		k := flowPairKey{cat: string(strField(head, `"cat":"`)), name: string(strField(head, `"name":"`)), id: string(numField(head, `,"id":`))}
		if ph[0] == 's' {
			p.flows[k] = true
			return true
		}
		if !p.flows[k] {
			return false
		}
		if ph[0] == 'f' {
			delete(p.flows, k)
		}
	}
	return true
}

// strField returns the text of the JSON string after key (which ends with
// the string's opening quote) in head, or nil. A JSON string's own quotes
// are escaped, so the first match of a key is the field's.
func strField(head []byte, key string) []byte {
	i := bytes.Index(head, []byte(key))
	if i < 0 {
		return nil
	}
	v := head[i+len(key):]
	for j := 0; j < len(v); j++ {
		switch v[j] {
		case '\\':
			j++
		case '"':
			return v[:j]
		}
	}
	return v
}

// numField returns the text of the number after key in head, or nil.
func numField(head []byte, key string) []byte {
	i := bytes.Index(head, []byte(key))
	if i < 0 {
		return nil
	}
	v := head[i+len(key):]
	if end := bytes.IndexAny(v, ",}"); end >= 0 {
		return v[:end]
	}
	return v
}

// appendAsyncEnd appends the e event that ends the operation begun by the
// b event line, at time at: the same name, category, ids and scope.
func appendAsyncEnd(dst, begin, at []byte) []byte {
	head := bytes.TrimRight(begin, ",\n")
	if i := bytes.Index(head, []byte(`,"args":{`)); i >= 0 {
		head = head[:i]
	} else {
		head = head[:len(head)-1] // the closing brace
	}
	i := bytes.Index(head, []byte(`"ph":"b","ts":`))
	if i < 0 {
		return dst
	}
	rest := head[i+len(`"ph":"b","ts":`):]
	j := bytes.IndexByte(rest, ',')
	if j < 0 {
		return dst
	}
	dst = append(dst, head[:i]...)
	dst = append(dst, `"ph":"e","ts":`...)
	dst = append(dst, at...)
	dst = append(dst, rest[j:]...)
	return append(dst, "},\n"...)
}
