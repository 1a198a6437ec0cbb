package tracer

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gotracer/tracer/internal/childtest"
	"github.com/gotracer/tracer/internal/tracecheck"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gunzipMembers decodes a gzip file member by member, as Perfetto does,
// and returns the members' contents. Every member must be whole.
func gunzipMembers(t testing.TB, data []byte) [][]byte {
	t.Helper()
	br := bufio.NewReader(bytes.NewReader(data))
	zr, err := gzip.NewReader(br)
	require.NoError(t, err, "the file must start with a gzip member")
	var members [][]byte
	for {
		zr.Multistream(false)
		m, err := io.ReadAll(zr)
		require.NoError(t, err, "gzip member %d must decode whole", len(members))
		members = append(members, m)
		if err := zr.Reset(br); err == io.EOF {
			return members
		} else {
			require.NoError(t, err, "after member %d", len(members))
		}
	}
}

// readClosedGzip checks that a closed gzip trace is one member, the form
// chrome://tracing reads, and parses it as strict JSON.
func readClosedGzip(t testing.TB, path string) []event {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	members := gunzipMembers(t, data)
	require.Len(t, members, 1, "a closed gzip file must be one member")
	plain := filepath.Join(t.TempDir(), "plain.json")
	require.NoError(t, os.WriteFile(plain, members[0], 0o644))
	return readClosed(t, plain)
}

func TestGzipFile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		file  string
		opts  []Option
		level int
	}{
		{"by extension", "trace.json.gz", nil, DefaultGzipLevel},
		{"option on a plain name", "trace.json", []Option{WithGzip(6)}, 6},
		{"best compression", "trace.json.gz", []Option{WithGzip(9)}, 9},
		{"default compression", "trace.json.gz", []Option{WithGzip(-1)}, DefaultGzipLevel},
		{"no compression", "trace.json.gz", []Option{WithGzip(0)}, 0},
		{"huffman only", "trace.json.gz", []Option{WithGzip(-2)}, -2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tt.file)
			tr, err := New(path, append(tt.opts, withClock(newTestClock()))...)
			require.NoError(t, err)
			defer tr.Close()
			assert.Equal(t, tt.level, tr.opts.sink.level)
			tr.SetGoroutineName("main")
			const flushes, spans = 5, 300
			for f := 0; f < flushes; f++ {
				for i := 0; i < spans; i++ {
					tr.Span("work", Int("f", f), Int("i", i))()
				}
				require.NoError(t, tr.Flush())
			}
			end := tr.LongSpan("open at the last flush")
			require.NoError(t, tr.Flush())

			// Before Close the file is a run of members, each one whole,
			// and reads as a crashed trace.
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			members := gunzipMembers(t, data)
			var whole int
			for _, m := range members {
				if len(m) > 0 { // empty members are fillers that keep members off page boundaries
					whole++
				}
			}
			assert.GreaterOrEqual(t, whole, 1+flushes+1, "the head, then members of at most a page for each flush")
			evs := readCrashed(t, bytes.Join(members, nil))
			assert.Len(t, byPhase(evs, "X"), flushes*spans)
			find(t, evs, "B", "open at the last flush")

			end()
			require.NoError(t, tr.Close())
			evs = readClosedGzip(t, path)
			assert.Len(t, byPhase(evs, "X"), flushes*spans)
			assert.Equal(t, "main", find(t, evs, "M", "thread_name").Args["name"])
			find(t, evs, "E", "open at the last flush")
			checkTracks(t, evs)
			assert.EqualValues(t, len(evs), int(tr.Stats().Events)+len(byName(evs, "process_name")), "all but the process metadata are counted")
		})
	}
}

func TestGzipLevelOutOfRange(t *testing.T) {
	for _, level := range []int{-3, 10} {
		_, err := New(filepath.Join(t.TempDir(), "t.json.gz"), WithGzip(level))
		assert.ErrorContains(t, err, "gzip level")
	}
}

// TestJoinRefusesForeignFiles checks that joining leaves alone a file it
// did not write, and a file whose last member is cut.
func TestJoinRefusesForeignFiles(t *testing.T) {
	var foreign bytes.Buffer
	zw := gzip.NewWriter(&foreign)
	zw.Write([]byte("[\n{\"name\":\"x\"}\n]\n"))
	zw.Close()

	var ours bytes.Buffer
	g := newGzipSink(newWriterSink(&ours, nil), DefaultGzipLevel)
	g.Write([]byte("[\n{\"name\":\"x\"},\n"))
	g.Write([]byte("{\"name\":\"y\"}\n]\n"))

	tests := []struct {
		name string
		data []byte
		err  string
	}{
		{"another writer's member", foreign.Bytes(), "does not end with a sync flush"},
		{"another writer's header", append([]byte{0x1f, 0x8b, 8, 0x10}, ours.Bytes()[4:]...), "not written by tracer"}, // FCOMMENT
		{"cut last member", ours.Bytes()[:ours.Len()-3], "member 1"},
		{"empty", []byte{}, "member 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "t.json.gz")
			require.NoError(t, os.WriteFile(path, tt.data, 0o644))
			assert.ErrorContains(t, joinGzipMembers(path), tt.err)
			after, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, tt.data, after, "the file must be left as it was")
			_, err = os.Stat(path + ".join")
			assert.ErrorIs(t, err, os.ErrNotExist, "no temporary file left behind")
		})
	}

	path := filepath.Join(t.TempDir(), "t.json.gz")
	require.NoError(t, os.WriteFile(path, ours.Bytes(), 0o644))
	require.NoError(t, joinGzipMembers(path))
	joined, err := os.ReadFile(path)
	require.NoError(t, err)
	members := gunzipMembers(t, joined)
	require.Len(t, members, 1)
	assert.Equal(t, objectHead+"[\n{\"name\":\"x\"},\n{\"name\":\"y\"}\n]\n}\n", string(members[0]),
		"one member, the object form a closed plain file has")

	// An array left open (its last writes failed) stays an array, behind
	// the object head's room as spaces.
	var open bytes.Buffer
	g = newGzipSink(newWriterSink(&open, nil), DefaultGzipLevel)
	g.Write([]byte("[\n{\"name\":\"x\"},\n"))
	require.NoError(t, os.WriteFile(path, open.Bytes(), 0o644))
	require.NoError(t, joinGzipMembers(path))
	joined, err = os.ReadFile(path)
	require.NoError(t, err)
	members = gunzipMembers(t, joined)
	require.Len(t, members, 1)
	assert.Equal(t, strings.Repeat(" ", len(objectHead))+"[\n{\"name\":\"x\"},\n", string(members[0]))
}

const gzipCrashChildEnv = "TRACER_GZIP_CRASH_CHILD"

// TestGzipCrashChild is the process TestGzipCrashSIGKILL kills. Like
// TestCrashChild, it prints after each flush how far each worker had got
// before the flush began.
func TestGzipCrashChild(t *testing.T) {
	path := os.Getenv(gzipCrashChildEnv)
	if path == "" {
		t.Skip("helper process for TestGzipCrashSIGKILL")
	}
	tr, err := New(path, WithFlushInterval(20*time.Millisecond))
	require.NoError(t, err)
	const workers = 4
	var ended [workers]atomic.Int64
	for w := range workers {
		ended[w].Store(-1)
		go func() {
			tr.SetGoroutineName(fmt.Sprintf("worker %d", w))
			defer tr.Span("worker lifetime")() // never ends: must show as B
			for seq := 0; ; seq++ {
				end := tr.Span("job", Int("w", w), Int("seq", seq))
				tr.Span("step")()
				end()
				ended[w].Store(int64(seq))
				if seq%20 == 0 {
					time.Sleep(time.Millisecond)
				}
			}
		}()
	}
	for {
		var snap []string
		for w := range workers {
			snap = append(snap, strconv.FormatInt(ended[w].Load(), 10))
		}
		require.NoError(t, tr.Flush())
		fmt.Printf("FLUSHED %d %s\n", tr.Stats().Dropped, strings.Join(snap, " "))
		time.Sleep(3 * time.Millisecond)
	}
}

// TestGzipCrashSIGKILL kills a child writing a gzip trace at random
// moments: every member in the file must be whole, and together they must
// hold every span that ended before the child's last completed flush.
func TestGzipCrashSIGKILL(t *testing.T) {
	t.Parallel() // its own tracers, child processes or importers: it mostly waits
	for run := 0; run < 3; run++ {
		path := filepath.Join(t.TempDir(), "crash.json.gz")
		cmd := childtest.Command("TestGzipCrashChild", gzipCrashChildEnv+"="+path)
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())

		var last []int64
		var dropped uint64
		lines := bufio.NewScanner(out)
		// Count the flushes from the moment every worker has ended a job,
		// and give the worker lifetimes the time to pass the flush
		// interval, after which they are written as B events.
		var began time.Time
		for flushes := 0; (flushes < 5+run*5 || time.Since(began) < 60*time.Millisecond) && lines.Scan(); {
			f := strings.Fields(lines.Text())
			if len(f) < 2 || f[0] != "FLUSHED" {
				continue
			}
			dropped, _ = strconv.ParseUint(f[1], 10, 64)
			last = last[:0]
			started := true
			for _, s := range f[2:] {
				n, _ := strconv.ParseInt(s, 10, 64)
				last = append(last, n)
				started = started && n >= 0
			}
			if started && flushes == 0 {
				began = time.Now()
			}
			if started {
				flushes++
			}
		}
		require.NotEmpty(t, last, "child never flushed")
		time.Sleep(time.Duration(run) * 7 * time.Millisecond)
		require.NoError(t, cmd.Process.Kill()) // SIGKILL
		_ = cmd.Wait()

		data, err := os.ReadFile(path)
		require.NoError(t, err)
		members := gunzipMembers(t, data)
		require.Greater(t, len(members), 2, "the head and a member per flush with events")
		evs := readCrashed(t, bytes.Join(members, nil))
		checkTracks(t, evs)
		if dropped > 0 {
			t.Logf("run %d: the child dropped %d events; not checking for every job", run, dropped)
			continue
		}
		seen := map[[2]int64]int{}
		for _, e := range evs {
			if e.Name == "job" && (e.Ph == "X" || e.Ph == "B") {
				seen[[2]int64{int64(e.Args["w"].(float64)), int64(e.Args["seq"].(float64))}]++
			}
		}
		for w, upTo := range last {
			for seq := int64(0); seq <= upTo; seq++ {
				require.Equal(t, 1, seen[[2]int64{int64(w), seq}], "worker %d job %d (last flushed %d)", w, seq, upTo)
			}
		}
		// Each worker's lifetime is a B; a job the flusher found open
		// for longer than an interval (its worker descheduled, on a loaded
		// machine) may be one too.
		lifetimes := 0
		for _, e := range byPhase(evs, "B") {
			if e.Name == "worker lifetime" {
				lifetimes++
			}
		}
		assert.Equal(t, len(last), lifetimes, "the worker lifetimes")
	}
}

// TestGzipStream writes a gzip stream to an io.Writer: members follow each
// other and nothing joins them.
func TestGzipStream(t *testing.T) {
	var buf bytes.Buffer
	tr, err := NewWithWriter(&buf, WithGzip(1), withClock(newTestClock()))
	require.NoError(t, err)
	tr.Span("a")()
	require.NoError(t, tr.Flush())
	tr.Span("b")()
	require.NoError(t, tr.Close())
	members := gunzipMembers(t, buf.Bytes())
	assert.Len(t, members, 4, "head, a flush, the last flush and the end")
	var evs []event
	require.NoError(t, json.Unmarshal(bytes.Join(members, nil), &evs))
	assert.Len(t, byPhase(evs, "X"), 2)
}

// TestGzipFiller checks that a filler is a valid, empty gzip member of
// exactly the size asked for.
func TestGzipFiller(t *testing.T) {
	for _, n := range []int{minFiller, minFiller + 1, 100, pageSize - 1, pageSize} {
		b := appendFiller(nil, n)
		require.Len(t, b, n, "filler for %d bytes", n)
		zr, err := gzip.NewReader(bytes.NewReader(b))
		require.NoError(t, err)
		got, err := io.ReadAll(zr)
		require.NoError(t, err)
		assert.Empty(t, got)
		require.NoError(t, skipFiller(bytes.NewReader(b[len(fillerHeader):])))
	}
}

// pageSink is a sink that a kill cuts at page boundaries, as a file, and
// keeps what is written in memory.
type pageSink struct{ bytes.Buffer }

func (s *pageSink) traits() sinkTraits { return sinkTraits{pageCuts: true} }
func (s *pageSink) Close() error       { return nil }

// TestGzipMembersKeepOffPageBoundaries writes batches of many sizes, so
// that members end at every distance from a page boundary, and checks
// that the file cut at any page boundary is whole members (what Perfetto
// needs to load a file a kill cut), that all of it holds every line once,
// and that joinGzipMembers makes one member of it. Before members were
// padded, a member that ended less than a filler short of a boundary was
// followed by a filler across it (seen in TestCrashMatrix: "after member
// 26: unexpected EOF").
func TestGzipMembersKeepOffPageBoundaries(t *testing.T) {
	t.Parallel()
	out := &pageSink{}
	g := newGzipSink(out, 1)
	rng := rand.New(rand.NewPCG(1, 2))
	var want bytes.Buffer
	for i := 0; i < 1000; i++ {
		var p []byte
		if i == 0 {
			p = []byte("[\n")
		}
		for range 1 + rng.IntN(40) {
			line := fmt.Sprintf(`{"name":"e%d","ph":"i","s":"t","ts":%d,"pid":1,"tid":1,"args":{"r":"%x"}},`+"\n",
				i, rng.Int64N(1e12), rng.Uint64()>>rng.IntN(64))
			p = append(p, line...)
		}
		want.Write(p)
		n, err := g.Write(p)
		require.NoError(t, err)
		require.Equal(t, len(p), n)
	}
	data := out.Bytes()
	padded := bytes.Count(data, paddedHeader[:])
	t.Logf("%d bytes, %d pages, %d members padded", len(data), len(data)/pageSize, padded)
	require.Positive(t, padded, "no member ended close enough to a boundary to need padding: the test tests nothing")
	for cut := pageSize; cut < len(data); cut += pageSize {
		var got []byte
		for _, m := range gunzipMembers(t, data[:cut]) {
			got = append(got, m...)
		}
		require.True(t, bytes.HasPrefix(want.Bytes(), got), "cut at %d", cut)
	}
	var all []byte
	for _, m := range gunzipMembers(t, data) {
		all = append(all, m...)
	}
	require.Equal(t, want.String(), string(all))

	// The file a kill leaves just after a padded member loads in
	// Perfetto (chrome://tracing reads a gzip file's first member only:
	// see gzipSink).
	cut := bytes.Index(data, paddedHeader[:])/pageSize*pageSize + pageSize
	crashed := filepath.Join(t.TempDir(), "crashed.json.gz")
	require.NoError(t, os.WriteFile(crashed, data[:cut], 0o644))
	perfetto := tracecheck.LoadPerfetto(t, crashed)
	require.Equal(t, true, perfetto[0]["ok"], "%v", perfetto[0]["error"])
	var events int
	for _, m := range gunzipMembers(t, data[:cut]) {
		events += bytes.Count(m, []byte("\n"))
	}
	assert.EqualValues(t, events-1, perfetto[0].Totals()["slices"], "every instant before the cut, past the padded member")

	path := filepath.Join(t.TempDir(), "joined.json.gz")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	require.NoError(t, joinGzipMembers(path))
	joined, err := os.ReadFile(path)
	require.NoError(t, err)
	members := gunzipMembers(t, joined)
	require.Len(t, members, 1)
	// An array left open: the object head's room as spaces.
	require.True(t, string(members[0]) == strings.Repeat(" ", len(objectHead))+want.String(), "the joined member holds the array, behind spaces")
}
