package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestExternal runs the subcommands whose programs live in other
// modules, with a fake program in PATH, or none.
func TestExternal(t *testing.T) {
	fake := "#!/bin/sh\necho \"ran $*\"\n[ \"$1\" != fail ] || { echo bad trace >&2; exit 1; }\n[ \"$1\" != -bad ] || { echo bad flag >&2; exit 2; }\n"
	for _, tool := range []struct {
		sub string
		x   external
	}{
		{"import-go", importGo},
		{"export", exportTool},
		{"sql", sqlTool},
	} {
		for _, tc := range []struct {
			name       string
			install    bool
			args       []string
			wantStatus int
			wantOut    string
			wantErr    string
		}{
			{name: "not installed", args: []string{"trace.out"}, wantStatus: 1, wantErr: tool.x.install},
			{name: "runs it", install: true, args: []string{"-o", "x.json", "trace.out"}, wantStatus: 0, wantOut: "ran -o x.json trace.out"},
			{name: "its failure", install: true, args: []string{"fail"}, wantStatus: 1, wantErr: "bad trace"},
			{name: "its usage error", install: true, args: []string{"-bad"}, wantStatus: 2, wantErr: "bad flag"},
		} {
			t.Run(tool.sub+"/"+tc.name, func(t *testing.T) {
				bin := t.TempDir()
				t.Setenv("PATH", bin)
				if tc.install {
					assert.NoError(t, os.WriteFile(filepath.Join(bin, tool.x.command), []byte(fake), 0o755))
				}
				var stdout, stderr bytes.Buffer
				status := run(append([]string{tool.sub}, tc.args...), &stdout, &stderr)
				assert.Equal(t, tc.wantStatus, status, stderr.String())
				assert.Contains(t, stdout.String(), tc.wantOut)
				assert.Contains(t, stderr.String(), tc.wantErr)
			})
		}
	}
}

// catTool is a program that prints the name of each of its arguments on
// stderr, then what it reads of each: standard input for "-", else the
// file it names.
const catTool = "#!/bin/sh\nfor a in \"$@\"; do\n  echo \"arg $a\" >&2\n  if [ \"$a\" = - ]; then cat; elif [ -f \"$a\" ]; then cat \"$a\"; fi\ndone\n"

// withStdin runs f with os.Stdin reading data (not in parallel: it is
// the process's).
func withStdin(t *testing.T, data []byte, f func()) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "stdin")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	in, err := os.Open(path)
	require.NoError(t, err)
	defer in.Close()
	saved := os.Stdin
	os.Stdin = in
	defer func() { os.Stdin = saved }()
	f()
}

// TestExternalStdin: the program reads "-" from tracer's standard input.
func TestExternalStdin(t *testing.T) {
	bin := t.TempDir()
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH")) // and cat
	stdin := []byte("[\n" + ev + ",\n")
	for _, x := range []external{sqlTool, exportTool} {
		require.NoError(t, os.WriteFile(filepath.Join(bin, x.command), []byte(catTool), 0o755))
		withStdin(t, stdin, func() {
			var stdout, stderr bytes.Buffer
			require.NoError(t, x.run([]string{"-"}, &stdout, &stderr), stderr.String())
			assert.Equal(t, string(stdin), stdout.String(), x.command)
		})
	}
}

// TestExternalURL: the programs of sql and export get a URL's answer as
// they get "-": on their standard input, as it arrives; several URLs, or
// a URL beside "-", or a program that does not read "-" (import-go), as
// temporary files, fetched at once. "-" alone is this process's standard
// input. An answer cut short is said to be.
func TestExternalURL(t *testing.T) {
	bin := t.TempDir()
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH")) // and cat
	for _, name := range []string{"tracer-sql", "tracer-export", "tracer-import-go"} {
		require.NoError(t, os.WriteFile(filepath.Join(bin, name), []byte(catTool), 0o755))
	}
	a, b, stdin := streamed(t, 8<<10), []byte("[\n"+ev+"\n]\n"), []byte("[\n"+ev+",\n")
	srvA, srvB := serveTrace(t, a, sendSlow), serveTrace(t, b, sendEncoding)
	cut := serveTrace(t, a, sendPlain)
	cut.cutAt = len(a) / 3
	for _, tc := range []struct {
		name     string
		args     []string
		wantOut  []byte
		wantArgs []string // what the program got, URLs as the names of temporary files
		wantErr  string
	}{
		{"sql one URL", []string{"sql", srvA.url(), "SELECT 1"}, a, []string{"-", "SELECT 1"}, ""},
		{"export one URL", []string{"export", "-format", "parquet", "-o", "dir", srvA.url()}, a, []string{"-format", "parquet", "-o", "dir", "-"}, ""},
		{"sql two URLs", []string{"sql", srvA.url(), srvB.url(), "SELECT 1"}, append(slices.Clone(a), b...), []string{"TEMP/trace.json", "TEMP/trace.json", "SELECT 1"}, ""},
		{"sql URL and stdin", []string{"sql", "-", srvB.url(), "SELECT 1"}, append(slices.Clone(stdin), b...), []string{"-", "TEMP/trace.json", "SELECT 1"}, ""},
		{"sql stdin", []string{"sql", "-", "SELECT 1"}, stdin, []string{"-", "SELECT 1"}, ""},
		{"import-go URL", []string{"import-go", "-o", "x.json", srvB.url()}, b, []string{"-o", "x.json", "TEMP/trace.json"}, ""},
		{"sql cut", []string{"sql", cut.url(), "SELECT 1"}, a[:len(a)/3], []string{"-", "SELECT 1"}, "tracer sql: " + cut.url() + ": the answer was cut short after"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			withStdin(t, stdin, func() {
				code, stdout, stderr := runCmd(tc.args...)
				require.Equal(t, 0, code, stderr)
				assert.True(t, string(tc.wantOut) == stdout, "the program read %d bytes, not the %d of its input", len(stdout), len(tc.wantOut))
				var got []string
				for _, line := range strings.Split(stderr, "\n") {
					if arg, ok := strings.CutPrefix(line, "arg "); ok {
						if filepath.Base(arg) == "trace.json" && filepath.IsAbs(arg) {
							assert.NoFileExists(t, arg, "removed once the program is done")
							arg = "TEMP/trace.json"
						}
						got = append(got, arg)
					}
				}
				assert.Equal(t, tc.wantArgs, got)
				assert.Contains(t, stderr, tc.wantErr)
			})
		})
	}
}
