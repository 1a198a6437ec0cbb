//go:build !unix

package main

// childrenCPU returns 0: without getrusage the report leaves the children's
// CPU time out.
func childrenCPU() float64 { return 0 }
