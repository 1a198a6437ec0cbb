package tracer

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// heapInUse returns the heap in use after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// openFDs counts this process's open file descriptors.
func openFDs(t testing.TB) int {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(entries)
}

// settledGoroutines waits up to a minute for the number of goroutines
// to come down to want, and returns it. (require.Eventually would count
// its own goroutine.)
func settledGoroutines(want int) int {
	deadline := time.Now().Add(time.Minute)
	for {
		n := runtime.NumGoroutine()
		if n <= want || time.Now().After(deadline) {
			return n
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// memoryCeiling is the most heap a tracer may hold, whatever the load:
// its buffers at their limit, two chunks more than there are chains, each
// chain's first block of span tokens and their end functions (with 16 bytes of closure each), the
// writer's queue of batches, the open-span table at its bound (1 KiB a
// span with room to spare; 600 bytes measured) and 4 MiB for the rest.
func memoryCeiling(procs, bufferLimit int) uint64 {
	token := unsafe.Sizeof(spanToken{}) + unsafe.Sizeof(func() {}) + 16
	chains := uint64(procs) * (chunkBytes + tokenBlockSize*uint64(token))
	return uint64(bufferLimit) + 2*chunkBytes + chains + queueBatches*(2*batchBytes) + maxOpenSpans<<10 + 4<<20
}

// TestMillionGoroutines starts a million goroutines (a hundred thousand
// under the race detector or -short), at most a thousand at a time, each
// recording one span; half of them yield inside it, so starts and ends
// interleave across goroutines and the rings overflow, dropping ends as
// well as starts. The heap the tracer holds must stay under
// memoryCeiling throughout, nothing may be written twice, and after Close
// the goroutines and the memory must be gone.
func TestMillionGoroutines(t *testing.T) {
	heavy(t)
	n := 1_000_000
	if raceEnabled || testing.Short() {
		n = 100_000
	}
	path := filepath.Join(t.TempDir(), "million.json")
	goroutines := runtime.NumGoroutine()
	before := heapInUse()
	tr, err := New(path)
	require.NoError(t, err)
	ceiling := memoryCeiling(runtime.GOMAXPROCS(0), DefaultBufferLimit)

	start := time.Now()
	var peak uint64
	sem := make(chan struct{}, 1000)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			end := tr.Span("g", Int("i", i))
			if i%2 == 0 {
				runtime.Gosched()
			}
			end()
		}()
		if i%(n/10) == n/10-1 {
			peak = max(peak, heapInUse()-min(before, heapInUse()))
		}
	}
	wg.Wait()
	took := time.Since(start)
	require.NoError(t, tr.Close())
	st := tr.Stats()
	t.Logf("%d goroutines in %v: heap growth peak %.1f MiB, ceiling %.1f MiB; %d events written, %d records dropped",
		n, took.Round(time.Millisecond), float64(peak)/(1<<20), float64(ceiling)/(1<<20), st.Events, st.Dropped)
	assert.Less(t, peak, ceiling, "the tracer's memory must stay bounded")

	// Every span written once at most, as X, or as B (with an E, unless
	// its end was lost) if it was open at a flush.
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	seen := make([]bool, n)
	lines := bufio.NewScanner(f)
	lines.Buffer(make([]byte, 64<<10), 64<<10)
	spans, ends, names := 0, 0, 0
	for lines.Scan() {
		line := lines.Bytes()
		if bytes.HasPrefix(line, []byte(`{"name":"thread_name","ph":"M"`)) {
			names++
			continue
		}
		if !bytes.HasPrefix(line, []byte(`{"name":"g","ph":"`)) {
			continue
		}
		if bytes.HasPrefix(line, []byte(`{"name":"g","ph":"E"`)) {
			ends++
			continue
		}
		j := bytes.Index(line, []byte(`"args":{"i":`))
		require.Positive(t, j, "%s", line)
		i, err := strconv.Atoi(string(line[j+len(`"args":{"i":`) : len(line)-len("}},")]))
		require.NoError(t, err, "%s", line)
		require.False(t, seen[i], "span %d written twice", i)
		seen[i] = true
		spans++
	}
	require.NoError(t, lines.Err())
	assert.Positive(t, spans)
	assert.EqualValues(t, st.Events, spans+ends+names, "every event written is a span of this test, or its goroutine's name")

	tr = nil
	assert.LessOrEqual(t, settledGoroutines(goroutines), goroutines, "goroutines left after Close")
	after := heapInUse()
	assert.Less(t, after, before+4<<20, "memory left after Close: %d bytes, before: %d", after, before)
}

// TestGOMAXPROCSChurn changes GOMAXPROCS up and down while goroutines
// record numbered events: Ps come and go, rings are added for new P ids,
// goroutines migrate between Ps in the middle of their spans. Every event
// must be in the file exactly once, and the tracks must nest.
func TestGOMAXPROCSChurn(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	clk := newTestClock()
	// Lossless: on a loaded machine the disk can stall a write for half
	// a second, which would drop events (default mode) and fail "every
	// event once" for a reason that is not this test's.
	tr, path := newTestTracer(t, withClock(clk), WithLossless())
	defer clk.passing()() // passes while Ps come and go
	const workers, perWorker = 8, 3000
	var done atomic.Bool
	churned := make(chan int)
	go func() {
		changes := 0
		for i := 0; !done.Load(); i++ {
			runtime.GOMAXPROCS([]int{1, 4, 2, 8, 3, 1, 6, 2}[i%8])
			changes++
			time.Sleep(200 * time.Microsecond)
		}
		churned <- changes
	}()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := range perWorker {
				id := Int("id", w*perWorker+seq)
				outer := tr.Span("outer", id)
				tr.Instant("mark", id)
				if seq%3 == 0 {
					runtime.Gosched()
				}
				tr.LongSpan("inner", id)()
				outer()
			}
		}()
	}
	wg.Wait()
	done.Store(true)
	changes := <-churned
	require.NoError(t, tr.Close())

	evs := readClosed(t, path)
	checkTracks(t, evs)
	st := tr.Stats()
	require.Zero(t, st.Dropped, "lossless")
	for _, name := range []string{"outer", "mark", "inner"} {
		ids := map[int]int{}
		for _, e := range evs {
			if e.Name == name && e.Ph != "E" {
				ids[int(e.Args["id"].(float64))]++
			}
		}
		require.Equal(t, workers*perWorker, len(ids), "%s: every event once", name)
		for id, n := range ids {
			require.Equal(t, 1, n, "%s %d written %d times", name, id, n)
		}
	}
	assert.Zero(t, st.Unmatched+st.Late+st.Lost)
	t.Logf("%d GOMAXPROCS changes, %d rings", changes, len(*tr.chains.Load()))
	assert.GreaterOrEqual(t, len(*tr.chains.Load()), 2)
}

// TestStartStopCycles starts and stops the default tracer, and makes and
// closes explicit ones, a thousand times each in a heavy run (250 in the
// quick one, which a leak of one a cycle fails as surely): no goroutine or
// file descriptor may be left behind.
func TestStartStopCycles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cycle.json")
	// One cycle first, so that whatever the runtime sets up once is there.
	require.NoError(t, Start(path))
	require.NoError(t, Stop())
	goroutines, fds := runtime.NumGoroutine(), openFDs(t)
	cycles := 250
	if heavyRun() {
		cycles = 1000
	}
	for i := range cycles {
		require.NoError(t, Start(path, WithFlushInterval(time.Millisecond)))
		Span("cycle", Int("i", i))()
		if i%2 == 0 {
			require.NoError(t, Flush())
		}
		require.NoError(t, Stop())

		tr, err := New(filepath.Join(dir, "explicit.json"))
		require.NoError(t, err)
		tr.Instant("cycle", Int("i", i))
		require.NoError(t, tr.Close())
	}
	assert.LessOrEqual(t, settledGoroutines(goroutines), goroutines, "goroutines left behind")
	assert.LessOrEqual(t, openFDs(t), fds, "file descriptors left open (an earlier test may close one meanwhile)")
	evs := readClosed(t, path)
	assert.Equal(t, float64(cycles-1), find(t, evs, "X", "cycle").Args["i"])
}

// TestOpenSpansTrim checks the bound on the open-span table directly: past
// it, the goroutines whose newest open span is oldest are forgotten until
// a quarter of the table is free, and the count stays right.
func TestOpenSpansTrim(t *testing.T) {
	var o openSpans
	const max = 100
	for gid := uint64(1); gid <= 150; gid++ {
		s := o.stack(gid, true)
		depth := 1 + int(gid%2)
		for d := range depth {
			*s = append(*s, openSpan{start: slot{num: (gid*10 + uint64(d)) | rawDone, meta: headMeta(kindSpan, 0, 1, false, gid)}})
			o.count++
		}
	}
	require.Equal(t, 225, o.count)
	forgotten := o.trim(&recorder{}, max)
	total := 0
	for gid, s := range o.stacks {
		total += len(*s)
		assert.Greater(t, gid, uint64(150-max), "the oldest goroutines go first")
	}
	assert.Equal(t, total, o.count)
	assert.Equal(t, 225-total, forgotten, "every forgotten span is counted")
	assert.LessOrEqual(t, o.count, max-max/4)
	assert.Greater(t, o.count, max/2)
	assert.Zero(t, o.trim(&recorder{}, max))
	assert.Equal(t, total, o.count, "under the bound, trim does nothing")
}
