package tracer

import (
	"bytes"
	stdflate "compress/flate"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/flate"
	"github.com/stretchr/testify/require"
)

// benchOn runs op b.N times with the default tracer writing to a file.
//
// A loop of nothing but spans records ten million events a second, more than
// any flusher encodes, so the rings would fill and the loop would time the
// cheaper drop path. benchOn therefore flushes with the timer stopped every
// flushEvery ops, keeping the ring from filling: it times what the
// recording goroutine pays. The flusher's own cost is BenchmarkEncode's.
// dropped/op is reported so a run that dropped anyway is visible.
func benchOn(b *testing.B, op func(), opts ...Option) {
	const flushEvery = 512
	require.NoError(b, Start(filepath.Join(b.TempDir(), "bench.json"), opts...))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		op()
		if i%flushEvery == flushEvery-1 {
			b.StopTimer()
			require.NoError(b, Flush())
			b.StartTimer()
		}
	}
	b.StopTimer()
	st := Default().Stats()
	require.NoError(b, Stop())
	b.ReportMetric(float64(st.Dropped)/float64(b.N), "dropped/op")
}

// benchOff runs op b.N times with tracing off.
func benchOff(b *testing.B, op func()) {
	b.ReportAllocs()
	for b.Loop() {
		op()
	}
}

var sinkDur time.Duration

// BenchmarkFloor is what any span costs at least: two monotonic clock
// reads, one at each end. Span's cost is quoted as a ratio to it.
func BenchmarkFloor(b *testing.B) {
	b.ReportAllocs()
	t0 := time.Now()
	for b.Loop() {
		sinkDur += time.Since(t0)
		sinkDur += time.Since(t0)
	}
}

func spanBare()    { defer Span("x")() }
func spanTwoArgs() { defer Span("x", String("k", "v"), Int("n", 7))() }

func BenchmarkSpan(b *testing.B) {
	b.Run("on", func(b *testing.B) { benchOn(b, spanBare) })
	b.Run("off", func(b *testing.B) { benchOff(b, spanBare) })
}

func BenchmarkSpanTwoArgs(b *testing.B) {
	b.Run("on", func(b *testing.B) { benchOn(b, spanTwoArgs) })
	b.Run("off", func(b *testing.B) { benchOff(b, spanTwoArgs) })
}

// BenchmarkEncode times the flusher alone: spans recorded with the timer
// stopped are paired, encoded and written to a file with the timer
// running. It reports X events per second of one core.
func BenchmarkEncode(b *testing.B) { benchEncode(b, false) }

// BenchmarkEncodeTee is BenchmarkEncode with a tee attached (see
// Tracer.Tee), writing to io.Discard: what a capture costs the flusher
// and the writer while it runs.
func BenchmarkEncodeTee(b *testing.B) { benchEncode(b, true) }

func benchEncode(b *testing.B, tee bool) {
	const batch = 8192
	tr, err := New(filepath.Join(b.TempDir(), "encode.json"), WithFlushInterval(10*time.Second))
	require.NoError(b, err)
	defer tr.Close()
	if tee {
		te, err := tr.Tee(io.Discard)
		require.NoError(b, err)
		defer func() { require.NoError(b, te.Stop()) }()
	}
	b.ReportAllocs()
	b.ResetTimer()
	var elapsed time.Duration
	for done := 0; done < b.N; done += batch {
		b.StopTimer()
		for i := 0; i < batch; i++ {
			tr.Span("decode", Int("n", i))()
		}
		b.StartTimer()
		start := time.Now()
		require.NoError(b, tr.Flush())
		elapsed += time.Since(start)
	}
	b.StopTimer()
	st := tr.Stats()
	require.Zero(b, st.Dropped)
	b.ReportMetric(float64(st.Events)/elapsed.Seconds()/1e6, "Mevents/s")
	b.ReportMetric(float64(st.Bytes)/float64(st.Events), "bytes/event")
}

// BenchmarkPass times the flusher's pass alone, as a tight loop leaves
// it work: bare spans of one goroutine recorded with the timer stopped,
// then merged, paired and encoded into batches for a writer that
// discards them. Its ns/op is the whole pass for a span; BenchmarkEncoder
// is the encoding part of it.
func BenchmarkPass(b *testing.B) {
	const spans = 1000 // fits a chunk: the flusher goroutine is not woken
	tr, err := NewWithWriter(io.Discard, WithFlushInterval(10*time.Second))
	require.NoError(b, err)
	defer tr.Close()
	f := &tr.flusher
	b.ReportAllocs()
	b.StopTimer()
	for done := 0; done < b.N; done += spans {
		for range min(spans, b.N-done) {
			tr.Span("decode")()
		}
		f.mu.Lock()
		b.StartTimer()
		f.pass(true)
		b.StopTimer()
		f.mu.Unlock()
	}
	require.Zero(b, tr.Stats().Dropped)
}

var (
	benchCat      = Category("bench")
	benchDisabled = Category("bench-disabled")
)

func spanCategory4Args() {
	defer Span("x", benchCat, String("k", "v"), Int("n", 7), Bool("b", true), Float64("f", 1.5))()
}
func spanDisabledCategory() { defer Span("x", benchDisabled, Int("n", 7))() }
func counterTwoSeries()     { Counter("queue", Int("depth", 3), Float64("load", 0.5)) }
func instant()              { Instant("tick") }
func asyncBeginEnd()        { AsyncBegin("job", benchCat).End() }
func flowBeginEnd()         { FlowBegin("job", benchCat).End() }
func nestedThree() {
	defer Span("a")()
	defer Span("b")()
	defer Span("c")()
}

// BenchmarkEventKinds covers every kind of recording call, on and off.
func BenchmarkEventKinds(b *testing.B) {
	for _, bc := range []struct {
		name string
		op   func()
	}{
		{"SpanCategory4Args", spanCategory4Args},
		{"SpanNested3", nestedThree},
		{"Counter2Series", counterTwoSeries},
		{"Instant", instant},
		{"AsyncBeginEnd", asyncBeginEnd},
		{"FlowBeginEnd", flowBeginEnd},
	} {
		b.Run(bc.name+"/on", func(b *testing.B) { benchOn(b, bc.op) })
		b.Run(bc.name+"/off", func(b *testing.B) { benchOff(b, bc.op) })
	}
	// A category switched off while tracing is on.
	b.Run("SpanDisabledCategory", func(b *testing.B) {
		benchOn(b, spanDisabledCategory, WithCategories("bench"))
	})
}

// BenchmarkSink times the whole pipeline, recording, encoding, compressing
// and writing, for a typical span with one arg, and reports the bytes each
// span takes on disk.
func BenchmarkSink(b *testing.B) {
	for _, bc := range []struct {
		name string
		file string
		opts []Option
	}{
		{"file", "trace.json", nil},
		{"gzip", "trace.json.gz", nil},
		{"gzip-level6", "trace.json.gz", []Option{WithGzip(6)}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			const batch = 8192
			path := filepath.Join(b.TempDir(), bc.file)
			tr, err := New(path, append(bc.opts, WithFlushInterval(10*time.Second))...)
			require.NoError(b, err)
			b.ReportAllocs()
			b.ResetTimer()
			for done := 0; done < b.N; done += batch {
				for i := 0; i < min(batch, b.N-done); i++ {
					tr.Span("decode", Int("bytes", 512+i%1024))()
				}
				require.NoError(b, tr.Flush())
			}
			b.StopTimer()
			require.NoError(b, tr.Close())
			st := tr.Stats()
			require.Zero(b, st.Dropped)
			fi, err := os.Stat(path)
			require.NoError(b, err)
			b.ReportMetric(float64(st.Events)/b.Elapsed().Seconds()/1e6, "Mevents/s")
			b.ReportMetric(float64(fi.Size())/float64(st.Events), "disk-bytes/event")
		})
	}
}

// BenchmarkGzipCompressors compares compress/flate with
// github.com/klauspost/compress/flate, the one the gzip sink uses, on a
// trace of a small worker pool, compressed in members of 256 KiB (the
// flusher's batch) and 16 KiB (a quiet flush), as the gzip sink does.
// ratio is uncompressed over compressed size.
func BenchmarkGzipCompressors(b *testing.B) {
	data := workloadTrace(b)
	for _, size := range []int{256 << 10, 16 << 10} {
		var members [][]byte
		for rest := data; len(rest) > 0; {
			n := min(size, len(rest))
			n += bytes.IndexByte(rest[n-1:], '\n')
			members, rest = append(members, rest[:n]), rest[n:]
		}
		for _, level := range []int{1, 6, 9} {
			for _, c := range []struct {
				name string
				new  func(io.Writer, int) (flusherWriter, error)
			}{
				{"compress", func(w io.Writer, l int) (flusherWriter, error) { return stdflate.NewWriter(w, l) }},
				{"klauspost", func(w io.Writer, l int) (flusherWriter, error) { return flate.NewWriter(w, l) }},
			} {
				b.Run(fmt.Sprintf("%s/level=%d/member=%dK", c.name, level, size>>10), func(b *testing.B) {
					var out bytes.Buffer
					zw, err := c.new(&out, level)
					require.NoError(b, err)
					b.SetBytes(int64(len(data)))
					for b.Loop() {
						out.Reset()
						for _, m := range members {
							zw.Reset(&out)
							zw.Write(m)
							zw.Flush()
						}
					}
					b.ReportMetric(float64(len(data))/float64(out.Len()), "ratio")
				})
			}
		}
	}
}

// flusherWriter is what compress/flate and klauspost/compress/flate have
// in common.
type flusherWriter interface {
	io.Writer
	Flush() error
	Reset(io.Writer)
}

// workloadTrace returns the trace of four workers handling items with
// nested spans, args and instants: about 10 MB of JSON.
func workloadTrace(b *testing.B) []byte {
	var buf bytes.Buffer
	tr, err := NewWithWriter(&buf)
	require.NoError(b, err)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tr.SetGoroutineName(fmt.Sprintf("worker %d", w))
			kinds := []string{"get", "put", "list"}
			for i := 0; i < 10000; i++ {
				end := tr.Span("handle", Int("item", i), String("kind", kinds[i%3]))
				tr.Span("fetch", Int("bytes", 512+i%1000))()
				decode := tr.Span("decode")
				for j := 0; j < 50*(i%4); j++ {
					sinkDur += time.Duration(j)
				}
				decode()
				if i%10 == 0 {
					tr.Instant("cache miss")
				}
				tr.Span("store")()
				end()
				if i%10 == 0 {
					time.Sleep(20 * time.Microsecond) // let the flusher keep up
				}
			}
		}()
	}
	wg.Wait()
	require.NoError(b, tr.Close())
	if st := tr.Stats(); st.Dropped > st.Events/100 {
		b.Fatalf("the workload dropped %d of %d events", st.Dropped, st.Events)
	}
	return buf.Bytes()
}

// BenchmarkOpenSpanMemory reports the heap a tracer holds for each span
// left open (B/open-span): its start in the flusher's table and its
// token, as for a server's requests in flight.
func BenchmarkOpenSpanMemory(b *testing.B) {
	n := max(b.N, 100_000)
	b.ReportAllocs()
	b.ReportMetric(openSpanMemory(b, n, false).perSpan, "B/open-span")
}
