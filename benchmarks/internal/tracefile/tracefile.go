// Package tracefile counts the spans in a trace file the tracer wrote, so
// the benchmarks can check that every span they recorded reached the file.
package tracefile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
)

// Counts is what Count found in a file.
type Counts struct {
	Spans    int // X events with the name asked for, plus matched B/E pairs
	Begins   int // B events with that name left without their E
	Unpaired int // E events with that name that matched no B
	Events   int // all events in the file, metadata and counters included
}

// event is the part of a Chrome Trace Event the count needs.
type event struct {
	Name string `json:"name"`
	Ph   string `json:"ph"`
	Tid  int64  `json:"tid"`
}

// Count parses the trace file at path and counts the spans named name: X
// events, and B/E pairs matched per thread (tid) in file order. A file
// the tracer did not close (it ends without "]") is repaired first as the
// tracer's README says: an incomplete last line is deleted, the trailing
// comma stripped and "]" appended.
func Count(path, name string) (Counts, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Counts{}, err
	}
	return CountBytes(Repair(data), name)
}

// Repair returns data as strict JSON: unchanged if it ends with "]" (or
// "]}", a plain file closed as an object), otherwise with an incomplete
// last line deleted, the trailing comma stripped and "]" appended.
func Repair(data []byte) []byte {
	trimmed := bytes.TrimRight(data, " \t\r\n")
	if bytes.HasSuffix(trimmed, []byte("]")) || bytes.HasSuffix(trimmed, []byte("]\n}")) {
		return data
	}
	if !bytes.HasSuffix(trimmed, []byte("},")) {
		if i := bytes.LastIndexByte(trimmed, '\n'); i >= 0 {
			trimmed = trimmed[:i]
		}
	}
	trimmed = bytes.TrimRight(trimmed, " \t\r\n")
	trimmed = bytes.TrimSuffix(trimmed, []byte(","))
	return append(trimmed[:len(trimmed):len(trimmed)], "\n]\n"...)
}

// CountBytes counts the spans named name in a strict JSON trace: an array
// of events.
func CountBytes(data []byte, name string) (Counts, error) {
	var c Counts
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if tok == json.Delim('{') {
		// A plain file closed by Close: {"displayTimeUnit":"ns","traceEvents":[...]}.
		for err == nil && tok != "traceEvents" {
			if tok, err = dec.Token(); err == nil && tok == "displayTimeUnit" {
				tok, err = dec.Token()
			}
		}
		if err == nil {
			tok, err = dec.Token()
		}
	}
	if err != nil || tok != json.Delim('[') {
		return c, fmt.Errorf("tracefile: not a trace's array of events (token %v, %v)", tok, err)
	}
	open := map[int64]int{} // B events of name still open, per tid
	for dec.More() {
		var e event
		if err := dec.Decode(&e); err != nil {
			return c, fmt.Errorf("tracefile: event %d: %w", c.Events, err)
		}
		c.Events++
		if e.Name != name {
			continue
		}
		switch e.Ph {
		case "X":
			c.Spans++
		case "B":
			open[e.Tid]++
		case "E":
			if open[e.Tid] == 0 {
				c.Unpaired++
				continue
			}
			open[e.Tid]--
			c.Spans++
		}
	}
	if _, err := dec.Token(); err != nil {
		return c, fmt.Errorf("tracefile: after event %d: %w", c.Events, err)
	}
	for _, n := range open {
		c.Begins += n
	}
	return c, nil
}
