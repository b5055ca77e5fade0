# prologue.sh: the start every shell GPU test shares, sourced after `set -u`: TB (the binary
# cmake passes as $TILEBENCH), the skip (exit 77) where no GPU or driver answers, a scratch
# folder $work removed on exit, results written there and not to results/, and the operators of
# the tree only (no TILEBENCH_OPERATOR_PATH from the caller).
TB=${TILEBENCH:?}
"$TB" devices >/dev/null 2>&1 || { echo "no GPU/driver: skipped"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
unset TILEBENCH_OPERATOR_PATH
export TILEBENCH_RESULTS_DIR="$work"
