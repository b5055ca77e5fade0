#!/usr/bin/env bash
# luacheck over every Lua file of the project (.luacheckrc says which checks and why): shadowed
# locals and stray globals. The GPU tests' Lua (tests/gpu) runs only on a GPU machine, so for it
# this is the only check CI makes. Skips (77) without luacheck, except where TB_REQUIRE_LUACHECK
# is set (CI installs Debian's lua-check).
set -u
cd "${TILEBENCH_HOME:?}"
if ! command -v luacheck >/dev/null; then
  [ -n "${TB_REQUIRE_LUACHECK:-}" ] && { echo "luacheck is required here (TB_REQUIRE_LUACHECK) and missing"; exit 1; }
  echo "no luacheck: skipped"; exit 77
fi
luacheck --no-color -q lua tests operators campaigns bench examples
