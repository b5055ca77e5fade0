-- tilebench.journal: durable append, reading back after a kill, the JSON codec.
local journal = require("tilebench.journal")

local function tmpfile()
  local p = os.tmpname()
  os.remove(p)
  return p
end

describe("journal", function()
  it("round-trips rows with integers, NaN and infinities", function()
    local s = journal.encode({ n = 1048576, ms = 0.125, bad = 0 / 0, inf = math.huge, list = { 1, 2 } })
    local v = journal.decode(s)
    assert.equal(1048576, v.n)
    assert.equal("integer", math.type(v.n))
    assert.equal(0.125, v.ms)
    assert.equal("NaN", v.bad)
    assert.equal("Infinity", v.inf)
    assert.same({ 1, 2 }, v.list)
  end)

  it("refuses tables that contain themselves", function()
    local t = {}
    t.self = t
    assert.has_error(function() journal.encode(t) end)
  end)

  it("appends, reads back, skips a line cut by a kill", function()
    local path = tmpfile()
    local j = journal.open(path, { run_id = "r1" })
    j:append({ { operator = "a", mode = "default", dtype = "fp16", case_index = 1, impl = "cuda", status = "ok" } })
    j:append({ { operator = "a", mode = "default", dtype = "fp16", case_index = 2, impl = "cuda", status = "wrong" } })
    j:close()
    local fh = assert(io.open(path, "ab"))
    fh:write('{"operator":"a","mode":"def') -- what SIGKILL mid-write leaves
    fh:close()
    local header, rows, problems = journal.read(path)
    assert.equal("r1", header.run_id)
    assert.equal(2, #rows)
    assert.equal("wrong", rows[2].status)
    assert.equal(1, #problems)
    assert.matches(":4: unreadable line skipped", problems[1])
    -- reopening does not write a second header
    journal.open(path, { run_id = "r2" }):close()
    header = journal.read(path)
    assert.equal("r1", header.run_id)
    os.remove(path)
  end)

  it("starts on a fresh line after a journal cut mid-entry, so only the cut entry is lost", function()
    local path = tmpfile()
    local row = function(i) return { operator = "a", mode = "default", dtype = "fp16", case_index = i, impl = "cuda", status = "ok" } end
    local j = journal.open(path, { run_id = "r1" })
    j:append({ row(1) })
    j:close()
    -- any prefix of an entry without its newline: what a full disk or a kill leaves
    local whole = journal.encode(row(2))
    for _, cut in ipairs({ 1, #whole // 2, #whole }) do
      local fh = assert(io.open(path, "ab"))
      fh:write(whole:sub(1, cut))
      fh:close()
      j = journal.open(path, { run_id = "ignored" })
      j:append({ row(3 + cut) })
      j:close()
    end
    local header, rows, problems = journal.read(path)
    assert.equal("r1", header.run_id)
    local keys = {}
    for _, r in ipairs(rows) do keys[journal.key(r)] = true end
    assert.is_true(keys["a|default|fp16|1|cuda"])
    for _, cut in ipairs({ 1, #whole // 2 }) do assert.is_true(keys["a|default|fp16|" .. (3 + cut) .. "|cuda"]) end
    assert.is_true(keys["a|default|fp16|" .. (3 + #whole) .. "|cuda"])
    -- the whole-but-unterminated entry is a complete JSON text: it is kept; the two cut ones are not
    assert.is_true(keys["a|default|fp16|2|cuda"])
    assert.equal(2, #problems)
    -- nothing was glued to a cut entry: each line is a whole entry or a cut one alone
    local n = 0
    for line in io.lines(path) do
      n = n + 1
      assert.is_true(journal.decode(line) ~= nil or whole:sub(1, #line) == line)
    end
    assert.equal(8, n) -- header, row 1, three cuts, three appended rows
    os.remove(path)
  end)

  it("skips entries whose names would leave the results tree", function()
    local util = require("tilebench.util")
    local bad = { "../../x", "..", ".", "a/b", "", "x\0y", 7, true }
    for _, name in ipairs(bad) do
      assert.is_false(util.is_name(name))
      assert.is_string(journal.entry_problem({ operator = name, mode = "default", dtype = "fp16", case_index = 1, impl = "c" }))
      assert.is_string(journal.entry_problem({ operator = "a", mode = name, dtype = "fp16", case_index = 1, impl = "c" }))
    end
    assert.is_nil(journal.entry_problem({ operator = "vector_add", dtype = "fp16", case_index = 1, impl = "c" }))
    assert.is_nil(journal.entry_problem({ operator = "a.b+c-d_1", mode = "autotune", dtype = "fp16", case_index = 2, impl = "c" }))
    local path = tmpfile()
    local j = journal.open(path, { run_id = "r1" })
    j:append({ { operator = "../../../etc", mode = "default", dtype = "fp16", case_index = 1, impl = "c", status = "ok" },
               { operator = "a", mode = "../up", dtype = "fp16", case_index = 1, impl = "c", status = "ok" },
               { operator = "a", mode = "default", dtype = "fp16", case_index = 1, impl = "c", status = "ok" } })
    j:close()
    local _, rows, problems = journal.read(path)
    assert.equal(1, #rows)
    assert.equal("a", rows[1].operator)
    assert.equal(2, #problems)
    assert.matches(":2: entry skipped: operator", problems[1])
    assert.matches(":3: entry skipped: mode", problems[2])
    os.remove(path)
  end)

  it("keys, latest entry per key and the done set", function()
    local a = { operator = "a", mode = "default", dtype = "fp16", case_index = 1, impl = "cuda", status = "failed" }
    local b = { operator = "a", mode = "default", dtype = "fp16", case_index = 1, impl = "cuda", status = "ok" }
    local c = { operator = "a", mode = "autotune", dtype = "fp16", case_index = 1, impl = "cuda", status = "ok" }
    assert.equal("a|default|fp16|1|cuda", journal.key(a))
    local latest = journal.latest({ a, c, b })
    assert.equal(2, #latest)
    assert.equal(b, latest[1])
    local done = journal.done_set({ a, c })
    assert.is_true(done[journal.key(b)])
    assert.is_nil(done["a|default|fp16|2|cuda"])
  end)

  it("joins the journals of shards: every entry once, a key in two runs refused", function()
    local function row(i, impl, status)
      return { operator = "a", mode = "default", dtype = "fp16", case_index = i, impl = impl, status = status }
    end
    local s1 = { row(1, "cuda", "failed"), row(1, "lib", "ok"), row(1, "cuda", "ok") } -- resumed: cuda re-run
    local s2 = { row(2, "cuda", "ok"), row(2, "lib", "ok") }
    local rows = journal.join({ { name = "runs/s1", rows = s1 }, { name = "runs/s2", rows = s2 } })
    assert.equal(4, #rows)
    assert.same({ "a|default|fp16|1|cuda", "a|default|fp16|1|lib", "a|default|fp16|2|cuda", "a|default|fp16|2|lib" },
      { journal.key(rows[1]), journal.key(rows[2]), journal.key(rows[3]), journal.key(rows[4]) })
    assert.equal("ok", rows[1].status) -- the run's latest entry
    local none, conflicts = journal.join({ { name = "runs/s1", rows = s1 }, { name = "runs/s2", rows = s2 },
                                           { name = "runs/s3", rows = { row(2, "lib", "wrong"), row(3, "lib", "ok") } } })
    assert.is_nil(none)
    assert.same({ { key = "a|default|fp16|2|lib", first = "runs/s2", second = "runs/s3" } }, conflicts)
    assert.same({}, journal.join({}))
  end)
end)

-- Issue 13: an entry of the wrong shape (edited, or from another version) is skipped with
-- file:line, the field and what it should be, and never reaches the outputs.
describe("journal entries of the wrong shape", function()
  local good = { operator = "vector_add", mode = "default", dtype = "fp16", case_index = 2, impl = "cuda",
                 status = "ok", reason = "", config = "BLOCK=256", case_id = "n=4096", category = "Point-wise",
                 params = { n = 4096 }, stats = { median = 0.01 }, samples = { 0.01, 0.011 }, ms = 0.01,
                 latency_ms = 0.01, gbs = 100.5, tflops = 0.1, bytes = 4096, flops = 1024, intensity = 0.25,
                 rho = 0.5, speedup = 1.1, elib = 0.9 }
  local kinds = { string = "x", integer = 3, float = 0.5, boolean = true, list = { 1, 2 }, object = { a = 1 },
                  strings = { "a" } }
  local expected = {
    operator = { string = true }, mode = { string = true }, dtype = { string = true }, impl = { string = true },
    case_index = { integer = true }, status = { string = true }, reason = { string = true },
    config = { string = true }, case_id = { string = true }, category = { string = true },
    params = { object = true }, stats = { object = true }, samples = { list = true },
  }
  for _, f in ipairs({ "ms", "latency_ms", "gbs", "tflops", "bytes", "flops", "intensity", "rho", "speedup", "elib" }) do
    expected[f] = { integer = true, float = true }
  end

  it("accepts the good entry, NaN and infinities as the encoder writes them", function()
    assert.is_nil(journal.entry_problem(good))
    local r = journal.decode(journal.encode({ operator = "a", dtype = "fp16", impl = "x", case_index = 1,
                                              ms = 0 / 0, rho = math.huge, samples = { -math.huge, 1 } }))
    assert.is_nil(journal.entry_problem(r))
  end)

  it("names the field of every wrong type, and read skips the entry at its line", function()
    local path = os.tmpname()
    for field, ok_kinds in pairs(expected) do
      for kind, v in pairs(kinds) do
        if not ok_kinds[kind] and not (field == "operator" and kind == "string") then
          local r = {}
          for k, x in pairs(good) do r[k] = x end
          r[field] = v
          local why = journal.entry_problem(r)
          assert.is_string(why, field .. " = " .. kind)
          assert.matches("^" .. field .. " ", why)
          local fh = assert(io.open(path, "wb"))
          fh:write(journal.encode({ journal = 1 }), "\n", journal.encode(good), "\n", journal.encode(r), "\n")
          fh:close()
          local _, rows, problems = journal.read(path)
          assert.are.equal(1, #rows)
          assert.are.equal(1, #problems)
          assert.are.equal(path .. ":3: entry skipped: " .. why, problems[1])
        end
      end
    end
    os.remove(path)
  end)

  it("requires dtype and impl of a case entry, not of an operator entry", function()
    for _, f in ipairs({ "dtype", "impl" }) do
      local r = {}
      for k, x in pairs(good) do r[k] = x end
      r[f] = nil
      assert.matches("^" .. f .. " nil is not a string", journal.entry_problem(r))
    end
    assert.is_nil(journal.entry_problem({ operator = "broken", mode = "default", status = "failed", reason = "x" }))
  end)
end)
