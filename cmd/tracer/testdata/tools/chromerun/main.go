// Command chromerun runs headless Chromium until its startup trace is
// written, then ends it and every process it started.
//
// Chromium's --trace-startup-duration writes the trace after the given
// time but leaves the browser running, and its helper processes outlive a
// killed browser. chromerun makes itself the child subreaper, starts the
// browser in its own process group, waits for the trace file to be whole
// (it ends in '}' and its size holds for a second), then sends SIGTERM to
// that group, SIGKILL after ten seconds, and reaps every orphan, so no
// process and no zombie is left behind.
//
//	go run ./chromerun -out FILE -- chromium ARGS...
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// prSetChildSubreaper is PR_SET_CHILD_SUBREAPER from linux/prctl.h.
const prSetChildSubreaper = 36

func main() {
	out := flag.String("out", "", "the trace file Chromium writes (its --trace-startup-file)")
	limit := flag.Duration("timeout", 2*time.Minute, "give up after this long")
	flag.Parse()
	if *out == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: chromerun -out FILE -- chromium ARGS...")
		os.Exit(2)
	}
	if err := run(*out, *limit, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "chromerun:", err)
		os.Exit(1)
	}
}

func run(out string, limit time.Duration, argv []string) error {
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); e != 0 {
		return fmt.Errorf("prctl(PR_SET_CHILD_SUBREAPER): %w", e)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	pgid := cmd.Process.Pid
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	werr := waitWhole(out, limit, exited)
	syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		syscall.Kill(-pgid, syscall.SIGKILL)
		<-exited
	}
	reap(pgid)
	return werr
}

// waitWhole waits until the file at path is a whole trace: it ends in
// '}' or ']' and has not changed size for a second.
func waitWhole(path string, limit time.Duration, exited <-chan error) error {
	deadline := time.Now().Add(limit)
	last, same := int64(-1), 0
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			if whole(path) {
				return nil
			}
			return fmt.Errorf("chromium exited (%v) before %s was written", err, path)
		case <-time.After(250 * time.Millisecond):
		}
		fi, err := os.Stat(path)
		if err != nil || fi.Size() == 0 {
			continue
		}
		if fi.Size() != last {
			last, same = fi.Size(), 0
			continue
		}
		if same++; same >= 4 && whole(path) {
			return nil
		}
	}
	return fmt.Errorf("%s not whole after %v", path, limit)
}

func whole(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		return false
	}
	tail := make([]byte, min(fi.Size(), 64))
	if _, err := f.ReadAt(tail, fi.Size()-int64(len(tail))); err != nil {
		return false
	}
	tail = bytes.TrimRight(tail, " \t\r\n")
	return len(tail) > 0 && (tail[len(tail)-1] == '}' || tail[len(tail)-1] == ']')
}

// reap kills what is left of the browser's process group, then every
// process this one inherited as subreaper (Chromium's helpers leave the
// group), and waits for each until none is left.
func reap(pgid int) {
	syscall.Kill(-pgid, syscall.SIGKILL)
	for range 100 {
		for _, pid := range children() {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		switch {
		case err != nil: // ECHILD: no child left
			return
		case pid == 0:
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// children lists the processes whose parent is this one.
func children() []int {
	dirs, _ := os.ReadDir("/proc")
	self := os.Getpid()
	var out []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + d.Name() + "/stat")
		if err != nil {
			continue
		}
		// The command name in parentheses may hold spaces: the fields
		// after its closing parenthesis are state, then ppid.
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) > 1 {
			if ppid, _ := strconv.Atoi(f[1]); ppid == self {
				out = append(out, pid)
			}
		}
	}
	return out
}
