package corpus

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFilesAreTheDirectory checks that the list and the directory agree:
// every committed trace is listed, every listed small file is committed,
// and every tool issue 33 names has a small file that ordinary tests read.
func TestFilesAreTheDirectory(t *testing.T) {
	all, err := Files()
	require.NoError(t, err)
	dir, err := Dir()
	require.NoError(t, err)

	onDisk, err := filepath.Glob(filepath.Join(dir, "*.json.gz"))
	require.NoError(t, err)
	var listed []string
	tools := map[string]bool{}
	for _, f := range all {
		assert.Equal(t, f.Gzip, filepath.Ext(f.Name) == ".gz", f.Name)
		if f.Large {
			assert.Equal(t, filepath.Join(CacheDir(dir), f.Name), f.Path)
			continue
		}
		assert.Equal(t, filepath.Join(dir, f.Name), f.Path)
		listed = append(listed, f.Path)
		tools[f.Tool] = true
	}
	slices.Sort(onDisk)
	slices.Sort(listed)
	assert.Equal(t, onDisk, listed, "the committed *.json.gz and the list differ")
	for _, tool := range []string{"go", "node", "tsc", "clang", "cmake", "webpack", "chromium"} {
		assert.True(t, tools[tool], "no committed trace of %s", tool)
	}
}

// TestFilesOpen reads every small file through Open to its end (so gzip
// checks its CRC) and parses it as strict JSON in either of the format's
// forms. Parsing the large ones takes seconds, which is a benchmark's
// business: a large file is only checked to be whole (a bracket at each
// end), and skipped if make.sh has not made it.
func TestFilesOpen(t *testing.T) {
	all, err := Files()
	require.NoError(t, err)
	for _, f := range all {
		t.Run(f.Name, func(t *testing.T) {
			r, err := f.Open()
			if f.Large && errors.Is(err, ErrNotMade) {
				t.Skip(err)
			}
			require.NoError(t, err)
			data, err := io.ReadAll(r)
			require.NoError(t, err)
			require.NoError(t, r.Close())
			if f.Large {
				text := bytes.TrimSpace(data)
				require.NotEmpty(t, text)
				assert.Contains(t, []string{"[]", "{}"}, string([]byte{text[0], text[len(text)-1]}), "not whole")
				return
			}
			n, err := countEvents(data)
			require.NoError(t, err)
			assert.Positive(t, n)
			t.Logf("%s (%s): %d bytes, %d events", f.Name, f.Tool, len(data), n)
		})
	}
}

// countEvents parses a trace and counts its events.
func countEvents(data []byte) (int, error) {
	var events []json.RawMessage
	if err := json.Unmarshal(data, &events); err == nil {
		return len(events), nil
	}
	var obj struct {
		TraceEvents []json.RawMessage `json:"traceEvents"`
	}
	if err := json.Unmarshal(data, &obj); err != nil {
		return 0, err
	}
	if obj.TraceEvents == nil {
		return 0, errors.New("no traceEvents array")
	}
	return len(obj.TraceEvents), nil
}

func TestOpenLargeNotMade(t *testing.T) {
	t.Setenv(CacheEnv, t.TempDir())
	all, err := Files()
	require.NoError(t, err)
	large := 0
	for _, f := range all {
		if !f.Large {
			continue
		}
		large++
		_, err := f.Open()
		assert.ErrorIs(t, err, ErrNotMade, f.Name)
	}
	assert.Positive(t, large)
}

func TestOpenCorruptGzip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.json.gz")
	require.NoError(t, os.WriteFile(path, []byte("[not gzip]"), 0o644))
	_, err := File{Name: "bad.json.gz", Gzip: true, Path: path}.Open()
	assert.Error(t, err)
}

func TestDirOutsideModule(t *testing.T) {
	t.Chdir(t.TempDir())
	_, err := Dir()
	assert.ErrorContains(t, err, "no github.com/gotracer/tracer module")
	_, err = Files()
	assert.Error(t, err)
}

func TestModulePath(t *testing.T) {
	for _, tc := range []struct{ mod, want string }{
		{"module github.com/gotracer/tracer\n\ngo 1.26\n", "github.com/gotracer/tracer"},
		{"// comment\nmodule \"example.com/x\"\n", "example.com/x"},
		{"go 1.26\n", ""},
	} {
		assert.Equal(t, tc.want, modulePath(tc.mod), tc.mod)
	}
}
