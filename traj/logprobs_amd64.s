#include "textflag.h"

DATA logprobsconst<>+0(SB)/4, $0x7f800000 // exponent bits
DATA logprobsconst<>+4(SB)/4, $0x00800000 // their lowest bit
GLOBL logprobsconst<>(SB), RODATA|NOPTR, $8

// func logprobsBadAVX2(lp *float32, mask *uint8, n int) uint32
// checkLogprobs' branch-free pass over lp[0:n] and mask[0:n] (n a multiple
// of 8), eight values at a time: the result is nonzero when some value is
// not finite, > 0, or nonzero where its mask is 0 (the scalar loop's bit
// 31, one bit per lane).
TEXT ·logprobsBadAVX2(SB), NOSPLIT, $0-28
	MOVQ lp+0(FP), SI
	MOVQ mask+8(FP), DX
	MOVQ n+16(FP), CX
	VPXOR Y7, Y7, Y7                       // bad
	VPXOR Y6, Y6, Y6                       // 0
	VPBROADCASTD logprobsconst<>+0(SB), Y8
	VPBROADCASTD logprobsconst<>+4(SB), Y9
	VPCMPEQD Y10, Y10, Y10                 // -1
	SHRQ $3, CX
	JZ   done

loop:
	VMOVDQU (SI), Y0       // b
	VPAND   Y8, Y0, Y1
	VPADDD  Y9, Y1, Y1     // nonFinite: (b & 0x7f800000) + 0x00800000
	VPSUBD  Y0, Y6, Y2     // -b
	VPOR    Y0, Y2, Y2     // b | -b
	VPANDN  Y2, Y0, Y2     // positive: ^b & (b | -b)
	VPSLLD  $1, Y0, Y3     // mag: b << 1
	VPSUBD  Y3, Y6, Y4
	VPOR    Y3, Y4, Y4     // mag | -mag
	VPMOVZXBD (DX), Y5     // the mask bytes, widened
	VPADDD  Y10, Y5, Y5    // mask - 1
	VPAND   Y5, Y4, Y4     // injected
	VPOR    Y1, Y7, Y7
	VPOR    Y2, Y7, Y7
	VPOR    Y4, Y7, Y7
	ADDQ    $32, SI
	ADDQ    $8, DX
	DECQ    CX
	JNZ     loop

done:
	VMOVMSKPS Y7, AX
	VZEROUPPER
	MOVL AX, ret+24(FP)
	RET

// func nonFiniteAVX2(vs *float32, n int) uint32
// Nonzero when one of vs[0:n] (n a multiple of 8) is NaN or ±Inf: its
// exponent bits are all ones, so (bits & 0x7f800000) + 0x00800000 sets bit
// 31 (one bit per lane).
TEXT ·nonFiniteAVX2(SB), NOSPLIT, $0-20
	MOVQ vs+0(FP), SI
	MOVQ n+8(FP), CX
	VPXOR Y7, Y7, Y7
	VPBROADCASTD logprobsconst<>+0(SB), Y8
	VPBROADCASTD logprobsconst<>+4(SB), Y9
	SHRQ $3, CX
	JZ   nfdone

nfloop:
	VPAND   (SI), Y8, Y1
	VPADDD  Y9, Y1, Y1
	VPOR    Y1, Y7, Y7
	ADDQ    $32, SI
	DECQ    CX
	JNZ     nfloop

nfdone:
	VMOVMSKPS Y7, AX
	VZEROUPPER
	MOVL AX, ret+16(FP)
	RET
