#!/usr/bin/env python3
"""cubin_text_diff.py: compares the machine code of two NVRTC caches kernel by kernel, without
cuobjdump: for each compile identity (FILE|DEFINES|OPTIONS) that scripts/record_compiles.lua
logged for both trees, the bytes of every .text.<kernel> section (the SASS) and of its
.nv.info.<kernel> (registers, barriers, parameters), .nv.shared.<kernel> and .nv.constant0.<kernel>
sections. Prints each identity that differs and a summary; exit status 1 if any differs.
usage: cubin_text_diff.py BASE.log NEW.log BASE_CACHE_DIR NEW_CACHE_DIR"""
import struct
import sys

COMPARED = ('.text.', '.nv.info.', '.nv.shared.', '.nv.constant0.', '.nv.local.')


def sections(path):
    data = open(path, 'rb').read()
    if data[:4] != b'\x7fELF' or data[4] != 2:
        raise SystemExit(f'{path}: not a 64-bit ELF cubin')
    shoff, = struct.unpack_from('<Q', data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from('<HHH', data, 0x3A)
    heads = [struct.unpack_from('<IIQQQQIIQQ', data, shoff + i * shentsize) for i in range(shnum)]
    strtab = heads[shstrndx][4]
    out = {}
    for name, kind, _flags, _addr, offset, size, *_ in heads:
        label = data[strtab + name:data.index(b'\0', strtab + name)].decode()
        out[label] = b'<nobits %d>' % size if kind == 8 else data[offset:offset + size]
    return out


def load(log):
    keys = {}
    for line in open(log):
        ident, key = line.rstrip('\n').split('\t')
        keys[ident] = key
    return keys


def main():
    if len(sys.argv) != 5:
        raise SystemExit(__doc__)
    base, new = load(sys.argv[1]), load(sys.argv[2])
    same = differ = texts = 0
    missing = [i for i in base if i not in new]
    for ident in sorted(i for i in base if i in new):
        a = sections(f'{sys.argv[3]}/{base[ident]}.cubin')
        b = sections(f'{sys.argv[4]}/{new[ident]}.cubin')
        names = sorted(k for k in set(a) | set(b) if k.startswith(COMPARED))
        texts += sum(1 for k in names if k.startswith('.text.'))
        bad = [k for k in names if a.get(k) != b.get(k)]
        if bad:
            differ += 1
            print('DIFF', ident, ' '.join(bad))
        else:
            same += 1
    for ident in missing:
        print('MISSING in new:', ident)
    print(f'{len(base)} compiles in base, {len(new)} in new: {same} identical, {differ} differ, '
          f'{len(missing)} missing; {texts} .text sections compared')
    return 1 if differ or missing else 0


if __name__ == '__main__':
    sys.exit(main())
