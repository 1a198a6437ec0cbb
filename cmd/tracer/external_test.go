package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
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
