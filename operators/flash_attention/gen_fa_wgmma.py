#!/usr/bin/env python3
"""Writes the wgmma wrappers of flash_attention_wgmma.cu (between the GENERATED markers), one
inline-asm function per (operand form, N), since wgmma names every accumulator register:
  fa_wgmma_ss_nN(d, da, db, acc): S = Q K^T, A and B from shared memory (both K-major), scale-d
    from acc (0: d = A B, the registers' old values ignored; 1: d += A B);
  fa_wgmma_rs_nN(d, a, db): O += P V, A (P, fp16) from four registers a thread, B (V) from shared
    memory N-major (the transpose bit), always accumulating.
usage: python3 gen_fa_wgmma.py flash_attention_wgmma.cu"""
import sys


def ss(n):
    nreg = n // 2
    regs = ", ".join("%%%d" % i for i in range(nreg))
    outs = ", ".join('"+f"(d[%d])' % i for i in range(nreg))
    return "\n".join([
        "__device__ __forceinline__ void fa_wgmma_ss_n%d(float *d, uint64_t da, uint64_t db, int acc) {" % n,
        "  asm volatile(",
        '      "{\\n.reg .pred p;\\nsetp.ne.b32 p, %%%d, 0;\\n"' % (nreg + 2),
        '      "wgmma.mma_async.sync.aligned.m64n%dk16.f32.f16.f16 {%s}, %%%d, %%%d, p, 1, 1, 0, 0;\\n}\\n"'
        % (n, regs, nreg, nreg + 1),
        "      : " + outs,
        '      : "l"(da), "l"(db), "r"(acc));',
        "}"])


def rs(n):
    nreg = n // 2
    regs = ", ".join("%%%d" % i for i in range(nreg))
    outs = ", ".join('"+f"(d[%d])' % i for i in range(nreg))
    a = ", ".join("%%%d" % (nreg + i) for i in range(4))
    return "\n".join([
        "__device__ __forceinline__ void fa_wgmma_rs_n%d(float *d, const uint32_t *a, uint64_t db) {" % n,
        "  asm volatile(",
        '      "{\\n.reg .pred p;\\nsetp.ne.b32 p, %%%d, 0;\\n"' % (nreg + 5),
        '      "wgmma.mma_async.sync.aligned.m64n%dk16.f32.f16.f16 {%s}, {%s}, %%%d, p, 1, 1, 1;\\n}\\n"'
        % (n, regs, a, nreg + 4),
        "      : " + outs,
        '      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));',
        "}"])


out = [ss(64), ss(128), rs(64), rs(128)]
gen = "\n".join(out) + "\n"
path = sys.argv[1]
src = open(path).read()
a = src.index("// BEGIN GENERATED")
b = src.index("// END GENERATED")
a = src.index("\n", a) + 1
open(path, "w").write(src[:a] + gen + src[b:])
