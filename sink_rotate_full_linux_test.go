package tracer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/gotracer/tracer/internal/childtest"
	"github.com/gotracer/tracer/internal/tracecheck"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fillDisk writes a file in dir until the disk is full and returns its
// path: remove it to give the space back.
func fillDisk(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	block := make([]byte, 4<<10)
	for {
		if _, err := f.Write(block); err != nil {
			require.ErrorIs(t, err, syscall.ENOSPC)
			return path
		}
	}
}

// TestRotationOnFullDisk is issue 31's second defect: with rotation, on a
// tmpfs that fills and is emptied again, a new file whose first write
// failed never got its "[" and process metadata, and Close wrote the
// object's head over the padding of a file of bare events, which neither
// viewer opens. Every file left must open on its own, whatever failed:
// strict JSON once terminated, each goroutine's spans nested with every E
// after its B, and Stats must account for the events written.
func TestRotationOnFullDisk(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, file string
		maxSize    int64
		opts       []Option
	}{
		{"plain", "trace.json", 32 << 10, nil},
		{"plain, lanes", "trace.json", 32 << 10, []Option{WithLanes()}},
		{"gzip", "trace.json.gz", 4 << 10, nil},
	}
	kept, keep := t.TempDir(), []string(nil) // the files, for one run of the importers
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := childtest.Tmpfs(t, 2<<20)
			path := filepath.Join(dir, tt.file)
			var log errorLog
			tr, err := New(path, append(tt.opts, WithMaxFileSize(tt.maxSize), WithMaxFiles(6),
				withClock(newTestClock()), WithErrorHandler(log.handle))...)
			require.NoError(t, err)
			ageAll(tr) // the workers' spans are written as B at every flush

			// Workers hold a span for their life, so that every new file
			// starts with B events written again.
			jobs, done := make(chan int), make(chan struct{})
			for w := range 4 {
				go func() {
					defer func() { done <- struct{}{} }()
					defer tr.Span("worker", Int("w", w))()
					for i := range jobs {
						tr.Span("job", Int("i", i), String("pad", "text to fill the files sooner"))()
					}
				}()
			}
			job, failed := 0, 0
			rounds := func(n int) {
				for range n {
					for range 100 {
						jobs <- job
						job++
					}
					if tr.Flush() != nil {
						failed++
					}
				}
			}
			for range 5 {
				filler := fillDisk(t, dir)
				rounds(8)
				require.NoError(t, os.Remove(filler))
				rounds(8)
			}
			// Last, the workers' ends once there is room again, after
			// rotations the full disk refused (a new file gets its
			// opening before it takes the path, or it is not started).
			filler := fillDisk(t, dir)
			rounds(8)
			require.NoError(t, os.Remove(filler))
			close(jobs)
			for range 4 {
				<-done
			}
			tr.Flush() // the errors of the background flushes while the disk was full
			require.NoError(t, tr.Close(), "there is room at Close")
			require.Positive(t, failed, "the disk never filled: %v", log.errs)
			require.True(t, errors.Is(log.errs[0], syscall.ENOSPC), "%v", log.errs[0])

			files := traceFiles(t, dir)
			require.Len(t, files, 6, "older files are removed")
			inFiles := 0
			for _, file := range files {
				data, err := os.ReadFile(file)
				require.NoError(t, err)
				if filepath.Ext(file) == ".gz" {
					members := gunzipMembers(t, data)
					require.Len(t, members, 1, "%s: joined once there was room again", file)
					data = members[0]
				}
				evs := tracecheck.ReadBytes(t, data) // strict JSON, once terminated
				require.NotEmpty(t, evs, file)
				require.Equal(t, "process_name", evs[0].Name, "%s starts with its opening", file)
				tracecheck.Tracks(t, evs) // nested, every E after its B
				for _, e := range evs {
					if e.Ph != "M" && e.Name != "tracer.dropped" && !(e.Ph == "B" && e.Name == "worker") {
						inFiles++
					}
				}
			}
			st := tr.Stats()
			t.Logf("%d failed flushes, %s", failed, fmt.Sprintf("%+v", st))
			assert.Positive(t, st.Deleted, "six files kept of more")
			assert.Positive(t, st.Lost, "writes failed")
			// Events counts the goroutines' names too, and the B of a
			// span open across a rotation once, however many files repeat it.
			assert.LessOrEqual(t, uint64(inFiles), st.Events-st.Deleted)
			for _, f := range files {
				data, err := os.ReadFile(f)
				require.NoError(t, err)
				copied := filepath.Join(kept, fmt.Sprintf("%d.%s", i, filepath.Base(f)))
				require.NoError(t, os.WriteFile(copied, data, 0o644))
				keep = append(keep, copied)
			}
		})
	}
	importInHeavyRun(t, keep...) // both viewers load every file, with no warning
}

// TestFlightRecorderWriteFileOnFullDisk: a dump that cannot be written
// whole leaves the file it would replace as it was, and no file beside it.
func TestFlightRecorderWriteFileOnFullDisk(t *testing.T) {
	t.Parallel()
	dir := childtest.Tmpfs(t, 8<<20)
	path := filepath.Join(dir, "dump.json")
	r := newFlightRecorder(t, FlightRecorderConfig{MaxEvents: 100_000})
	for i := range 20_000 {
		r.Span("work", Int("i", i))()
	}
	require.NoError(t, os.WriteFile(path, []byte("the old dump"), 0o600))
	filler := fillDisk(t, dir)
	err := r.WriteFile(path)
	require.ErrorIs(t, err, syscall.ENOSPC)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "the old dump", string(data))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 2, "the dump and the filler, nothing else")

	require.NoError(t, os.Remove(filler))
	require.NoError(t, r.WriteFile(path))
	assert.Len(t, byName(readClosed(t, path), "work"), 20_000)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "the file keeps its permissions")
}
