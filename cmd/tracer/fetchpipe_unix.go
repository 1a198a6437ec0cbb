//go:build unix

package main

import (
	"os"
	"strconv"
)

// pipeName returns a name that opens the pipe whose read end is r, as
// the shell's <(...) does, or "" if the system has none.
func pipeName(r *os.File) string {
	conn, err := r.SyscallConn()
	if err != nil {
		return ""
	}
	var name string
	// Not r.Fd, which would make r blocking.
	if err := conn.Control(func(fd uintptr) { name = "/dev/fd/" + strconv.FormatUint(uint64(fd), 10) }); err != nil {
		return ""
	}
	if _, err := os.Stat(name); err != nil {
		return "" // no /dev/fd (a Linux without /proc)
	}
	return name
}
