package trace

import (
	"fmt"

	"github.com/gotracer/tracer/internal/tracefile"
)

// Span names.
//
// A span name is meant to say what the code does ("decode"), and the ids
// of what it did it to belong in args. Producers that put the ids in the
// name ("request 8127") make a name per span: millions of names, whose
// numbers would take memory in proportion to the file. So past
// groupAfter distinct names an Analyzer groups the names that differ
// only in their digits ("request <n>"), those seen so far and those to
// come, and past maxNames groups it puts every new name in one group of
// its own, otherNames. Both are told in Names.Note.

// groupAfter is how many distinct span names an Analyzer keeps apart
// before it groups those that differ only in digits.
const groupAfter = 10_000

// maxNames is the most groups of names an Analyzer keeps.
const maxNames = 100_000

// otherNames is the group of the names past maxNames.
const otherNames = "(other names)"

// digitsGroup appends name to b with each run of digits replaced by <n>.
func digitsGroup(b, name []byte) []byte {
	for i := 0; i < len(name); i++ {
		if isDigit(name[i]) {
			b = append(b, "<n>"...)
			for i+1 < len(name) && isDigit(name[i+1]) {
				i++
			}
			continue
		}
		b = append(b, name[i])
	}
	return b
}

// hasDigit reports whether b holds a digit.
func hasDigit(b []byte) bool {
	for _, c := range b {
		if isDigit(c) {
			return true
		}
	}
	return false
}

// name returns the index in a.Names of the span name s (its group, once
// names are grouped).
func (a *Analyzer) name(s tracefile.Str) int32 {
	raw := s.Raw
	if s.Escaped {
		a.decoded = s.Append(a.decoded[:0])
		raw = a.decoded
	}
	if a.grouped {
		a.groupKey = digitsGroup(a.groupKey[:0], raw)
		if a.example == "" && len(a.groupKey) != len(raw) {
			a.example = string(raw)
		}
		raw = a.groupKey
	}
	if i, ok := a.nameIdx[string(raw)]; ok {
		return i
	}
	if len(a.Names) >= maxNames {
		a.others++
		raw = []byte(otherNames)
		if i, ok := a.nameIdx[otherNames]; ok {
			return i
		}
	}
	i := int32(len(a.Names))
	a.Names = append(a.Names, &NameStats{Name: string(raw)})
	a.nameIdx[string(raw)] = i
	if !a.grouped && len(a.Names) > groupAfter {
		a.group()
		return a.name(s)
	}
	return i
}

// group merges the names kept so far by digitsGroup, and makes name
// group the names to come.
func (a *Analyzer) group() {
	a.grouped = true
	remap := make([]int32, len(a.Names))
	var names []*NameStats
	idx := map[string]int32{}
	for i, n := range a.Names {
		key := n.Name
		if b := []byte(n.Name); hasDigit(b) {
			key = string(digitsGroup(nil, b))
			if a.example == "" {
				a.example = n.Name
			}
		}
		j, ok := idx[key]
		if !ok {
			j = int32(len(names))
			idx[key] = j
			names = append(names, &NameStats{Name: key})
		}
		remap[i] = j
		names[j].merge(n)
	}
	for _, t := range a.trackList {
		for i := range t.stack {
			if t.stack[i].name >= 0 {
				t.stack[i].name = remap[t.stack[i].name]
			}
		}
		t.raw.Each(func(r *rawSlice) {
			if r.name >= 0 {
				r.name = remap[r.name]
			}
		})
		for i := range t.open {
			o := &t.open[i]
			if old := a.Names[o.name].Name; hasDigit([]byte(old)) {
				a.exact[o.seq] = old
			}
			o.name = remap[o.name]
		}
	}
	a.remapSets(remap)
	a.remapKept(remap)
	a.Names, a.nameIdx = names, idx
}

// Note returns what the user should know of the span names, or "".
func (a *Analyzer) Note() string {
	if !a.grouped {
		return ""
	}
	n := fmt.Sprintf("more than %d span names: names that differ only in digits are counted as one (%q as %q). Names that hold ids make the trace hard to read and to sum up: put the ids in args, as tracer.Span(\"request\", tracer.Int(\"id\", id)) does",
		groupAfter, a.example, string(digitsGroup(nil, []byte(a.example))))
	if a.others > 0 {
		n += fmt.Sprintf("; past %d groups, %d more spans are counted as %q", maxNames, a.others, otherNames)
	}
	return n
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
