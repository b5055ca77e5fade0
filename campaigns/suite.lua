-- suite.lua: everything: every case of every operator that exists, in both modes (default
-- configurations, then autotuned), under tilebench's own adaptive protocol (DESIGN.md: at least
-- 10 samples, stop under 0.5 % relative noise once enough GPU time has run, L2 evicted with
-- 2 x its size before every run, CUDA-graph replay, CUPTI kernel time). Hours on one GPU:
-- interrupt it any time (Ctrl-C, or even SIGKILL) and continue with `tilebench run --resume`;
-- spread it over nodes with --shard k/n.
return {
  name = "suite",
  description = "all operators, all cases, default and autotune modes, adaptive protocol",
  operators = "all",
  cases = "all",
  modes = { "default", "autotune" },
  protocol = { mode = "adaptive", max_noise = 0.005, graph = true, flush = true, clock = "cupti" },
  case_timeout = 120, -- autotuning times every candidate: give a case room
}
