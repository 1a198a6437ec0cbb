//go:build unix

package main

import "syscall"

// childrenCPU returns the CPU time of this process's finished children
// (go test, the compiler, the test binary), in seconds.
func childrenCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
