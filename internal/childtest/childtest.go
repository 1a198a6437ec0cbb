// Package childtest runs a helper test of the calling test binary as a
// child process: the shape of every test that needs a real process (to
// kill it, to give it a disk that fills, to watch it freeze).
//
// The child is the same binary run with -test.run naming one test, which
// skips itself unless the environment variable the parent sets is there:
//
//	func TestThingChild(t *testing.T) {
//		arg := os.Getenv("THING_CHILD")
//		if arg == "" {
//			t.Skip("helper process for TestThing")
//		}
//		...
//	}
//
//	out, err := childtest.Run(t, "TestThingChild", 10*time.Second, "THING_CHILD=x")
package childtest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Command returns the command that runs test, a test of the calling
// binary, in a child process with env added to the environment.
func Command(test string, env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$")
	cmd.Env = append(os.Environ(), env...)
	return cmd
}

// ErrTimeout is returned by Run for a child killed for taking too long.
var ErrTimeout = errors.New("childtest: the child did not finish in time and was killed")

// Run runs test in a child process, kills it with SIGKILL if it has not
// finished within timeout, and returns what it wrote to standard output.
// Its error tells a failed child (with its standard error) from one that
// was killed for taking too long (wrapping ErrTimeout).
func Run(t testing.TB, test string, timeout time.Duration, env ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^"+test+"$", "-test.v")
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		return stdout.String(), fmt.Errorf("%w after %v; stdout:\n%s\nstderr:\n%s", ErrTimeout, timeout, stdout.String(), stderr.String())
	}
	if err != nil {
		return stdout.String(), fmt.Errorf("child %s: %w; stdout:\n%s\nstderr:\n%s", test, err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

// StartReady starts cmd, a child made with Command, and returns once it
// has printed a line READY, with the scanner of its standard output
// positioned after it. It fails the test, with the child's standard
// error, if the child ends first. The caller ends the child (kills it,
// signals it, closes its stdin) and waits for it.
func StartReady(t testing.TB, cmd *exec.Cmd) *bufio.Scanner {
	t.Helper()
	stderr, ok := cmd.Stderr.(*bytes.Buffer)
	if !ok && cmd.Stderr == nil {
		stderr = new(bytes.Buffer)
		cmd.Stderr = stderr
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		if strings.TrimSpace(lines.Text()) == "READY" {
			return lines
		}
	}
	// Wait before reading stderr, which the child writes; a nil buffer
	// (the caller's stderr is not one) prints <nil>.
	cmd.Wait()
	t.Fatalf("childtest: the child ended before it was ready; stderr:\n%s", stderr)
	return nil
}
