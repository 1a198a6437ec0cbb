package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
)

// An external is a subcommand whose work needs dependencies this module
// does not take (the tracer package's users would get them too): it
// lives in a module of its own, as a program that "tracer NAME" runs the
// way git runs git-foo.
type external struct {
	name    string // the subcommand
	command string // the program, looked up in PATH
	install string // the command that installs it
	what    string // what it does, for the message when it is missing
	stdin   bool   // it reads a file named "-" from standard input
}

// run runs the program with args, its output passed through, and its
// standard input. The http:// and https:// URLs among args are fetched
// for it: one, if it reads "-", streamed to its standard input; else
// each copied to a temporary file first, all at once, whose name it gets.
func (x external) run(args []string, stdout, stderr io.Writer) error {
	if err := outputsNotURLs(args); err != nil {
		return err
	}
	path, err := exec.LookPath(x.command)
	if err != nil {
		return fmt.Errorf("%s is not installed (it %s, in its own module so that this one keeps its dependencies): %s", x.command, x.what, x.install)
	}
	args = slices.Clone(args)
	stdin := os.Stdin
	var fetches []*fetch
	if n := urls(args); n == 1 && x.stdin && !slices.Contains(args, "-") {
		i := slices.IndexFunc(args, isURL)
		f, err := stream(args[i])
		if err != nil {
			return err
		}
		defer f.Close()
		if f.pipe != nil {
			args[i], stdin = "-", f.pipe
		} else {
			args[i] = f.path // no pipe to name here: fetched to a file
		}
		fetches = []*fetch{f}
	} else if n > 0 {
		if fetches, err = downloadAll(args); err != nil {
			return err
		}
		defer closeAll(fetches)
		for i, f := range fetches {
			if f != nil {
				args[i] = f.path
			}
		}
	}
	cmd := exec.Command(path, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	err = cmd.Start()
	for _, f := range fetches {
		if f != nil && f.pipe != nil {
			f.pipe.Close() // the program's now: a copy it stops reading fails
		}
	}
	if err == nil {
		err = cmd.Wait()
	}
	for _, f := range fetches {
		if f == nil {
			continue
		}
		if f.signalled() {
			return fmt.Errorf("%s: %w", f.url, errInterrupted)
		}
		if f.wasCut() {
			fmt.Fprintf(stderr, "tracer %s: %s: %s\n", x.name, f.url, f.cutNote())
		}
	}
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			switch exit.ExitCode() {
			case 2:
				return usageError{"bad arguments"} // it said which
			case -1:
				return fmt.Errorf("%s: %w", x.command, err) // killed: Ctrl-C, say
			}
			return errProblems // it said why on stderr
		}
		return err
	}
	return nil
}

// outputsNotURLs returns a usage error if the value of a -o flag among
// args is a URL.
func outputsNotURLs(args []string) error {
	for i, a := range args {
		flag, value, ok := strings.Cut(strings.TrimPrefix(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || flag != "o" && flag != "-o" {
			continue
		}
		if !ok {
			if i+1 == len(args) {
				continue
			}
			value = args[i+1]
		}
		if err := noURL("-o", value); err != nil {
			return err
		}
	}
	return nil
}
