package main

import "io"

// importGo converts an execution trace: it needs golang.org/x/exp/trace,
// so its program is in the goruntime module.
var importGo = external{
	name:    "import-go",
	command: "tracer-import-go",
	install: "go install github.com/gotracer/tracer/goruntime/cmd/tracer-import-go@latest",
	what:    "converts execution traces",
}

// runImportGo is "tracer import-go": it runs tracer-import-go.
func runImportGo(args []string, stdout, stderr io.Writer) error {
	return importGo.run(args, stdout, stderr)
}
