-- tilebench.csv: writing results tables, reading any CSV by column name (TileBench's too).
local csv = require("tilebench.csv")
local lfs = require("lfs")

local HOME = TILEBENCH_HOME or os.getenv("TILEBENCH_HOME") or "."
local FIX = HOME .. "/tests/fixtures/csv/"

local function tmpdir()
  local d = os.tmpname()
  os.remove(d)
  assert(lfs.mkdir(d))
  return d
end

local function read_all(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

describe("csv.encode / csv.write", function()
  it("writes a header, LF endings, 6 significant digits, empty cells for missing values", function()
    local text = csv.encode({"params", "dtype", "cuda_ms", "n", "ok"}, {
      {params = "n=1024", dtype = "fp16", cuda_ms = 0.012345678, n = 1024, ok = true},
      {params = "n=2048", dtype = "fp32", n = 2048},
      {"n=4096", "bf16", 1.5e-5, nil, false},
    })
    assert.are.equal("params,dtype,cuda_ms,n,ok\n" ..
      "n=1024,fp16,0.0123457,1024,true\n" ..
      "n=2048,fp32,,2048,\n" ..
      "n=4096,bf16,1.5e-05,,false\n", text)
  end)

  it("quotes cells holding commas, quotes, newlines or edge spaces", function()
    local text = csv.encode({"params", "reason"}, {
      {params = "cols=512, rows=512", reason = 'said "no"'},
      {params = " x", reason = "two\nlines"},
    })
    assert.are.equal('params,reason\n"cols=512, rows=512","said ""no"""\n" x","two\nlines"\n', text)
    local back = csv.parse(text, "t", {raw = true})
    assert.are.equal('said "no"', back.rows[1].reason)
    assert.are.equal("two\nlines", back.rows[2].reason)
    assert.are.equal(" x", back.rows[2].params)
  end)

  it("writes atomically: the file appears whole, no temporary file is left", function()
    local dir = tmpdir()
    local path = dir .. "/op_default.csv"
    csv.write(path, {"a"}, {{a = 1}})
    csv.write(path, {"a"}, {{a = 2}})
    assert.are.equal("a\n2\n", read_all(path))
    local names = {}
    for n in lfs.dir(dir) do if n ~= "." and n ~= ".." then names[#names + 1] = n end end
    assert.are.same({"op_default.csv"}, names)
    os.remove(path)
    lfs.rmdir(dir)
  end)

  it("fails clearly when the folder does not exist", function()
    local ok, err = pcall(csv.write, "/nonexistent-dir/x.csv", {"a"}, {})
    assert.is_false(ok)
    assert.matches("^write /nonexistent%-dir/x%.csv: .*No such file or directory", err)
  end)

  it("rejects positional rows wider than the header", function()
    assert.has_error(function() csv.encode({"a"}, {{1, 2}}) end)
  end)
end)

describe("csv.parse / csv.read", function()
  it("reads by column name, typing numbers and normalising dtype labels", function()
    local t = csv.read(FIX .. "float32_labels.csv")
    assert.are.same({"params", "dtype", "torch_ms", "triton_ms"}, t.header)
    assert.are.equal("fp32", t.rows[1].dtype)
    assert.are.equal("fp16", t.rows[2].dtype)
    assert.are.equal(0.0059, t.rows[1].torch_ms)
    assert.is_nil(t.rows[2].torch_ms)
    assert.are.equal("n=1048576", t.rows[1].params)
  end)

  it("tolerates CRLF and a BOM, and reads quoted params", function()
    local t = csv.read(FIX .. "tilebench_crlf_bom.csv")
    assert.are.equal("params", t.header[1])
    assert.are.equal("triton_vs_cutile", t.header[#t.header])
    assert.are.equal(3, #t.rows)
    assert.are.equal("cols=512, rows=512", t.rows[1].params)
    assert.are.equal("int8", t.rows[1].dtype)
    assert.are.equal(1.1965, t.rows[1].triton_vs_cutile)
  end)

  it("types cells: integers, floats, exponents, nan/inf; raw keeps strings", function()
    local t = csv.parse("a,b,c,d,e,f\n12,-0.5,1e-05,nan,-inf,x1\n", "t")
    local r = t.rows[1]
    assert.are.equal("integer", math.type(r.a))
    assert.are.equal(-0.5, r.b)
    assert.are.equal(1e-5, r.c)
    assert.is_true(r.d ~= r.d)
    assert.are.equal(-math.huge, r.e)
    assert.are.equal("x1", r.f)
    assert.are.equal("12", csv.parse("a\n12\n", "t", {raw = true}).rows[1].a)
  end)

  it("reports a ragged row with its line", function()
    local ok, err = pcall(csv.parse, "a,b\n1,2\n3\n", "x.csv")
    assert.is_false(ok)
    assert.are.equal("x.csv:3: expected 2 fields, got 1", err)
    ok, err = pcall(csv.parse, 'a\n"open\n', "y.csv")
    assert.is_false(ok)
    assert.matches("^y%.csv:2: unterminated quoted field", err)
    ok, err = pcall(csv.parse, "a,a\n1,2\n", "z.csv")
    assert.is_false(ok)
    assert.are.equal('z.csv:1: column "a" appears twice', err)
  end)

  it("parses params strings", function()
    assert.are.same({cols = 512, rows = 512}, csv.parse_params("cols=512, rows=512"))
    assert.are.same({eps = 1e-6, causal = true}, csv.parse_params("eps=1e-06, causal=True"))
    assert.are.same({}, csv.parse_params(""))
  end)
end)

describe("csv.results_table", function()
  it("lays out params, dtype, then per implementation ms, speedup, rho, elib, status, reason", function()
    local cases = {
      {id = "n=1024", dtype = "fp16", results = {
        cuda = {ms = 0.0123456789, speedup = 1.25, rho = 0.8125, elib = 0.9, status = "ok"},
        lib = {ms = 0.011, speedup = 1.0, status = "ok"}}},
      {id = "cols=512, rows=512", dtype = "fp32", results = {
        cuda = {status = "wrong", reason = "12 of 1024 elements differ, max abs err 0.5"},
        lib = {ms = 0.02, status = "ok"}}},
    }
    local header, rows = csv.results_table(cases, {"cuda", "lib"})
    assert.are.same({"params", "dtype",
      "cuda_ms", "speedup_cuda", "rho_cuda", "elib_cuda", "status_cuda", "reason_cuda",
      "lib_ms", "speedup_lib", "rho_lib", "elib_lib", "status_lib", "reason_lib"}, header)
    local text = csv.encode(header, rows)
    local lines = {}
    for l in text:gmatch("[^\n]+") do lines[#lines + 1] = l end
    assert.are.equal("n=1024,fp16,0.0123457,1.25,0.8125,0.9,ok,,0.011,1,,,ok,", lines[2])
    assert.are.equal('"cols=512, rows=512",fp32,,,,,wrong,"12 of 1024 elements differ, max abs err 0.5",0.02,,,,ok,', lines[3])
    -- and it reads back by name
    local back = csv.parse(text, "t")
    assert.are.equal("wrong", back.rows[2].status_cuda)
    assert.is_nil(back.rows[2].cuda_ms)
    assert.are.equal(0.0123457, back.rows[1].cuda_ms)
  end)

  it("puts a campaign's metrics after the standard columns, and resultset reads them back", function()
    local cases = {{id = "n=1024", dtype = "fp16", results = {
      cuda = {ms = 0.5, status = "ok", extra = {per_byte = 2.5}}, lib = {ms = 1, status = "ok"}}}}
    local header, rows = csv.results_table(cases, {"cuda", "lib"}, {"per_byte"})
    assert.are.same({"per_byte_cuda", "per_byte_lib"}, {header[15], header[16]})
    assert.are.equal(16, #header)
    local path = os.tmpname() .. "_default.csv"
    csv.write(path, header, rows)
    local t = require("tilebench.resultset").read_csv(path)
    os.remove(path)
    assert.are.same({"cuda", "lib"}, t.impls)
    assert.are.same({"per_byte"}, t.extra)
    assert.are.equal(2.5, t.cases[1].by_impl.cuda.extra.per_byte)
    assert.is_nil(t.cases[1].by_impl.lib.extra)
  end)
end)

-- TileBench's published CSVs (tests/fixtures holds two; the full set is read where present).
describe("TileBench's published CSVs", function()
  local dirs = {}
  for _, d in ipairs({os.getenv("TB_ANCHORS_DIR") or "", HOME .. "/anchors", HOME .. "/shared/anchors",
                      HOME .. "/../shared/anchors"}) do
    for _, sub in ipairs({"tilebench-GH200", "tilebench-B200"}) do
      if d ~= "" and lfs.attributes(d .. "/" .. sub, "mode") == "directory" then
        dirs[#dirs + 1] = d .. "/" .. sub
      end
    end
  end

  it("reads every anchor CSV by name: params, dtype and a time per backend on every row", function()
    if #dirs == 0 then
      pending("TileBench's anchors not found (set TB_ANCHORS_DIR)")
      return
    end
    local files = 0
    for _, dir in ipairs(dirs) do
      for name in lfs.dir(dir) do
        if name:match("%.csv$") then
          local t = csv.read(dir .. "/" .. name)
          assert.is_true(#t.rows >= 20, name)
          for _, r in ipairs(t.rows) do
            assert.are.equal("string", type(r.params), name)
            assert.is_truthy(({fp16 = 1, bf16 = 1, fp32 = 1, int8 = 1, int32 = 1, fp8_e4m3 = 1})[r.dtype],
              name .. ": dtype " .. tostring(r.dtype))
            assert.are.equal("number", type(r.torch_ms), name)
            assert.are.equal("number", type(r.triton_ms), name)
          end
          files = files + 1
        end
      end
    end
    assert.is_true(files >= 45, "read " .. files .. " files")
  end)
end)
