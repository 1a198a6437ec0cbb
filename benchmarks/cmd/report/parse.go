package main

import (
	"bufio"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// A key names one sub-benchmark: BenchmarkSpan/peer=tracer/mode=on is
// {Span, tracer, on}.
type key struct {
	scenario, peer, mode string
}

// results holds every sample of every metric, by sub-benchmark and unit.
type results struct {
	samples map[key]map[string][]float64
	order   []key // first-seen order
}

var benchLine = regexp.MustCompile(`^Benchmark(\S+?)(?:-\d+)?\s+\d+\s+(.+)$`)

// parse reads `go test -bench` output.
func parse(r io.Reader) (*results, error) {
	res := &results{samples: map[key]map[string][]float64{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := benchLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		k := parseName(m[1])
		fields := strings.Fields(m[2])
		metrics := map[string]float64{}
		for i := 0; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				continue
			}
			metrics[fields[i+1]] = v
		}
		if len(metrics) == 0 {
			continue
		}
		if res.samples[k] == nil {
			res.samples[k] = map[string][]float64{}
			res.order = append(res.order, k)
		}
		for unit, v := range metrics {
			res.samples[k][unit] = append(res.samples[k][unit], v)
		}
	}
	return res, sc.Err()
}

func parseName(name string) key {
	parts := strings.Split(name, "/")
	k := key{scenario: parts[0]}
	for _, p := range parts[1:] {
		switch {
		case strings.HasPrefix(p, "peer="):
			k.peer = strings.TrimPrefix(p, "peer=")
		case strings.HasPrefix(p, "mode="):
			k.mode = strings.TrimPrefix(p, "mode=")
		}
	}
	return k
}

// median returns the median of unit's samples for k, and whether there
// were any.
func (r *results) median(k key, unit string) (float64, bool) {
	s := r.samples[k][unit]
	if len(s) == 0 {
		return 0, false
	}
	s = append([]float64(nil), s...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2], true
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2, true
}

// max returns the largest sample of unit for k.
func (r *results) max(k key, unit string) (float64, bool) {
	s := r.samples[k][unit]
	if len(s) == 0 {
		return 0, false
	}
	m := s[0]
	for _, v := range s[1:] {
		m = max(m, v)
	}
	return m, true
}

// count returns how many samples of ns/op k has.
func (r *results) count(k key) int { return len(r.samples[k]["ns/op"]) }

// scenarios returns the scenario names in first-seen order.
func (r *results) scenarios() []string {
	var out []string
	seen := map[string]bool{}
	for _, k := range r.order {
		if !seen[k.scenario] {
			seen[k.scenario] = true
			out = append(out, k.scenario)
		}
	}
	return out
}

// peers returns the peers with a result in mode, in first-seen order.
func (r *results) peers(mode string) []string {
	var out []string
	seen := map[string]bool{}
	for _, k := range r.order {
		if k.peer != "" && k.mode == mode && !seen[k.peer] {
			seen[k.peer] = true
			out = append(out, k.peer)
		}
	}
	return out
}
