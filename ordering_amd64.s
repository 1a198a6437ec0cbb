//go:build !race

#include "textflag.h"

// func storeRelease(addr *uint64, val uint64)
//
// On amd64 (TSO) an ordinary store is never reordered with earlier stores,
// so a plain MOV publishes the record written before it. Being a call, it is
// also opaque to the compiler, which cannot move those stores past it.
TEXT ·storeRelease(SB), NOSPLIT, $0-16
	MOVQ addr+0(FP), AX
	MOVQ val+8(FP), BX
	MOVQ BX, (AX)
	RET
