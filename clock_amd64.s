#include "textflag.h"

// func cputicks() int64
//
// RDTSC alone: the record path needs no fence, as its reading is stored
// and published after it, and a goroutine changes CPU only through the
// scheduler's locked instructions, thousands of instructions later.
TEXT ·cputicks(SB), NOSPLIT, $0-8
	RDTSC
	SHLQ $32, DX
	ORQ  DX, AX
	MOVQ AX, ret+0(FP)
	RET

// func cputicksOrdered() int64
//
// LFENCE before RDTSC: the reading is taken after every earlier
// instruction, and before any later load, as a pass's cut must be.
TEXT ·cputicksOrdered(SB), NOSPLIT, $0-8
	LFENCE
	RDTSC
	LFENCE
	SHLQ $32, DX
	ORQ  DX, AX
	MOVQ AX, ret+0(FP)
	RET
