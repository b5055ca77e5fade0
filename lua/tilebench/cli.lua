-- cli.lua: bring-up placeholder (replaced by the real CLI).
local M = {}
function M.main(argv) io.write("tilebench ", TILEBENCH_VERSION, "\n") return 0 end
return M
