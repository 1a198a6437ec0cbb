package main

import (
	"errors"
	"fmt"
	"io"
	"os/exec"
)

// importGoCommand is the program that import-go runs. Converting an
// execution trace needs golang.org/x/exp/trace, which this module does
// not depend on (the tracer package's users would get it too): the
// converter is in the goruntime module, and "tracer import-go" runs its
// command the way git runs git-foo.
const importGoCommand = "tracer-import-go"

const importGoInstall = "go install github.com/gotracer/tracer/goruntime/cmd/tracer-import-go@latest"

// runImportGo runs tracer-import-go with args, its output passed through.
func runImportGo(args []string, stdout, stderr io.Writer) error {
	path, err := exec.LookPath(importGoCommand)
	if err != nil {
		return fmt.Errorf("%s is not installed (it converts execution traces, in its own module so that this one keeps its dependencies): %s", importGoCommand, importGoInstall)
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return errProblems // it said why on stderr
		}
		return err
	}
	return nil
}
