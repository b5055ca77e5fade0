-- verdict (lua/tilebench/verdict.lua): eval's answer from synthetic rows.
local verdict = require("tilebench.verdict")
local json = require("tilebench.json")

local item = { dtype = "fp16", case_id = "n=4", params = { n = 4 } }

describe("verdict.case", function()
  it("takes time, rho, speedup and torch's time from the rows", function()
    local c = verdict.case(item, {
      { impl = "torch", status = "ok", ms = 2.0 },
      { impl = "candidate", status = "ok", ms = 1.0, rho = 0.9, speedup = 2.0, checks = { { name = "reverify", status = "ok" } } },
    }, "candidate")
    assert.same({ "ok", 1.0, 0.9, 2.0, 2.0 }, { c.status, c.ms, c.rho, c.speedup, c.torch_ms })
    assert.equal("reverify", c.checks[1].name)
  end)
  it("lists the first mismatches of a wrong row, output by output", function()
    local c = verdict.case(item, { { impl = "candidate", status = "wrong", reason = "output 'out': 2 of 4",
      verify = { out = { ok = false, first = { { index = 1, got = 3, expected = 2 }, { index = 3, got = 0, expected = 1 } } } } } },
      "candidate")
    assert.equal("wrong", c.status)
    assert.same({ output = "out", index = 3, got = 0, expected = 1 }, c.mismatches[2])
    assert.is_nil(c.speedup)
  end)
  it("maps a compile failure, a refusal and runtime failures", function()
    assert.equal("compile_error", verdict.status_of({ status = "failed", error_class = "compile" }))
    assert.equal("refused", verdict.status_of({ status = "refused" }))
    for _, s in ipairs({ "failed", "timeout", "oom", "unsupported", "skipped" }) do
      assert.equal("failed", verdict.status_of({ status = s }))
    end
  end)
end)

describe("verdict.finish", function()
  it("takes the worst case's status and exit code, and summarises the ok cases", function()
    local v = verdict.new({ operator = "x" })
    v.cases[1] = { dtype = "fp16", case_id = "a", status = "ok", speedup = 2.0, rho = 0.5 }
    v.cases[2] = { dtype = "fp32", case_id = "b", status = "ok", speedup = 8.0, rho = 0.7 }
    local _, code = verdict.finish(v)
    assert.same({ "ok", 0, 2, 0.5 }, { v.status, code, v.summary.ok, v.summary.min_rho })
    assert.near(4.0, v.summary.geomean_speedup, 1e-12)
    v = verdict.new({})
    v.cases[1] = { dtype = "fp16", case_id = "a", status = "wrong", reason = "mismatch" }
    v.cases[2] = { dtype = "fp32", case_id = "b", status = "refused", reason = "reverify: ..." }
    v.cases[3] = { dtype = "int8", case_id = "c", status = "failed", reason = "timeout" }
    _, code = verdict.finish(v)
    assert.same({ "refused", 5, "fp32 b: reverify: ..." }, { v.status, code, v.reason })
  end)
  it("keeps a status set before any case (compile_error, refused by the screen)", function()
    local v = verdict.new({ status = "compile_error" })
    local _, code = verdict.finish(v)
    assert.equal(4, code)
    assert.equal("[]", json.encode_sorted(v.cases))
  end)
  it("has one exit status per verdict status", function()
    local seen = {}
    for _, s in ipairs(verdict.STATUSES) do
      assert.is_nil(seen[s[2]])
      seen[s[2]] = true
    end
  end)
end)
