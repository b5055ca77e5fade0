-- search.lua: the autotune search over an implementation's valid candidates, with no GPU in it
-- (the runner hands it the measurements as functions, the specs hand it synthetic ones).
--
-- "halving" (the default) is successive halving: every candidate is screened with a short fixed
-- measurement (a few samples, no adaptive stopping); the best 1/eta survive to a screen with eta
-- times the samples, and so on until `finalists` remain or the screening budget (samples summed
-- over every screen) would be exceeded. Seeds (the winner of a neighbouring case, or of an
-- earlier run) are screened first and are always finalists (taking a finalist's place:
-- `finalists` in all, at least one not a seed). The finalists are ranked by a screen of at least
-- final_samples each (the last round's, or a final rung), and only the best full_n (1) of them
-- get the full protocol, the next taking the place of one that fails: on the H200 a
-- full-protocol measurement of a power-capped GEMM takes 1.5-5 s (the clock-settle rule), three
-- per case made the search's cost (docs/PERFORMANCE.md, session 8). "exhaustive" gives every
-- candidate the full protocol: the reference the halving search is measured against
-- (bench/autotune/agreement.sh).
local M = {}

M.MODES = { "halving", "exhaustive" }
M.DEFAULTS = { finalists = 3, full_n = 1, eta = 3, screen_samples = 5, final_samples = 45, budget = 3000 }

-- The samples a halving search of n candidates (no seeds) screens at most: the first screen plus
-- the rounds that follow, each eta times the samples on 1/eta of the candidates, under the
-- budget; then the final rung where the last round's screens were shorter than final_samples.
function M.planned_samples(n, o)
  local d = {}
  for k, v in pairs(M.DEFAULTS) do d[k] = (o or {})[k] or v end
  o = d
  if n <= o.finalists then return 0 end -- every candidate is a finalist: no screen
  local total, alive, s = 0, n, math.max(1, math.min(o.screen_samples, o.budget // math.max(1, n)))
  local last_s = s
  while alive > 0 do
    if total > 0 and total + alive * s > o.budget then break end
    total, last_s = total + alive * s, s
    if math.ceil(alive / o.eta) <= o.finalists then break end
    alive, s = math.ceil(alive / o.eta), s * o.eta
  end
  local finals = math.min(o.finalists, alive)
  if o.full_n < finals and last_s < o.final_samples then total = total + finals * o.final_samples end
  return total
end

local function by_ms(a, b)
  if a.ms ~= b.ms then return a.ms < b.ms end
  return a.order < b.order -- ties: the candidate's own order (seeds first)
end

-- cands: list of {key = config string, cfg = config} (the valid ones, in space order).
-- opts: mode ("halving"|"exhaustive"), seeds (list of keys), finalists, full_n, eta,
-- screen_samples, final_samples, budget, and the measurements:
--   screen(cand, samples) -> ms | nil, err       a short fixed measurement of `samples` samples
--   full(cand)            -> ms | nil, err       the full protocol
-- err = {status =, reason =, fatal = bool}: a fatal error (the GPU context is lost) ends the
-- search at once. Returns a record:
--   {mode, best = cand | nil, ms, entries = {key -> entry}, order = {keys in trial order},
--    screened = n, finalists = {keys}, budget = samples allowed, spent = samples screened
--    (with the final rung's), rounds = n, final_rung = samples | nil, fatal = err | nil}
-- where each entry is {config, status ("ok" or the error's), reason, screen_ms, screen_samples,
-- ms (full protocol), finalist = true | nil, full = true | nil (given the full protocol), seed =
-- true | nil}.
function M.run(cands, opts)
  opts = opts or {}
  local o = {}
  for k, v in pairs(M.DEFAULTS) do o[k] = opts[k] or v end
  local mode = opts.mode or "halving"
  if o.full_n < 1 then o.full_n = 1 end
  local rec = { mode = mode, entries = {}, order = {}, screened = 0, finalists = {}, spent = 0,
                rounds = 0, budget = mode == "halving" and o.budget or nil }
  -- Trial order: the seeds that are candidates first (in the seeds' order), then the rest.
  local list, seen, seeded = {}, {}, {}
  for _, k in ipairs(opts.seeds or {}) do seeded[k] = true end
  for _, k in ipairs(opts.seeds or {}) do
    for _, c in ipairs(cands) do
      if c.key == k and not seen[k] then seen[k] = true; list[#list + 1] = c end
    end
  end
  for _, c in ipairs(cands) do
    if not seen[c.key] then seen[c.key] = true; list[#list + 1] = c end
  end
  local alive = {}
  for i, c in ipairs(list) do
    local e = { config = c.key, seed = seeded[c.key] or nil }
    rec.entries[c.key] = e
    rec.order[i] = c.key
    alive[#alive + 1] = { cand = c, entry = e, order = i }
  end

  local function fail(e, err)
    e.status, e.reason = err and err.status or "failed", err and err.reason or "no time"
    if err and err.fatal then rec.fatal = err end
  end

  local finals, all_full
  if mode == "exhaustive" or #alive <= o.finalists then
    -- exhaustive, or no more candidates than finalists: nothing to screen out, all timed fully
    finals, all_full = alive, true
  else
    -- The first screen fits the budget too (down to one sample a candidate).
    local samples = math.max(1, math.min(o.screen_samples, o.budget // math.max(1, #alive)))
    while #alive > 0 do
      if rec.rounds > 0 and rec.spent + #alive * samples > o.budget then break end
      rec.rounds = rec.rounds + 1
      local kept = {}
      for _, a in ipairs(alive) do
        local ms, err = opts.screen(a.cand, samples)
        rec.spent = rec.spent + samples
        if ms then
          a.ms, a.entry.screen_ms, a.entry.screen_samples = ms, ms, samples
          kept[#kept + 1] = a
        else
          fail(a.entry, err)
          if rec.fatal then return rec end
        end
      end
      if rec.rounds == 1 then rec.screened = #alive end
      table.sort(kept, by_ms)
      alive = kept
      -- a round that would keep no more than the finalists is the full protocol's job
      if math.ceil(#alive / o.eta) <= o.finalists then break end
      local keep = math.ceil(#alive / o.eta)
      local survivors, n = {}, 0
      for _, a in ipairs(alive) do
        if n < keep or a.entry.seed then survivors[#survivors + 1] = a; n = n + 1 end
      end
      alive = survivors
      samples = samples * o.eta
    end
    -- The finalists: every seed still in, and the best others up to `finalists` in all (at
    -- least one that is not a seed), so a seed costs no extra full measurement when it is
    -- among the best anyway.
    finals = {}
    local seeds = 0
    for _, a in ipairs(alive) do if a.entry.seed then seeds = seeds + 1 end end
    local slots = math.max(1, o.finalists - seeds)
    for _, a in ipairs(alive) do
      if a.entry.seed then finals[#finals + 1] = a
      elseif slots > 0 then finals[#finals + 1] = a; slots = slots - 1 end
    end
    -- The final rung: the full protocol goes to the best full_n finalists by a screen of at
    -- least final_samples each (the last round's, where every finalist had one that long; a
    -- screen of that length otherwise, outside the budget).
    if o.full_n < #finals then
      local need = false
      for _, a in ipairs(finals) do
        if (a.entry.screen_samples or 0) < o.final_samples then need = true end
      end
      if need then
        rec.final_rung = o.final_samples
        local kept = {}
        for _, a in ipairs(finals) do
          local ms, err = opts.screen(a.cand, o.final_samples)
          rec.spent = rec.spent + o.final_samples
          if ms then
            a.ms, a.entry.screen_ms, a.entry.screen_samples = ms, ms, o.final_samples
            kept[#kept + 1] = a
          else
            fail(a.entry, err)
            if rec.fatal then return rec end
          end
        end
        finals = kept
      end
      table.sort(finals, by_ms)
    end
  end

  -- The full protocol: every finalist (exhaustive, or no more candidates than finalists), else the
  -- best full_n by their last screen, the next one taking the place of one that fails.
  local want = all_full and #finals or o.full_n
  local got = 0
  for _, a in ipairs(finals) do
    rec.finalists[#rec.finalists + 1] = a.cand.key
    a.entry.finalist = true
  end
  for _, a in ipairs(finals) do
    if got >= want then break end
    local ms, err = opts.full(a.cand)
    a.entry.full = true
    if ms then
      got = got + 1
      a.entry.status, a.entry.ms = "ok", ms
      if not rec.best or ms < rec.ms then rec.best, rec.ms = a.cand, ms end
    else
      fail(a.entry, err)
      if rec.fatal then return rec end
    end
  end
  if mode == "exhaustive" then rec.screened = #finals end -- (halving with no screen: 0 screened)
  -- Screened but not a finalist: ok at the screen, left out of the full protocol.
  for _, e in pairs(rec.entries) do
    if not e.status and e.screen_ms then e.status = "screened" end
  end
  return rec
end

-- The record in the short form a row carries (row.search; raw results and, through
-- search_summary, the CSV).
function M.summary(rec)
  return { mode = rec.mode, screened = rec.screened, finalists = rec.finalists, budget = rec.budget,
           spent = rec.spent, rounds = rec.rounds, final_rung = rec.final_rung, seconds = rec.seconds }
end

return M
