-- smoke.lua: the README's `make run` job. The largest case of every dtype of every operator
-- that exists, all implementations, default configurations, a short fixed protocol: proves
-- the whole path (compile, verify, time, results) on a GPU in under two minutes on an H200.
-- Not for numbers you quote: use suite.lua or tilebench-protocol.lua for those.
return {
  name = "smoke",
  description = "largest case per dtype of every operator, short protocol",
  operators = "all",
  cases = "last",
  modes = { "default" },
  protocol = { mode = "fixed", warmup = 3, ["repeat"] = 10, graph = true, flush = true },
  case_timeout = 60,
}
