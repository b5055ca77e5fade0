# prologue.sh: the start every shell GPU test shares, sourced after `set -u`: TB (the binary
# cmake passes as $TILEBENCH), the skip (exit 77) where no GPU or driver answers, a scratch
# folder $work removed on exit, results written there and not to results/, and the operators of
# the tree only (no TILEBENCH_OPERATOR_PATH from the caller); tb_or_fail and ROWS_LUA (below) for
# the run a test checks and the Lua of its checks.
TB=${TILEBENCH:?}
"$TB" devices >/dev/null 2>&1 || { echo "no GPU/driver: skipped"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
unset TILEBENCH_OPERATOR_PATH
export TILEBENCH_RESULTS_DIR="$work"
# tb_or_fail NAME ARGS...: runs "$TB" ARGS..., its output kept in $work/NAME.txt and printed; a
# failing command fails the test (exit 1) with its status.
tb_or_fail() {
  local name=$1; shift
  "$TB" "$@" >"$work/$name.txt" 2>&1
  local rc=$?
  cat "$work/$name.txt"
  [ "$rc" -eq 0 ] || { echo "FAIL $name: tilebench $1 exited $rc"; exit 1; }
}
# The Lua checks' shared pieces (check, rows, exit): `local t = dofile(arg[N])` with this path.
ROWS_LUA=$(dirname "${BASH_SOURCE[0]}")/rows.lua
