-- refine (lua/tilebench/refine.lua): the loop's parts without a GPU or a model.
local refine = require("tilebench.refine")

describe("refine.parse_response", function()
  it("takes the last fenced block and the token line", function()
    local code, tokens, how = refine.parse_response("Sure.\n```cuda\nold\n```\nbetter:\n```cuda\nint x;\n```\n{\"tokens\": {\"input\": 10, \"output\": 5}}\n")
    assert.same({ "int x;\n", 15, "fenced" }, { code, tokens, how })
  end)
  it("takes the whole output when there is no fence, without the token line", function()
    local code, tokens, how = refine.parse_response("int x;\n{\"tokens\": 7}\nint y;")
    assert.same({ "int x;\nint y;\n", 7, "whole" }, { code, tokens, how })
  end)
  it("leaves tokens unknown when no line reports them", function()
    local _, tokens = refine.parse_response("```\nk\n```\n{\"other\": 1}\n")
    assert.is_nil(tokens)
  end)
end)

describe("refine.best and frozen", function()
  local recs = {
    { iteration = 1, status = "compile_error" },
    { iteration = 2, status = "ok", ms = 2.0, speedup = 0.5, rho = 0.3 },
    { iteration = 3, status = "ok", ms = 0.5, speedup = 2.0, rho = 0.85 },
    { iteration = 4, status = "refused", ms = 0.1 },
  }
  it("picks the verify-clean iteration with the highest speedup", function()
    assert.equal(3, refine.best(recs).iteration)
    assert.is_nil(refine.best({ recs[1], recs[4] }))
    assert.equal(2, refine.best({ { iteration = 1, status = "ok", ms = 3 }, { iteration = 2, status = "ok", ms = 1 } }).iteration)
  end)
  it("freezes only an ok iteration at rho >= the stop rho", function()
    assert.is_true(refine.frozen(recs[3], 0.8))
    assert.is_false(refine.frozen(recs[2], 0.8))
    assert.is_false(refine.frozen({ status = "ok" }, 0.8))
    assert.is_false(refine.frozen({ status = "refused", rho = 0.9 }, 0.8))
  end)
end)

describe("refine.prompt", function()
  local recs = { { iteration = 1, status = "ok", ms = 1, speedup = 1.5, rho = 0.5, tokens = 10 },
                 { iteration = 2, status = "wrong", reason = "fp16 n=4: output 'out' | bad", tokens = 20 } }
  it("is the task alone at iteration 1", function()
    local p = refine.prompt("TASK\n", { iteration = 1, dtype = "fp16", case_id = "n=4", stop_rho = 0.8, max = 10, records = {}, lang = "cuda" })
    assert.matches("^TASK\n", p)
    assert.is_nil(p:find("Trajectory", 1, true))
  end)
  it("carries the trajectory, the previous file and, after a failure, the best file", function()
    local p = refine.prompt("TASK\n", { iteration = 3, dtype = "fp16", case_id = "n=4", stop_rho = 0.8, max = 10, lang = "cuda",
      records = recs, previous = { code = "PREV", verdict = { reason = "why", cases = { { mismatches = { { output = "out", index = 1, got = 2, expected = 3 } } } } } },
      best = { record = recs[1], code = "BEST" } })
    assert.matches("| 1 | ok | 1.00000 | 0.500 | 1.500 | 10 |  |", p, 1, true)
    assert.matches("| 2 | wrong | - | - | - | 20 | fp16 n=4: output 'out' / bad |", p, 1, true)
    assert.matches("## Your previous file (iteration 2): wrong\n\n```cuda\nPREV\n```", p, 1, true)
    assert.matches("- output out[1]: got 2, expected 3", p, 1, true)
    assert.matches("The best verified file so far (iteration 1", p, 1, true)
    assert.matches("```cuda\nBEST\n```", p, 1, true)
  end)
  it("offers no best file when the previous iteration is the best", function()
    local p = refine.prompt("T", { iteration = 2, dtype = "fp16", stop_rho = 0.8, max = 10, lang = "cuda", records = { recs[1] },
      previous = { code = "P", verdict = {} }, best = { record = recs[1], code = "P" } })
    assert.is_nil(p:find("best verified file", 1, true))
  end)
end)

describe("refine.summary", function()
  it("counts failed iterations as zero speedup and their tokens", function()
    local s = refine.summary({
      { dtype = "fp16", frozen_at = 2, records = { { iteration = 1, status = "wrong", tokens = 1000 },
        { iteration = 2, status = "ok", speedup = 2.0, rho = 0.9, tokens = 1000 } } },
      { dtype = "fp32", records = { { iteration = 1, status = "compile_error", tokens = 500 }, { iteration = 2, status = "failed" } } },
    })
    assert.same({ 2, 0 }, { s.dtypes[1].gated_speedup, s.dtypes[2].gated_speedup })
    assert.same({ 2500, 1, 4, 1 }, { s.tokens, s.verify_clean, s.iterations, s.tokens_unreported })
    assert.near(2.0 / 0.0025, s.token_efficiency, 1e-9)
    assert.near(1000, s.dtypes[1].token_efficiency, 1e-9)
    assert.equal(0, s.dtypes[2].token_efficiency)
    assert.equal(1.0, s.gated_speedup_mean)
  end)
end)
