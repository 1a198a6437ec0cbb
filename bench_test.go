package tracer

import (
	"path/filepath"
	"testing"
	"time"

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
func BenchmarkEncode(b *testing.B) {
	const batch = 8192
	tr, err := New(filepath.Join(b.TempDir(), "encode.json"), WithBufferSize(4*batch), WithFlushInterval(10*time.Second))
	require.NoError(b, err)
	defer tr.Close()
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
func flowStartEnd()         { FlowStart("job", benchCat).End() }
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
		{"FlowStartEnd", flowStartEnd},
	} {
		b.Run(bc.name+"/on", func(b *testing.B) { benchOn(b, bc.op) })
		b.Run(bc.name+"/off", func(b *testing.B) { benchOff(b, bc.op) })
	}
	// A category switched off while tracing is on.
	b.Run("SpanDisabledCategory", func(b *testing.B) {
		benchOn(b, spanDisabledCategory, WithCategories("bench"))
	})
}
