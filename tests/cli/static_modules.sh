#!/usr/bin/env bash
# static_modules.sh: the binary carries every C module its Lua library requires (lfs, cjson,
# cjson.safe, tb.*). With the system's C module path pointed at nothing, each still loads. A module
# the build machine happens to have installed would otherwise pass here and fail on a GPU machine
# without it (cjson.safe did: `tilebench compare` of raw results and `report` broke there).
set -u
: "${TILEBENCH:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/mods.lua" <<'LUA'
local lfs = require("lfs")
local names, seen = {}, {}
local function scan(dir)
  for f in lfs.dir(dir) do
    local p = dir .. "/" .. f
    if f ~= "." and f ~= ".." then
      if lfs.attributes(p, "mode") == "directory" then
        scan(p)
      elseif f:match("%.lua$") then
        local text = assert(io.open(p)):read("a")
        for name in text:gmatch("require%s*%(?%s*[\"']([%w_.]+)[\"']") do
          if not name:match("^tilebench") and not seen[name] then
            seen[name] = true
            names[#names + 1] = name
          end
        end
      end
    end
  end
end
scan(TILEBENCH_HOME .. "/lua")
table.sort(names)
local bad = 0
for _, name in ipairs(names) do
  local ok, err = pcall(require, name)
  if not ok then
    io.stderr:write("FAIL: ", name, ": ", (tostring(err):gsub("\n.*", "")), "\n")
    bad = bad + 1
  end
end
print(#names .. " modules required by lua/: " .. table.concat(names, " "))
os.exit(bad == 0 and 0 or 1)
LUA
LUA_CPATH_5_4="$tmp/none/?.so" LUA_CPATH="$tmp/none/?.so" "$TILEBENCH" script "$tmp/mods.lua"
