#include "textflag.h"

// The constants of math.Exp's amd64 kernel (GOROOT/src/math/exp_amd64.s),
// each repeated in 4 lanes so that it can be a 256-bit memory operand.
#define LANES4(off, v) DATA expconst<>+(off)(SB)/8, v; DATA expconst<>+(off+8)(SB)/8, v; DATA expconst<>+(off+16)(SB)/8, v; DATA expconst<>+(off+24)(SB)/8, v

LANES4(0, $1.4426950408889634073599246810018920)         // LOG2E
LANES4(32, $0.69314718055966295651160180568695068359375) // LN2U
LANES4(64, $0.28235290563031577122588448175013436025525412068e-12) // LN2L
LANES4(96, $0.0625)
LANES4(128, $2.4801587301587301587e-5)
LANES4(160, $1.9841269841269841270e-4)
LANES4(192, $1.3888888888888888889e-3)
LANES4(224, $8.3333333333333333333e-3)
LANES4(256, $4.1666666666666666667e-2)
LANES4(288, $1.6666666666666666667e-1)
LANES4(320, $0.5)
LANES4(352, $1.0)
LANES4(384, $2.0)
DATA expconst<>+416(SB)/8, $1023
DATA expconst<>+424(SB)/8, $1023
DATA expconst<>+432(SB)/8, $1023
DATA expconst<>+440(SB)/8, $1023
GLOBL expconst<>(SB), RODATA|NOPTR, $448

// func expFMA4(dst, src *float64, n int)
// For i < n (a multiple of 4): dst[i] = math.Exp(src[i]), bit for bit, for
// |src[i]| ≤ 700 (no overflow, no subnormal result; the callers pass
// |x| ≤ 20). Four lanes run the instructions of math.Exp's FMA path
// (archExp's avxfma branch), in the same order: the same IEEE operations
// give the same bits.
TEXT ·expFMA4(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $2, CX
	JZ   done

loop:
	VMOVUPD (SI), Y0
	VMULPD  expconst<>+0(SB), Y0, Y1       // x * LOG2E
	VCVTPD2DQY Y1, X4                       // n = round(x * LOG2E), as CVTSD2SL
	VCVTDQ2PD X4, Y1
	VFNMADD231PD expconst<>+32(SB), Y1, Y0 // x -= n * LN2U (fused)
	VFNMADD231PD expconst<>+64(SB), Y1, Y0 // x -= n * LN2L (fused)
	VMULPD  expconst<>+96(SB), Y0, Y0       // x *= 1/16
	VMOVUPD expconst<>+128(SB), Y1
	VFMADD213PD expconst<>+160(SB), Y0, Y1
	VFMADD213PD expconst<>+192(SB), Y0, Y1
	VFMADD213PD expconst<>+224(SB), Y0, Y1
	VFMADD213PD expconst<>+256(SB), Y0, Y1
	VFMADD213PD expconst<>+288(SB), Y0, Y1
	VFMADD213PD expconst<>+320(SB), Y0, Y1
	VFMADD213PD expconst<>+352(SB), Y0, Y1
	VMULPD  Y1, Y0, Y0
	VADDPD  expconst<>+384(SB), Y0, Y1
	VMULPD  Y1, Y0, Y0
	VADDPD  expconst<>+384(SB), Y0, Y1
	VMULPD  Y1, Y0, Y0
	VADDPD  expconst<>+384(SB), Y0, Y1
	VMULPD  Y1, Y0, Y0
	VADDPD  expconst<>+384(SB), Y0, Y1
	VFMADD213PD expconst<>+352(SB), Y1, Y0
	VPMOVSXDQ X4, Y5                        // 2^n: (n + 1023) << 52
	VPADDQ  expconst<>+416(SB), Y5, Y5
	VPSLLQ  $52, Y5, Y5
	VMULPD  Y5, Y0, Y0
	VMOVUPD Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	DECQ    CX
	JNZ     loop

done:
	VZEROUPPER
	RET
