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
LANES4(448, $0x8000000000000000) // the sign bit
DATA expconst<>+480(SB)/4, $1
DATA expconst<>+484(SB)/4, $1
DATA expconst<>+488(SB)/4, $1
DATA expconst<>+492(SB)/4, $1
GLOBL expconst<>(SB), RODATA|NOPTR, $496

// EXP4(X, T, N, P) replaces the four float64 lanes of X by math.Exp of
// them, bit for bit (|X| ≤ 700): the instructions of math.Exp's FMA path
// (archExp's avxfma branch) in the same order. T and P are scratch
// registers, N an XMM register for the four exponents.
// (Step by step: T = x * LOG2E; N = round(T); T = float(N); x -= T * LN2U
// and x -= T * LN2L, fused; x /= 16; the degree-7 Taylor polynomial in T;
// four squarings as (x + 2) * x; 2^N as (N + 1023) << 52.)
#define EXP4(X, T, N, P) \
	VMULPD  expconst<>+0(SB), X, T; \
	VCVTPD2DQY T, N; \
	VCVTDQ2PD N, T; \
	VFNMADD231PD expconst<>+32(SB), T, X; \
	VFNMADD231PD expconst<>+64(SB), T, X; \
	VMULPD  expconst<>+96(SB), X, X; \
	VMOVUPD expconst<>+128(SB), T; \
	VFMADD213PD expconst<>+160(SB), X, T; \
	VFMADD213PD expconst<>+192(SB), X, T; \
	VFMADD213PD expconst<>+224(SB), X, T; \
	VFMADD213PD expconst<>+256(SB), X, T; \
	VFMADD213PD expconst<>+288(SB), X, T; \
	VFMADD213PD expconst<>+320(SB), X, T; \
	VFMADD213PD expconst<>+352(SB), X, T; \
	VMULPD  T, X, X; \
	VADDPD  expconst<>+384(SB), X, T; \
	VMULPD  T, X, X; \
	VADDPD  expconst<>+384(SB), X, T; \
	VMULPD  T, X, X; \
	VADDPD  expconst<>+384(SB), X, T; \
	VMULPD  T, X, X; \
	VADDPD  expconst<>+384(SB), X, T; \
	VFMADD213PD expconst<>+352(SB), T, X; \
	VPMOVSXDQ N, P; \
	VPADDQ  expconst<>+416(SB), P, P; \
	VPSLLQ  $52, P, P; \
	VMULPD  P, X, X

// func k3AVX2(kl, logp, ref *float32, mask *uint8, n int, ratioClamp, k3Clamp float64)
// For j < n (a multiple of 4): kl[j] = float32(k3) where mask[j] is 1, else
// +0, with d = clamp(float64(logp[j]) - float64(ref[j]), ratioClamp) and
// k3 = clamp(math.Exp(-d) + d - 1, k3Clamp): klK3's operations, in its
// order, four tokens at a time (clamp as VMINPD/VMAXPD with the value
// second, so that a NaN stays NaN as in clamp).
TEXT ·k3AVX2(SB), NOSPLIT, $0-56
	MOVQ kl+0(FP), DI
	MOVQ logp+8(FP), SI
	MOVQ ref+16(FP), DX
	MOVQ mask+24(FP), R8
	MOVQ n+32(FP), CX
	VBROADCASTSD ratioClamp+40(FP), Y10
	VBROADCASTSD k3Clamp+48(FP), Y12
	VXORPD  expconst<>+448(SB), Y10, Y11 // -ratioClamp
	VXORPD  expconst<>+448(SB), Y12, Y13 // -k3Clamp
	VMOVDQU expconst<>+480(SB), X14      // 1, 1, 1, 1 (int32)
	SHRQ $2, CX
	JZ   k3done

k3loop:
	VCVTPS2PD (SI), Y0
	VCVTPS2PD (DX), Y1
	VSUBPD  Y1, Y0, Y0                   // d = logp - ref
	VMINPD  Y0, Y10, Y0                  // min(c, d): d when d is NaN, as clamp
	VMAXPD  Y0, Y11, Y0                  // clamp(d, ratioClamp)
	VXORPD  expconst<>+448(SB), Y0, Y2   // -d
	EXP4(Y2, Y3, X4, Y5)
	VADDPD  Y0, Y2, Y2                   // exp(-d) + d
	VSUBPD  expconst<>+352(SB), Y2, Y2   // - 1
	VMINPD  Y2, Y12, Y2
	VMAXPD  Y2, Y13, Y2                  // clamp(k3, k3Clamp)
	VCVTPD2PSY Y2, X2
	VPMOVZXBD (R8), X3
	VPCMPEQD X14, X3, X3                 // mask == 1
	VPAND   X3, X2, X2
	VMOVDQU X2, (DI)
	ADDQ    $16, SI
	ADDQ    $16, DX
	ADDQ    $16, DI
	ADDQ    $4, R8
	DECQ    CX
	JNZ     k3loop

k3done:
	VZEROUPPER
	RET
