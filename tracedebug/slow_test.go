package tracedebug_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gotracer/tracer"
	"github.com/gotracer/tracer/internal/tracecheck"
	"github.com/gotracer/tracer/tracedebug"
	"github.com/gotracer/tracer/tracehttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// slowApp is a server whose every hundredth request (by its id) is slow:
// it sleeps past the threshold, so that its slowness owes nothing to the
// machine's.
func slowApp() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		defer tracer.Span("lookup", tracer.String("id", id))()
		var n int
		fmt.Sscan(id, &n)
		if n%100 == 0 {
			defer tracer.Span("slow path")()
			time.Sleep(60 * time.Millisecond) // the threshold is 40 ms
		}
		_, _ = io.WriteString(w, "item\n")
	})
	return tracehttp.Middleware(mux)
}

// serveSlow serves 300 requests from two clients: 3 of them slow.
func serveSlow(t *testing.T, catch *tracedebug.SlowCatcher) {
	t.Helper()
	srv := httptest.NewServer(catch.Middleware(slowApp()))
	defer srv.Close()
	var wg sync.WaitGroup
	for c := range 2 {
		wg.Go(func() {
			for i := c; i < 300; i += 2 {
				resp, err := http.Get(fmt.Sprintf("%s/items/%d", srv.URL, i))
				if !assert.NoError(t, err) {
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	catch.Wait()
}

// recordings returns the files of dir, each read whole and parsed.
func recordings(t *testing.T, dir string) map[string][]tracecheck.Event {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	out := map[string][]tracecheck.Event{}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		if strings.HasSuffix(e.Name(), ".gz") {
			zr, err := gzip.NewReader(bytes.NewReader(data))
			require.NoError(t, err)
			data, err = io.ReadAll(zr)
			require.NoError(t, err)
		}
		out[e.Name()] = tracecheck.Parse(t, data)
	}
	return out
}

// TestCatchSlowRequests: every slow request of a server is caught, its
// recording holds it whole, nested, with the requests that ran beside it,
// and loads in both importers; the files are named by time and cause.
func TestCatchSlowRequests(t *testing.T) {
	for _, gz := range []bool{false, true} {
		t.Run(fmt.Sprintf("gzip=%v", gz), func(t *testing.T) {
			dir := t.TempDir()
			catch, err := tracedebug.CatchSlow(tracedebug.SlowConfig{
				Dir: dir, Threshold: 40 * time.Millisecond, Every: time.Nanosecond, MaxFiles: 100, Gzip: gz,
			})
			require.NoError(t, err)
			serveSlow(t, catch)
			st := catch.Stats()
			require.NoError(t, catch.Close())
			require.False(t, tracer.Enabled(), "Close stops the recorder")

			files := recordings(t, dir)
			assert.EqualValues(t, len(files), st.Written)
			assert.GreaterOrEqual(t, st.Caught, uint64(3), "the three slow requests, and any the machine made slow")
			slow := map[string]bool{}
			for name, evs := range files {
				assert.Regexp(t, `^slow-\d{8}T\d{6}\.\d{3}Z-GET__items_\d+-\d+(\.\d+)?m?s\.json(\.gz)?$`, name)
				tracks := tracecheck.Tracks(t, evs) // nested, B before E
				for _, s := range tracecheck.SlicesNamed(tracks, "slow path") {
					var parent *tracecheck.Slice // the innermost slice around it
					for i, p := range tracks[s.Tid] {
						ns := tracecheck.Nanos
						if p.Name != s.Name && ns(p.Start) <= ns(s.Start) && ns(s.End) <= ns(p.End) && (parent == nil || p.Start >= parent.Start) {
							parent = &tracks[s.Tid][i]
						}
					}
					require.NotNil(t, parent, "%s: the slow path has its lookup around it", name)
					assert.Equal(t, "lookup", parent.Name, "%s: the slow path nests in its lookup", name)
					slow[fmt.Sprint(parent.Args["id"])] = true
				}
				assert.Greater(t, len(tracecheck.SlicesNamed(tracks, "lookup")), 10, "%s: the requests that ran beside it", name)
			}
			assert.Equal(t, map[string]bool{"0": true, "100": true, "200": true}, slow, "every slow request, whole")
			if !gz { // the same events
				var paths []string
				for name := range files {
					paths = append(paths, filepath.Join(dir, name))
				}
				tracecheck.ImportQuick(t, paths...)
			}
		})
	}
}

// TestCatchSlowLimits: at most one recording an interval, the rest
// counted; at most MaxFiles kept, the newest.
func TestCatchSlowLimits(t *testing.T) {
	t.Run("Every", func(t *testing.T) {
		dir := t.TempDir()
		catch, err := tracedebug.CatchSlow(tracedebug.SlowConfig{Dir: dir, Threshold: 40 * time.Millisecond, Every: time.Hour})
		require.NoError(t, err)
		serveSlow(t, catch)
		st := catch.Stats()
		require.NoError(t, catch.Close())
		assert.EqualValues(t, 1, st.Written)
		assert.Equal(t, st.Caught-1, st.Skipped)
		assert.Len(t, recordings(t, dir), 1)
	})
	t.Run("MaxFiles", func(t *testing.T) {
		dir := t.TempDir()
		other := filepath.Join(dir, "notes.txt") // not a recording: left alone
		require.NoError(t, os.WriteFile(other, []byte("mine"), 0o644))
		catch, err := tracedebug.CatchSlow(tracedebug.SlowConfig{Dir: dir, Threshold: 40 * time.Millisecond, Every: time.Nanosecond, MaxFiles: 1})
		require.NoError(t, err)
		for range 3 {
			func() {
				defer catch.Span("batch")()
				time.Sleep(50 * time.Millisecond) // longer than the threshold
			}()
			catch.Wait()
		}
		st := catch.Stats()
		require.NoError(t, catch.Close())
		assert.EqualValues(t, 3, st.Written)
		assert.EqualValues(t, 2, st.Removed)
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		require.Len(t, entries, 2, "the newest recording, and the file that is not one")
		assert.Contains(t, entries[1].Name(), "-batch-")
	})
	t.Run("refusals", func(t *testing.T) {
		_, err := tracedebug.CatchSlow(tracedebug.SlowConfig{Threshold: time.Second})
		assert.ErrorContains(t, err, "needs a Dir")
		_, err = tracedebug.CatchSlow(tracedebug.SlowConfig{Dir: t.TempDir()})
		assert.ErrorContains(t, err, "Threshold")
		tr, err := tracer.NewWithWriter(io.Discard)
		require.NoError(t, err)
		require.NoError(t, tracer.SetDefault(tr))
		defer tracer.Stop()
		_, err = tracedebug.CatchSlow(tracedebug.SlowConfig{Dir: t.TempDir(), Threshold: time.Second})
		assert.ErrorIs(t, err, tracer.ErrStarted)
	})
}
