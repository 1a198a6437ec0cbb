package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
)

// An external is a subcommand whose work needs dependencies this module
// does not take (the tracer package's users would get them too): it
// lives in a module of its own, as a program that "tracer NAME" runs the
// way git runs git-foo.
type external struct {
	command string // the program, looked up in PATH
	install string // the command that installs it
	what    string // what it does, for the message when it is missing
}

// run runs the program with args, its output passed through, and its
// standard input, which it reads for a file named "-".
func (x external) run(args []string, stdout, stderr io.Writer) error {
	path, err := exec.LookPath(x.command)
	if err != nil {
		return fmt.Errorf("%s is not installed (it %s, in its own module so that this one keeps its dependencies): %s", x.command, x.what, x.install)
	}
	cmd := exec.Command(path, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			if exit.ExitCode() == 2 {
				return usageError{"bad arguments"} // it said which
			}
			return errProblems // it said why on stderr
		}
		return err
	}
	return nil
}
