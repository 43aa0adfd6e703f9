#include "textflag.h"

// Constants of expf (see expf.go), broadcast to 8 lanes.
DATA expconst<>+0(SB)/4, $0x3fb8aa3b   // log2e 1.44269504
DATA expconst<>+4(SB)/4, $0x4b400000   // magic 1.5*2^23
DATA expconst<>+8(SB)/4, $0x3f318000   // c1 0.693359375
DATA expconst<>+12(SB)/4, $0xb95e8083  // c2 -2.12194440e-4
DATA expconst<>+16(SB)/4, $0x39506967  // p0 1.9875691500e-4
DATA expconst<>+20(SB)/4, $0x3ab743ce  // p1 1.3981999507e-3
DATA expconst<>+24(SB)/4, $0x3c088908  // p2 8.3334519073e-3
DATA expconst<>+28(SB)/4, $0x3d2aa9c1  // p3 4.1665795894e-2
DATA expconst<>+32(SB)/4, $0x3e2aaaaa  // p4 1.6666665459e-1
DATA expconst<>+36(SB)/4, $0x3f000000  // p5 5.0000001201e-1
DATA expconst<>+40(SB)/4, $0x3f800000  // 1
DATA expconst<>+44(SB)/4, $0xc2ac0000  // -86
GLOBL expconst<>(SB), RODATA|NOPTR, $48

// func expSumAVX2(w, x *float32, n int, max, invT float32) float64
// For i < n (a multiple of 8): w[i] = expf((x[i]-max)*invT); returns the sum
// of w[0:n] accumulated in float64. Same operations, in the same order and
// without fused multiply-adds, as the scalar expf.
TEXT ·expSumAVX2(SB), NOSPLIT, $0-40
	MOVQ w+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS max+24(FP), Y15
	VBROADCASTSS invT+28(FP), Y14
	VBROADCASTSS expconst<>+0(SB), Y13   // log2e
	VBROADCASTSS expconst<>+4(SB), Y12   // magic
	VBROADCASTSS expconst<>+8(SB), Y11   // c1
	VBROADCASTSS expconst<>+12(SB), Y10  // c2
	VBROADCASTSS expconst<>+44(SB), Y9   // -86
	VXORPD Y7, Y7, Y7                    // sum, low 4 lanes
	VXORPD Y8, Y8, Y8                    // sum, high 4 lanes

loop:
	CMPQ CX, $8
	JLT  done
	VMOVUPS (SI), Y0
	VSUBPS  Y15, Y0, Y0                  // x - max
	VMULPS  Y14, Y0, Y0                  // x = (x - max) * invT
	VMULPS  Y13, Y0, Y1
	VADDPS  Y12, Y1, Y1                  // t = x*log2e + magic
	VSUBPS  Y12, Y1, Y2                  // z = t - magic
	VPSUBD  Y12, Y1, Y1                  // n = bits(t) - bits(magic)
	VMULPS  Y11, Y2, Y3
	VSUBPS  Y3, Y0, Y3                   // r = x - z*c1
	VMULPS  Y10, Y2, Y4
	VSUBPS  Y4, Y3, Y3                   // r = r - z*c2
	VBROADCASTSS expconst<>+16(SB), Y4   // p = p0
	VMULPS  Y3, Y4, Y4
	VBROADCASTSS expconst<>+20(SB), Y5
	VADDPS  Y5, Y4, Y4                   // p = p*r + p1
	VMULPS  Y3, Y4, Y4
	VBROADCASTSS expconst<>+24(SB), Y5
	VADDPS  Y5, Y4, Y4                   // p = p*r + p2
	VMULPS  Y3, Y4, Y4
	VBROADCASTSS expconst<>+28(SB), Y5
	VADDPS  Y5, Y4, Y4                   // p = p*r + p3
	VMULPS  Y3, Y4, Y4
	VBROADCASTSS expconst<>+32(SB), Y5
	VADDPS  Y5, Y4, Y4                   // p = p*r + p4
	VMULPS  Y3, Y4, Y4
	VBROADCASTSS expconst<>+36(SB), Y5
	VADDPS  Y5, Y4, Y4                   // p = p*r + p5
	VMULPS  Y3, Y4, Y4                   // p*r
	VMULPS  Y3, Y4, Y4                   // p*r*r
	VADDPS  Y3, Y4, Y4                   // + r
	VBROADCASTSS expconst<>+40(SB), Y5
	VADDPS  Y5, Y4, Y4                   // y = ... + 1
	VPSLLD  $23, Y1, Y1
	VPADDD  Y1, Y4, Y4                   // y * 2^n
	VCMPPS  $1, Y9, Y0, Y6               // x < -86
	VANDNPS Y4, Y6, Y4                   // -> 0
	VMOVUPS Y4, (DI)
	VCVTPS2PD X4, Y5
	VADDPD  Y5, Y7, Y7
	VEXTRACTF128 $1, Y4, X4
	VCVTPS2PD X4, Y5
	VADDPD  Y5, Y8, Y8
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  loop

done:
	VADDPD Y8, Y7, Y7
	VEXTRACTF128 $1, Y7, X8
	VADDPD X8, X7, X7
	VHADDPD X7, X7, X7
	VZEROUPPER
	MOVSD X7, ret+32(FP)
	RET

// func maxAVX2(x *float32, n int) float32
// The largest of x[0:n] (n a multiple of 8, at least 8).
TEXT ·maxAVX2(SB), NOSPLIT, $0-20
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VMOVUPS (SI), Y0
	ADDQ $32, SI
	SUBQ $8, CX

mloop:
	CMPQ CX, $8
	JLT  mdone
	VMOVUPS (SI), Y1
	VMAXPS  Y1, Y0, Y0
	ADDQ $32, SI
	SUBQ $8, CX
	JMP  mloop

mdone:
	VEXTRACTF128 $1, Y0, X1
	VMAXPS X1, X0, X0
	VPERMILPS $0x4e, X0, X1
	VMAXPS X1, X0, X0
	VPERMILPS $0xb1, X0, X1
	VMAXPS X1, X0, X0
	VZEROUPPER
	MOVSS X0, ret+16(FP)
	RET
