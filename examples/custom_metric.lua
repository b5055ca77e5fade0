-- Shows a custom metric registered from a campaign: achieved TFLOP/s and the interquartile spread of each timed case.
-- usage: tilebench run examples/custom_metric.lua [--gpu LABEL]   (needs a GPU)
-- Each metric is a function of a result row (ms, flops, bytes, stats = {median, q1, q3, noise,
-- min, ...}, status, dtype, params...) returning a number or nil (nil: not applicable). Values
-- land in the row's `extra` table, in the run's journal and raw/<op>.json; an error in a metric
-- becomes extra.<name>_error for that row instead of stopping the campaign.
return {
  name = "custom-metric",
  description = "two vector operators with achieved TFLOP/s and the interquartile spread per case",
  operators = {"vector_add", "softmax"},
  cases = "ends",                      -- first and last case of each dtype
  modes = {"default"},
  protocol = {mode = "adaptive", max_noise = 0.005},
  metrics = {
    -- essential work over time: the compute-side counterpart of GB/s
    achieved_tflops = function(row)
      if not (row.ms and row.flops) then return nil end
      return row.flops / (row.ms * 1e-3) / 1e12
    end,
    -- (q3 - q1) / median: how wide the middle half of the samples is, relative to the median
    iqr_spread = function(row)
      local s = row.stats
      if not (s and s.q1 and s.q3 and s.median and s.median > 0) then return nil end
      return (s.q3 - s.q1) / s.median
    end,
  },
}
