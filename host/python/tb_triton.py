"""tb_triton.py: tilebench's Triton compile driver. Compiles one @triton.jit function of an
operator's <name>_triton.py ahead of time for a given target (no GPU: triton.compile with a
GPUTarget) and describes the result so that tilebench's C host can load the cubin and launch it
with the driver API; no Python runs during a measurement.

Called through the embedded interpreter (tb_bridge.py's triton_compile, from
lua/tilebench/triton.lua), or by hand:  python3 tb_triton.py DESC.json  (prints the result).

desc = {"file": path, "kernel": function name, "signature": {arg: triton type} (runtime args),
        "constexprs": {arg: value}, "divisible": [args known to be multiples of 16],
        "num_warps": n, "num_stages": n, "arch": 90}
result = {"description": {...}, "cubin_hex": "..."} | {"error": "..."} | {"unsupported": "..."}

The description's "params" is the kernel's full parameter list in launch order: the runtime
arguments of the signature in the function's order, then the pointers triton appends
(global_scratch, profile_scratch in 3.6; each gets a buffer of grid * num_ctas * size bytes, or
NULL when its size is 0, as triton's own launcher does). It is checked against the PTX entry's
parameter list (count and width) before anything is returned.
"""
import importlib.util
import json
import os
import re
import sys

# No line info in the cubins: with it, ptxas writes the source file's absolute directory into
# the cubin's line table, so the same kernel compiled from two checkouts (the build machine's
# cache carried to the GPU machine, another worktree, triton's own disk cache, which is keyed by
# the source's text and not its path) gives different bytes with the same SASS. Without it a
# cubin depends only on the source, the options and the compiler. Set before triton reads its
# knobs; the variable is also part of triton's own cache key.
os.environ["TRITON_DISABLE_LINE_INFO"] = "1"

# triton type -> (tilebench launch kind, bytes). Pointers of any element type are "ptr".
SCALARS = {"i32": ("i32", 4), "u32": ("u32", 4), "i64": ("i64", 8), "u64": ("u64", 8),
           "fp32": ("f32", 4), "fp64": ("f64", 8)}
# the pointer arguments triton 3.x's NVIDIA backend appends to every kernel, in order
EXTRA = [("global_scratch", "global_scratch_size", "global_scratch_align"),
         ("profile_scratch", "profile_scratch_size", "profile_scratch_align")]
PTX_BYTES = {"u64": 8, "b64": 8, "s64": 8, "f64": 8, "u32": 4, "b32": 4, "s32": 4, "f32": 4,
             "u16": 2, "b16": 2, "s16": 2, "f16": 2, "u8": 1, "b8": 1, "s8": 1}

_modules = {}


def version():
    import triton
    return triton.__version__


def _load(path):
    if path not in _modules:
        spec = importlib.util.spec_from_file_location("tb_triton_%d" % len(_modules), path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        _modules[path] = mod
    return _modules[path]


def ptx_params(ptx, name):
    """[(ptx type, is pointer)] of the .entry `name` of a PTX text."""
    m = re.search(r"\.entry\s+" + re.escape(name) + r"\s*\((.*?)\)", ptx, re.S)
    if not m:
        raise ValueError("the PTX has no .entry %s" % name)
    out = []
    for line in m.group(1).split(","):
        p = re.match(r"\s*\.param\s+\.(\w+)(\s+\.ptr)?", line)
        if p:
            out.append((p.group(1), bool(p.group(2))))
    return out


def param_kind(ttype):
    if ttype.startswith("*"):
        return "ptr", 8
    if ttype not in SCALARS:
        raise ValueError("scalar type %s is not supported by tilebench's launcher (pointers and %s)"
                         % (ttype, " ".join(sorted(SCALARS))))
    return SCALARS[ttype]


def check_params(params, ptx):
    """The description's parameter list against the compiled entry's: same count, same widths,
    pointers where the description says ptr. Raises ValueError naming the first mismatch."""
    if len(params) != len(ptx):
        raise ValueError("the description lists %d parameters, the kernel's PTX entry %d"
                         % (len(params), len(ptx)))
    for i, (p, (ptype, is_ptr)) in enumerate(zip(params, ptx)):
        if PTX_BYTES.get(ptype) != p["bytes"] or (is_ptr and p["kind"] != "ptr"):
            raise ValueError("parameter %d (%s): the description says %s (%d bytes), the PTX .%s%s"
                             % (i, p["name"], p["kind"], p["bytes"], ptype, " .ptr" if is_ptr else ""))


def _build(desc):
    """(triton, the CompiledKernel, params, constexprs, divisible, target) or {"unsupported": why}."""
    try:
        import triton
        from triton.backends.compiler import GPUTarget
        from triton.compiler import ASTSource
    except Exception as e:  # noqa: BLE001 (any import failure means no triton here)
        return {"unsupported": "triton does not import: %s: %s" % (type(e).__name__, e)}
    mod = _load(desc["file"])
    fn = getattr(mod, desc["kernel"], None)
    if fn is None or not hasattr(fn, "arg_names"):
        raise ValueError("%s has no @triton.jit function %s" % (desc["file"], desc["kernel"]))
    # an empty Lua table reaches here as [] or {}
    sig_in, consts = desc.get("signature") or {}, desc.get("constexprs") or {}
    divisible = set(desc.get("divisible") or [])
    signature, attrs, params = {}, {}, []
    for i, a in enumerate(fn.arg_names):
        if a in consts:
            signature[a] = "constexpr"
        elif a in sig_in:
            t = sig_in[a]
            signature[a] = t
            kind, size = param_kind(t)
            params.append({"name": a, "type": t, "kind": kind, "bytes": size})
            if kind == "ptr" or a in divisible:
                attrs[(i,)] = [["tt.divisibility", 16]]
        else:
            raise ValueError("%s(%s): argument %s is given neither a type nor a constexpr value"
                             % (desc["kernel"], ", ".join(fn.arg_names), a))
    unknown = sorted((set(sig_in) | set(consts)) - set(fn.arg_names))
    if unknown:
        raise ValueError("%s has no argument(s) %s" % (desc["kernel"], ", ".join(unknown)))
    target = GPUTarget("cuda", int(desc.get("arch", 90)), 32)
    options = {"num_warps": int(desc["num_warps"]), "num_stages": int(desc["num_stages"])}
    ck = triton.compile(ASTSource(fn, signature, consts, attrs), target=target, options=options)
    return triton, ck, params, consts, divisible, target


def compile_kernel(desc):
    built = _build(desc)
    if isinstance(built, dict):
        return built
    triton, ck, params, consts, divisible, target = built
    md = ck.metadata
    for extra, size_field, align_field in EXTRA:
        params.append({"name": extra, "type": "*i8", "kind": "ptr", "bytes": 8, "scratch": extra,
                       "size": int(getattr(md, size_field)), "align": int(getattr(md, align_field))})
    check_params(params, ptx_params(ck.asm["ptx"], md.name))
    for flag in ("launch_cooperative_grid", "launch_pdl"):
        if getattr(md, flag, False):
            raise ValueError("%s: %s is set; tilebench's launcher does not do it" % (md.name, flag))
    if int(getattr(md, "num_ctas", 1)) != 1 or getattr(md, "tensordesc_meta", None):
        raise ValueError("%s: clusters (num_ctas > 1) and tensor descriptors are not launched by tilebench"
                         % md.name)
    description = {
        "format": 1, "file": desc["file"], "function": desc["kernel"], "name": md.name,
        "triton_version": triton.__version__, "target": {"backend": "cuda", "arch": target.arch, "warp_size": 32},
        "num_warps": md.num_warps, "num_stages": md.num_stages, "num_ctas": int(getattr(md, "num_ctas", 1)),
        "shared": md.shared, "block": 32 * md.num_warps, "constexprs": consts,
        "divisible": sorted(divisible), "params": params,
    }
    return {"description": description, "cubin_hex": ck.asm["cubin"].hex()}


def adopt_binary(ck, desc):
    """Makes the CompiledKernel ck (triton's rebuild of desc) launch the very cubin tilebench
    launched: desc["cubin_hex"], checked against desc["cubin_sha256"], with the rebuild's launch
    metadata held to tilebench's description (shared memory, warps), so triton's launcher packs
    the arguments, grid and block of the same binary. Returns whether triton's rebuild was
    byte-identical; raises ValueError when the binary or the metadata disagree. Until session 9
    the cubins carried line info, which holds the source's absolute directory: a cache entry
    built from another checkout (or served by triton's own disk cache, keyed by the source's text)
    differed in those bytes with the same SASS (the likely cause of the 79 launches counted on
    the H200 on 2026-12-02). Now a difference means another ptxas or other compiler settings."""
    import hashlib
    rebuilt = hashlib.sha256(ck.asm["cubin"]).hexdigest()
    if "cubin_hex" not in desc:  # no binary handed over: the rebuild itself must be it
        if rebuilt != desc["cubin_sha256"]:
            raise ValueError("triton built a different cubin (%s) from tilebench's (%s)" % (rebuilt, desc["cubin_sha256"]))
        return True
    binary = bytes.fromhex(desc["cubin_hex"])
    if hashlib.sha256(binary).hexdigest() != desc["cubin_sha256"]:
        raise ValueError("the cubin handed over is not the one tilebench launched (SHA-256 differs)")
    md = ck.metadata
    for field in ("shared", "num_warps"):
        if desc.get(field) is not None and int(getattr(md, field)) != int(desc[field]):
            raise ValueError("triton's rebuild has %s = %s, tilebench's description %s" % (field, getattr(md, field), desc[field]))
    if ck.module is not None:
        raise ValueError("the CompiledKernel was loaded already; its binary cannot be replaced")
    ck.kernel = binary  # what CompiledKernel._init_handles loads
    return rebuilt == desc["cubin_sha256"]


def launch_with_triton(desc, stream):
    """The GPU test's other half (tests/gpu/triton_launch.lua): the kernel compiled again by
    triton, made to carry tilebench's cubin (adopt_binary), and launched by triton's own launcher
    (CompiledKernel[grid], which needs torch for the device) on tilebench's stream, with
    tilebench's pointers and scalars in desc["args"] (by name; triton's launcher takes every
    argument in the function's order, constexprs too)."""
    built = _build(desc)
    if isinstance(built, dict):
        return built
    _triton, ck, _params, _consts, _div, _target = built
    try:
        identical = adopt_binary(ck, desc)
    except ValueError as e:
        return {"error": str(e)}
    fn = _load(desc["file"]).__dict__[desc["kernel"]]
    consts = desc.get("constexprs") or {}
    args = [consts[a] if a in consts else desc["args"][a] for a in fn.arg_names]
    grid = tuple(list(desc["grid"]) + [1, 1])[:3]
    ck[grid](*args, stream=int(stream))
    return {"ok": True, "rebuilt_identical": identical}


def main(argv):
    with open(argv[1]) as f:
        desc = json.load(f)
    print(json.dumps(compile_kernel(desc)))


if __name__ == "__main__":
    main(sys.argv)
