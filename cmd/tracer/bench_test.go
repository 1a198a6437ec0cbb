package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gotracer/tracer/internal/tracefile"
	"github.com/stretchr/testify/require"
)

// benchSize is the size of the file the benchmarks read: large enough
// that reading it dominates, small enough to generate in a second or two.
const benchSize = 64 << 20

// benchFile returns a plain trace of benchSize bytes written by the
// tracer package: requests of nested spans with args, from 4 goroutines,
// with instants, counters, async operations and flows.
// TRACER_BENCH_FILE names a file to read instead, to measure on real
// traces.
func benchFile(b *testing.B) string {
	path := os.Getenv("TRACER_BENCH_FILE")
	if path == "" {
		path = generate(b, filepath.Join(b.TempDir(), "bench.json"), benchSize)
	}
	b.SetBytes(fileSize(b, path))
	b.ResetTimer()
	return path
}

func fileSize(b *testing.B, path string) int64 {
	st, err := os.Stat(path)
	require.NoError(b, err)
	return st.Size()
}

// reportCPU reports MB of file per second of CPU time (all threads, the
// garbage collector's included) besides the MB/s of wall time, which on a
// machine shared with other work says more about the other work.
func reportCPU(b *testing.B, size int64, start time.Duration) {
	if cpu := cpuTime() - start; cpu > 0 {
		b.ReportMetric(float64(size)*float64(b.N)/1e6/cpu.Seconds(), "MB/cpu-s")
	}
}

// BenchmarkCheck measures tracer check on a plain file, in MB/s of file.
func BenchmarkCheck(b *testing.B) {
	generated := os.Getenv("TRACER_BENCH_FILE") == ""
	path := benchFile(b)
	defer reportCPU(b, fileSize(b, path), cpuTime())
	for b.Loop() {
		problems, _, err := checkFile(path, true, func(p tracefile.Problem) {
			if generated {
				b.Log(p)
			}
		})
		require.NoError(b, err)
		if generated {
			require.Empty(b, problems) // a real file may have problems: they are counted as well
		}
	}
}

// BenchmarkStats measures tracer stats on a plain file, in MB/s of file.
func BenchmarkStats(b *testing.B) {
	path := benchFile(b)
	defer reportCPU(b, fileSize(b, path), cpuTime())
	for b.Loop() {
		_, err := computeStats(path, true)
		require.NoError(b, err)
	}
}

// idsFile returns a plain trace of 2,000,000 top-level spans on 8
// threads, each named with its request id ("request 1234"): a name per
// span, as some producers write them (164 MB).
func idsFile(b *testing.B) string {
	path := filepath.Join(b.TempDir(), "ids.json")
	f, err := os.Create(path)
	require.NoError(b, err)
	w := bufio.NewWriterSize(f, 1<<20)
	w.WriteString("[\n" + `{"name":"process_name","ph":"M","pid":1,"tid":0,"args":{"name":"server"}},` + "\n")
	var ts [8]int64
	for i := range 2_000_000 {
		tid := i % 8
		dur := int64(1000 + i*7919%50000)
		fmt.Fprintf(w, `{"name":"request %d","ph":"X","ts":%s,"dur":%s,"pid":1,"tid":%d},`+"\n",
			i, tracefile.AppendMicros(nil, ts[tid]), tracefile.AppendMicros(nil, dur), tid+1)
		ts[tid] += dur + 500
	}
	w.WriteString(`{"name":"end","ph":"i","s":"t","ts":0,"pid":1,"tid":1}` + "\n]\n")
	require.NoError(b, w.Flush())
	require.NoError(b, f.Close())
	b.SetBytes(fileSize(b, path))
	b.ResetTimer()
	return path
}

// reportPeakRSS reports the peak resident memory of the process so far,
// where /proc tells it (Linux).
func reportPeakRSS(b *testing.B) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(status), "\n") {
		if kb, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(kb), " kB"), 64)
			if err == nil {
				b.ReportMetric(n/1024, "peak-RSS-MB")
			}
		}
	}
}

// BenchmarkCheckDistinctNames measures tracer check on idsFile.
func BenchmarkCheckDistinctNames(b *testing.B) {
	path := idsFile(b)
	defer reportPeakRSS(b)
	defer reportCPU(b, fileSize(b, path), cpuTime())
	for b.Loop() {
		var note string
		problems, _, err := checkFile(path, true, func(p tracefile.Problem) { b.Log(p) }, &note)
		require.NoError(b, err)
		require.Empty(b, problems)
		require.NotEmpty(b, note, "the user is told of the names")
	}
}

// BenchmarkStatsDistinctNames measures tracer stats on idsFile.
func BenchmarkStatsDistinctNames(b *testing.B) {
	path := idsFile(b)
	defer reportPeakRSS(b)
	defer reportCPU(b, fileSize(b, path), cpuTime())
	for b.Loop() {
		s, err := computeStats(path, true)
		require.NoError(b, err)
		require.Equal(b, "request <n>", s.Spans[0].Name, "one row for 2,000,000 names")
		require.NotEmpty(b, s.Note)
	}
}

// BenchmarkLongLine reads a trace whose one event holds a 64 MB string,
// plain and gzipped: gzip must cost about what plain does (it was
// quadratic in the line's length: 24 s against 0.2 s).
func BenchmarkLongLine(b *testing.B) {
	dir := b.TempDir()
	line := `{"name":"a","ph":"X","ts":1,"dur":1,"pid":1,"tid":1,"args":{"s":"` + strings.Repeat("x", 64<<20) + `"}}`
	plain := filepath.Join(dir, "long.json")
	require.NoError(b, os.WriteFile(plain, []byte("[\n"+line+"\n]\n"), 0o644))
	gz := filepath.Join(dir, "long.json.gz")
	code, _, stderr := runCmd("repair", "-q", "-o", gz, plain)
	require.Equal(b, 0, code, stderr)
	for _, path := range []string{plain, gz} {
		b.Run(filepath.Ext(path), func(b *testing.B) {
			b.SetBytes(64 << 20)
			for range b.N {
				code, _, stderr := runCmd("check", "-q", path)
				require.Equal(b, 0, code, stderr)
			}
		})
	}
}

// BenchmarkCheckDeep and BenchmarkStatsDeep measure check and stats on
// slices nested 200,000 levels deep in start order (X events, parents
// first; B events, then their E events), where the time must grow with
// the depth, not its square. Stats reads such a file twice: its track is
// nested past Perfetto's 512 levels, and replayed as Perfetto takes it.
func BenchmarkCheckDeep(b *testing.B) {
	for _, ph := range []string{"X", "BE"} {
		b.Run(ph, func(b *testing.B) {
			path := deepFile(b, ph)
			defer reportCPU(b, fileSize(b, path), cpuTime())
			for b.Loop() {
				_, _, err := checkFile(path, true, func(tracefile.Problem) {})
				require.NoError(b, err)
			}
		})
	}
}

func BenchmarkStatsDeep(b *testing.B) {
	for _, ph := range []string{"X", "BE"} {
		b.Run(ph, func(b *testing.B) {
			path := deepFile(b, ph)
			defer reportCPU(b, fileSize(b, path), cpuTime())
			for b.Loop() {
				_, err := computeStats(path, true)
				require.NoError(b, err)
			}
		})
	}
}

// deepFile writes a chain of 200,000 nested slices, parents first: X
// events, or (ph "BE") B events and then their E events, each with its
// name, pid and tid.
func deepFile(b *testing.B, ph string) string {
	const n = 200_000
	var sb strings.Builder
	sb.WriteString("[\n")
	for i := range n {
		if ph == "X" {
			fmt.Fprintf(&sb, `{"name":"r","ph":"X","ts":%d,"dur":%d,"pid":1,"tid":1},`+"\n", i, 2*(n-i))
		} else {
			fmt.Fprintf(&sb, `{"name":"r","ph":"B","ts":%d,"pid":1,"tid":1},`+"\n", i)
		}
	}
	if ph != "X" {
		for i := range n {
			fmt.Fprintf(&sb, `{"name":"r","ph":"E","ts":%d,"pid":1,"tid":1},`+"\n", n+i)
		}
	}
	sb.WriteString(`{"name":"end","ph":"i","ts":0,"s":"t","pid":1,"tid":1}` + "\n]\n")
	path := filepath.Join(b.TempDir(), "deep.json")
	require.NoError(b, os.WriteFile(path, []byte(sb.String()), 0o644))
	return path
}
