package mutextrace

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestWriteTrace(t *testing.T) {
	Reset()
	defer Reset()
	func() {
		outer := Start("outer", String("file", "a\"b.json"), Int("n", 3))
		defer outer.Stop()
		inner := Start("inner", Int("a", 1), Int("b", 2), Int("c", 3))
		inner.Stop()
		Instant("tick")
		Counter("queue", Int("depth", 7))
	}()
	var buf bytes.Buffer
	if err := WriteTrace(&buf); err != nil {
		t.Fatal(err)
	}
	var got struct {
		TraceEvents []struct {
			Name string         `json:"name"`
			Ph   string         `json:"ph"`
			TS   float64        `json:"ts"`
			Dur  float64        `json:"dur"`
			Args map[string]any `json:"args"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, buf.Bytes())
	}
	if len(got.TraceEvents) != 4 {
		t.Fatalf("got %d events, want 4:\n%s", len(got.TraceEvents), buf.Bytes())
	}
	in, out := got.TraceEvents[0], got.TraceEvents[3]
	if in.Name != "inner" || len(in.Args) != 3 || out.Name != "outer" || out.Args["file"] != `a"b.json` {
		t.Fatalf("unexpected events:\n%s", buf.Bytes())
	}
	if in.TS < out.TS || in.TS+in.Dur > out.TS+out.Dur {
		t.Fatalf("inner span not inside outer:\n%s", buf.Bytes())
	}
	if got.TraceEvents[1].Ph != "i" || got.TraceEvents[2].Ph != "C" {
		t.Fatalf("unexpected phases:\n%s", buf.Bytes())
	}
}

func TestStopDoesNotAllocate(t *testing.T) {
	defer Reset()
	Reset()
	n := testing.AllocsPerRun(1000, func() {
		t := Start("x", String("k", "v"), Int("n", 1))
		t.Stop()
		if Len() > 500 {
			Reset()
		}
	})
	// The slice grows now and then, as the C++ vector does: well under one
	// allocation a span on average.
	if n >= 1 {
		t.Fatalf("%v allocs per span", n)
	}
}
