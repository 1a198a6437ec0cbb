package tables

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gotracer/tracer/cmd/tracer/internal/tracegen"
	"github.com/gotracer/tracer/internal/tracefile"
)

// readAheadTraces are the traces the read-ahead is checked on: one of
// the tracer package's (tens of thousands of events, their args, flows
// and async events) and every trace of cmd/tracer's corpus (escapes,
// string pids, events the lenient scanner takes, torn ends...).
func readAheadTraces(t *testing.T) []string {
	paths := []string{tracegen.Generate(t, filepath.Join(t.TempDir(), "gen.json"), 4<<20)}
	corpus, err := filepath.Glob("../../testdata/others/*.json")
	require.NoError(t, err)
	require.NotEmpty(t, corpus)
	return append(paths, corpus...)
}

// TestReadAheadRows checks that reading on a goroutine of its own hands
// the Builder the events it would have read itself: the rows are those
// of the Builder reading on its own goroutine, with batches and a pool
// down to one event and one batch, where a batch is refilled the moment
// the Builder gives it back, so that one given back (or refilled) before
// the Builder is done with its events would change the rows.
func TestReadAheadRows(t *testing.T) {
	sizes := []readAhead{
		{events: 1, bytes: 1, batches: 1},
		{events: 1, bytes: 1, batches: 2},
		{events: 3, bytes: 64, batches: 1},
		{events: 7, bytes: 512, batches: 2},
		{}, // the defaults
	}
	for _, path := range readAheadTraces(t) {
		want, wantErr := buildWith(readAhead{batches: -1}, path)
		for _, ra := range sizes {
			got, err := buildWith(ra, path)
			if wantErr != nil {
				assert.EqualError(t, err, wantErr.Error(), "%s %+v", path, ra)
				continue
			}
			require.NoError(t, err, "%s %+v", path, ra)
			require.Equal(t, want, got, "%s %+v", path, ra)
		}
	}
}

func buildWith(ra readAhead, path string) (*rows, error) {
	r := &rows{}
	b := NewBuilder(r)
	b.read = ra
	b.MaxPending = 64 // slices written in the middle of the file too
	err := b.Build([]string{path}, nil)
	return r, err
}

// TestReadAheadStopsOnError checks that an error of the Builder's stops
// the reading goroutine and is the one returned.
func TestReadAheadStopsOnError(t *testing.T) {
	path := tracegen.Generate(t, filepath.Join(t.TempDir(), "gen.json"), 1<<20)
	for _, ra := range []readAhead{{events: 1, bytes: 1, batches: 1}, {}} {
		f, err := os.Open(path)
		require.NoError(t, err)
		n := 0
		read, err := ra.each(tracefile.NewReader(f), func(*tracefile.Event) error {
			if n++; n == 1000 {
				return os.ErrClosed
			}
			return nil
		})
		assert.False(t, read)
		assert.ErrorIs(t, err, os.ErrClosed)
		assert.Equal(t, 1000, n)
		require.NoError(t, f.Close())
	}
}

// TestEventBatchCopies checks that a batch's copy of an event is the
// event, and holds no byte of the Reader's: every byte slice in it,
// found by reflection (so a field added to tracefile.Event is checked
// too), points into the batch's own buffer.
func TestEventBatchCopies(t *testing.T) {
	for _, path := range readAheadTraces(t) {
		f, err := os.Open(path)
		require.NoError(t, err)
		r := tracefile.NewReader(f)
		b := newEventBatch(16, 4096)
		var want []tracefile.Event
		check := func() {
			for i := range b.evs {
				assert.Equal(t, want[i], b.evs[i], "%s: event %d", path, i)
				walkBytes(reflect.ValueOf(&b.evs[i]).Elem(), func(s []byte) {
					assert.True(t, within(s, b.raw), "%s: event %d holds bytes not in its batch", path, i)
				})
			}
			b.reset()
			want = want[:0]
		}
		for {
			ev, err := r.Next()
			if err != nil {
				break
			}
			if len(b.evs) > 0 && !b.fits(ev) {
				check()
			}
			want = append(want, deepCopy(ev))
			b.add(ev)
		}
		check()
		require.NoError(t, f.Close())
	}
}

// walkBytes calls f with each non-empty byte slice in v.
func walkBytes(v reflect.Value, f func([]byte)) {
	switch v.Kind() {
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			if v.Len() > 0 {
				f(v.Bytes())
			}
			return
		}
		for i := range v.Len() {
			walkBytes(v.Index(i), f)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			walkBytes(v.Field(i), f)
		}
	case reflect.Pointer:
		if !v.IsNil() {
			walkBytes(v.Elem(), f)
		}
	}
}

func within(s, buf []byte) bool {
	p := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	return p >= lo && p+uintptr(len(s)) <= lo+uintptr(len(buf))
}

// deepCopy returns a copy of e sharing no memory with it.
func deepCopy(e *tracefile.Event) tracefile.Event {
	c := reflect.New(reflect.TypeOf(*e)).Elem()
	copyValue(c, reflect.ValueOf(e).Elem())
	return c.Interface().(tracefile.Event)
}

func copyValue(dst, src reflect.Value) {
	switch src.Kind() {
	case reflect.Slice:
		if src.IsNil() {
			return
		}
		s := reflect.MakeSlice(src.Type(), src.Len(), src.Len())
		for i := range src.Len() {
			copyValue(s.Index(i), src.Index(i))
		}
		dst.Set(s)
	case reflect.Struct:
		for i := range src.NumField() {
			copyValue(dst.Field(i), src.Field(i))
		}
	default:
		dst.Set(src)
	}
}
