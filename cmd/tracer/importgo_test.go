package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestImportGo(t *testing.T) {
	bin := t.TempDir()
	fake := "#!/bin/sh\necho \"converted $*\"\n[ \"$1\" != fail ] || { echo bad trace >&2; exit 1; }\n"
	withFake := func(t *testing.T) { t.Setenv("PATH", bin) }
	for _, tc := range []struct {
		name       string
		install    bool
		args       []string
		wantStatus int
		wantOut    string
		wantErr    string
	}{
		{name: "not installed", args: []string{"trace.out"}, wantStatus: 1, wantErr: "go install github.com/gotracer/tracer/goruntime/cmd/tracer-import-go"},
		{name: "runs it", install: true, args: []string{"-o", "x.json", "trace.out"}, wantStatus: 0, wantOut: "converted -o x.json trace.out"},
		{name: "its failure", install: true, args: []string{"fail"}, wantStatus: 1, wantErr: "bad trace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("PATH", t.TempDir())
			if tc.install {
				assert.NoError(t, os.WriteFile(filepath.Join(bin, importGoCommand), []byte(fake), 0o755))
				withFake(t)
			}
			var stdout, stderr bytes.Buffer
			status := run(append([]string{"import-go"}, tc.args...), &stdout, &stderr)
			assert.Equal(t, tc.wantStatus, status, stderr.String())
			assert.Contains(t, stdout.String(), tc.wantOut)
			assert.Contains(t, stderr.String(), tc.wantErr)
		})
	}
}
