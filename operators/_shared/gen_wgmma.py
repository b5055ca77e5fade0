#!/usr/bin/env python3
"""Writes the wgmma wrappers of gemm_wgmma.cu (between the GENERATED markers): one inline-asm
function per (input type, N), since wgmma names every accumulator register in its operand list.
usage: python3 gen_wgmma.py gemm_wgmma.cu"""
import sys

TYPES = {  # name: (ptx types, k, has transpose operands)
    "f16": ("f16.f16", 16, True),
    "bf16": ("bf16.bf16", 16, True),
    "tf32": ("tf32.tf32", 8, False),
    "e4m3": ("e4m3.e4m3", 32, False),
    "s8": ("s8.s8", 32, False),  # int32 accumulators; integer wgmma has no scale-a/b operands
}

def wrapper(name, n):
    ptx, k, tnsp = TYPES[name]
    nreg = n // 2
    regs = ", ".join("%%%d" % i for i in range(nreg))
    integer = name == "s8"
    if tnsp:
        ops = "{%s}, %%%d, %%%d, p, 1, 1, 0, TRANS_B;" % (regs, nreg, nreg + 1)
    elif integer:
        ops = "{%s}, %%%d, %%%d, p;" % (regs, nreg, nreg + 1)
    else:
        ops = "{%s}, %%%d, %%%d, p, 1, 1;" % (regs, nreg, nreg + 1)
    outs = ", ".join('"+%s"(d[%d])' % ("r" if integer else "f", i) for i in range(nreg))
    lines = []
    lines.append("__device__ __forceinline__ void wgmma_%s_n%d(%s *d, uint64_t da, uint64_t db) {"
                 % (name, n, "int" if integer else "float"))
    lines.append("  asm volatile(")
    lines.append('      "{\\n.reg .pred p;\\nsetp.ne.b32 p, %%%d, 0;\\n"' % (nreg + 2))
    body = "wgmma.mma_async.sync.aligned.m64n%dk%d.%s.%s %s" % (n, k, "s32" if integer else "f32", ptx, ops)
    if tnsp:
        body = body.replace("TRANS_B", '" WGMMA_TRANS_B "')
    lines.append('      "%s\\n}\\n"' % body)
    lines.append("      : " + outs)
    lines.append('      : "l"(da), "l"(db), "r"(1));')
    lines.append("}")
    return "\n".join(lines)

out = []
for name in TYPES:
    for n in (64, 128, 256):
        out.append(wrapper(name, n))
gen = "\n".join(out) + "\n"
path = sys.argv[1]
src = open(path).read()
a = src.index("// BEGIN GENERATED")
b = src.index("// END GENERATED")
a = src.index("\n", a) + 1
open(path, "w").write(src[:a] + gen + src[b:])
