-- Runs busted inside tilebench's own Lua 5.4, so specs can require the tb.* C modules.
-- Used by ctest as: tilebench script tests/lua/busted_runner.lua [busted options] SPEC
require('busted.runner')({ standalone = false })
