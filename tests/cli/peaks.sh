#!/bin/bash
# `tilebench peaks` usage errors and help, without a GPU: a missing or malformed --gpu label
# exits 2 with a message; --help lists the options.
set -u
fail() { echo "FAIL: $*"; exit 1; }
out=$("$TILEBENCH" peaks 2>&1); rc=$?
[ $rc -eq 2 ] || fail "no --gpu: exit $rc, want 2 ($out)"
grep -q -- "--gpu LABEL is required" <<<"$out" || fail "no --gpu: message was: $out"
out=$("$TILEBENCH" peaks --gpu 'a/b' 2>&1); rc=$?
[ $rc -eq 2 ] || fail "bad label: exit $rc, want 2"
grep -q "one path component" <<<"$out" || fail "bad label: message was: $out"
out=$("$TILEBENCH" peaks --gpu H200 --bogus 2>&1); rc=$?
[ $rc -eq 2 ] || fail "unknown option: exit $rc, want 2"
out=$("$TILEBENCH" peaks --help 2>&1); rc=$?
[ $rc -eq 0 ] || fail "--help: exit $rc"
for w in --gpu --quick --out; do grep -q -- "$w" <<<"$out" || fail "--help lacks $w"; done
echo "peaks CLI: ok"
