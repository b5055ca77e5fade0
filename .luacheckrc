-- luacheck (Debian's lua-check; tests/cli/luacheck.sh, run by CI): the checks that find real
-- faults in code CI cannot run (the GPU tests, tests/gpu, execute only on a GPU machine): a local
-- that shadows another (a family's `C` hid its common module: 18 failures on the H200, session 11)
-- and a global read or written by mistake. Style warnings are left to the review.
std = "lua54"
only = { "113", "111", "421", "431" }
max_line_length = false
-- set by the C host before any Lua runs (host/tb_lua.c)
read_globals = { "TILEBENCH_HOME", "TILEBENCH_VERSION", "TILEBENCH_GIT_SHA", "TILEBENCH_GIT_DIRTY" }
files["tests/lua"] = { std = "+busted" }
files["tests/gpu"] = { globals = { "arg" } }
files["lua/tilebench/cmd/script.lua"] = { globals = { "arg" } }
