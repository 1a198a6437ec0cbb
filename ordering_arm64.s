//go:build !race

#include "textflag.h"

// func storeRelease(addr *uint64, val uint64)
//
// STLR is arm64's store-release: every earlier load and store is visible
// before it.
TEXT ·storeRelease(SB), NOSPLIT, $0-16
	MOVD addr+0(FP), R0
	MOVD val+8(FP), R1
	STLR R1, (R0)
	RET
