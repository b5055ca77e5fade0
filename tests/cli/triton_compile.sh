#!/usr/bin/env bash
# triton_compile.sh: `tilebench compile --impl triton` (no GPU) puts a cubin and a description,
# each with its .sum, in the kernel cache for every default configuration, in parallel processes;
# a second compile reads them all back from the cache; a damaged description is a miss that is
# compiled again and replaced (the warning goes to the compile child's stderr). Skips (77) without triton, except where
# TB_REQUIRE_TRITON is set (CI).
set -u
: "${TILEBENCH:?}"
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '%s\n' 'local ok, v = require("tilebench.triton").available()' 'print(ok and "ok" or v)' > "$tmp/probe.lua"
probe=$("$TILEBENCH" script "$tmp/probe.lua" 2>"$tmp/probe.err")
if [ "$probe" != ok ]; then
  echo "triton unavailable: $probe"
  [ -n "${TB_REQUIRE_TRITON:-}" ] && exit 1
  exit 77
fi
export TILEBENCH_CACHE_DIR="$tmp/cache"
out=$("$TILEBENCH" compile --operator mul2,softmax --impl triton --cases first --jobs 2 2>&1) || fail "compile: $out"
echo "$out" | tail -1
grep -q "; 0 failed" <<<"$out" || fail "failures: $out"
n_cubin=$(ls "$tmp/cache"/*.cubin 2>/dev/null | wc -l)
n_json=$(ls "$tmp/cache"/*.json 2>/dev/null | wc -l)
# mul2: 4 dtypes, softmax: 2; each also has an NVRTC reference cubin (no .json)
[ "$n_json" -eq 6 ] || fail "$n_json descriptions, want 6"
[ "$n_cubin" -ge 12 ] || fail "$n_cubin cubins, want the 6 triton ones and 6 references"
for j in "$tmp/cache"/*.json; do
  [ -f "$j.sum" ] && [ -f "${j%.json}.cubin" ] && [ -f "${j%.json}.cubin.sum" ] || fail "incomplete entry $j"
  grep -q '"global_scratch"' "$j" || fail "$j lists no scratch parameter"
done
out=$("$TILEBENCH" compile --operator mul2,softmax --impl triton --cases first --jobs 2 2>&1) || fail "second compile: $out"
grep -q "0 compiled, 12 cached" <<<"$out" || fail "second compile was not all cache hits: $out"
victim=$(ls "$tmp/cache"/*.json | head -1)
printf '{"name": "damaged"' > "$victim"
out=$("$TILEBENCH" compile --operator mul2,softmax --impl triton --cases first --jobs 1 2>&1) || fail "third compile: $out"
grep -q "1 compiled, 11 cached" <<<"$out" || fail "the damaged entry was not compiled again: $out"
grep -q '"params"' "$victim" || fail "the damaged description was not replaced"

# the driver's own check of a description against the PTX entry: count, widths, pointers
python3 - "${TILEBENCH_HOME:?}/host/python" <<'PY' || fail "tb_triton.check_params"
import sys
sys.path.insert(0, sys.argv[1])
import tb_triton as t
ptx = """.visible .entry k(
	.param .u64 .ptr .global .align 1 k_param_0,
	.param .u32 k_param_1,
	.param .u64 .ptr .global .align 1 k_param_2,
	.param .u64 .ptr .global .align 1 k_param_3
)"""
entry = t.ptx_params(ptx, "k")
assert entry == [("u64", True), ("u32", False), ("u64", True), ("u64", True)], entry
ok = [{"name": "x", "kind": "ptr", "bytes": 8}, {"name": "n", "kind": "i32", "bytes": 4},
      {"name": "global_scratch", "kind": "ptr", "bytes": 8}, {"name": "profile_scratch", "kind": "ptr", "bytes": 8}]
t.check_params(ok, entry)
for bad, why in [(ok[:3], "lists 3 parameters"),
                 ([ok[0], {"name": "n", "kind": "i64", "bytes": 8}] + ok[2:], "parameter 1 (n)"),
                 ([{"name": "x", "kind": "u64", "bytes": 8}] + ok[1:], "parameter 0 (x)")]:
    try:
        t.check_params(bad, entry)
    except ValueError as e:
        assert why in str(e), (why, str(e))
    else:
        raise AssertionError("accepted: %s" % why)
for ty in ("i1", "fp16", "bf16", "i8"):
    try:
        t.param_kind(ty)
    except ValueError as e:
        assert "not supported" in str(e)
    else:
        raise AssertionError("packed %s" % ty)
print("check_params ok")
PY
echo ok
