#include "textflag.h"

// func cputicks() int64
//
// The generic timer's virtual count, which Linux's own clock reads. No ISB
// on the record path: see clock_amd64.s.
TEXT ·cputicks(SB), NOSPLIT, $0-8
	MRS  CNTVCT_EL0, R0
	MOVD R0, ret+0(FP)
	RET

// func cputicksOrdered() int64
//
// ISB before and after: the reading is taken after every earlier
// instruction and before any later one, as a pass's cut must be.
TEXT ·cputicksOrdered(SB), NOSPLIT, $0-8
	ISB  $15
	MRS  CNTVCT_EL0, R0
	ISB  $15
	MOVD R0, ret+0(FP)
	RET
