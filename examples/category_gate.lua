-- Shows a campaign over one category with a performance gate: every Reduction/Norm operator, slow cases flagged, exit 3 if any.
-- usage: tilebench run examples/category_gate.lua [--gpu LABEL]   (needs a GPU)
-- A verified case is `slow` when its roofline fraction rho is under 0.5 or, where a library
-- baseline exists, its library efficiency E_lib = t_lib / t_impl is under 0.8. With gate_exit
-- the run exits 3 when any case is slow, wrong, failed or timed out, so CI can gate on it.
-- Afterwards: tilebench aggregate --gpu LABEL lists the slow cases with their reasons.
return {
  name = "category-gate",
  description = "Reduction/Norm operators gated on rho >= 0.5 and E_lib >= 0.8",
  operators = {"Reduction/Norm"},      -- a category name selects all its operators
  cases = "ends",
  modes = {"default"},
  protocol = {mode = "fixed", warmup = 10, ["repeat"] = 50, graph = true, flush = true},
  gate = {rho = 0.5, elib = 0.8},
  gate_exit = true,
}
