package main

import (
	"strings"
	"testing"
)

const sample = `goos: linux
cpu: Some CPU
BenchmarkSpan/peer=tracer/mode=on-2         	 1000	        70.00 ns/op	         0 dropped/op	       0 B/op	       0 allocs/op
BenchmarkSpan/peer=tracer/mode=on-2         	 1000	        90.00 ns/op	         0 dropped/op	       0 B/op	       0 allocs/op
BenchmarkSpan/peer=tracer/mode=on-2         	 1000	        80.00 ns/op	         0 dropped/op	       0 B/op	       1 allocs/op
BenchmarkSpan/peer=mutex/mode=on-2          	 1000	       200.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkWorkload/mode=untraced-2           	 1000	      4000 ns/op	     877 B/op	      21 allocs/op
PASS
`

func TestParse(t *testing.T) {
	res, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	if got := len(res.order); got != 3 {
		t.Fatalf("%d benchmarks, want 3", got)
	}
	k := key{"Span", "tracer", "on"}
	if m, _ := res.median(k, "ns/op"); m != 80 {
		t.Errorf("median %v, want 80", m)
	}
	if m, _ := res.max(k, "allocs/op"); m != 1 {
		t.Errorf("max allocs %v, want 1", m)
	}
	if _, ok := res.median(key{"Workload", "", "untraced"}, "ns/op"); !ok {
		t.Error("workload row missing")
	}
	r, _, _, ok := ratio(res, "Span", "mutex")
	if !ok || r != 2.5 {
		t.Errorf("ratio %v %v, want 2.5", r, ok)
	}
	var allocTarget *target
	ts := targets(res)
	for i := range ts {
		if strings.HasPrefix(ts[i].what, "0 allocs/op") {
			allocTarget = &ts[i]
		}
	}
	if allocTarget == nil || allocTarget.met {
		t.Errorf("alloc target should be missed: %+v", allocTarget)
	}
}
