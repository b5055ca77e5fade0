-- tilebench.resultset: damaged result files (issue 13) are refused with the file, the line or
-- row, the column or field and what was expected; nothing non-finite reaches the geomeans.
local resultset = require("tilebench.resultset")
local util = require("tilebench.util")
local cjson = require("cjson")

local function split(s, sep)
  local out = {}
  for part in (s .. sep):gmatch("(.-)" .. sep) do out[#out + 1] = part end
  return out
end

local dir = os.tmpname()
os.remove(dir)
require("lfs").mkdir(dir)

local HEADER = "params,dtype,lib_ms,speedup_lib,rho_lib,elib_lib,noise_lib,status_lib,reason_lib," ..
               "cuda_ms,speedup_cuda,rho_cuda,elib_cuda,noise_cuda,status_cuda,reason_cuda"
local GOOD = {"n=1024,fp16,0.0100,1.0000,0.5,1.0,0.01,ok,,0.0080,1.25,0.6,1.25,0.02,ok,",
              "n=2048,fp16,0.0200,1.0000,0.5,1.0,0.01,ok,,0.0150,1.33,0.6,1.33,0.02,ok,",
              "n=4096,fp16,,,,,,failed,boom,0.0300,,,,,ok,"}

local function write_csv(lines)
  local path = dir .. "/op_default.csv"
  util.write_atomic(path, HEADER .. "\n" .. table.concat(lines, "\n") .. "\n")
  return path
end

describe("resultset.read_csv on damaged values", function()
  it("reads the good file", function()
    local t = resultset.read_csv(write_csv(GOOD))
    assert.are.equal(3, #t.cases)
    assert.are.equal(0.008, t.cases[1].by_impl.cuda.ms)
  end)

  -- every numeric column, every kind of damage, on every line
  local columns = {}
  for i, h in ipairs(split(HEADER, ",")) do
    if h:match("_ms$") or h:match("^speedup_") or h:match("^rho_") or h:match("^elib_") or h:match("^noise_") then
      columns[#columns + 1] = {index = i, name = h}
    end
  end
  local damage = {"abc", "nan", "NaN", "inf", "-inf", "1e400", "-1", "-0.5", "0x", "1.2.3", "12ms"}

  it("names the file, line and column and says what it expected", function()
    assert.is_true(#columns >= 10)
    for _, col in ipairs(columns) do
      for _, bad in ipairs(damage) do
        for line = 1, #GOOD do
          local lines = {}
          for i, l in ipairs(GOOD) do lines[i] = l end
          local cells = split(lines[line], ",")
          cells[col.index] = bad
          lines[line] = table.concat(cells, ",")
          local path = write_csv(lines)
          local ok, err = pcall(resultset.read_csv, path)
          assert.is_false(ok, col.name .. " = " .. bad)
          assert.are.equal(("%s:%d: column '%s': expected a finite number >= 0 or nothing, got '%s'"):format(
            path, line + 1, col.name, bad), err)
        end
      end
    end
  end)
end)

describe("resultset.read_raw on rows of the wrong shape", function()
  local good_row = {operator = "op", mode = "default", impl = "cuda", dtype = "fp16", status = "ok",
                    reason = "fine", params = {n = 1024}, ms = 0.01, rho = 0.5, speedup = 1.2, elib = 1.1,
                    bytes = 4096, flops = 1024, samples = {0.01, 0.011}, stats = {median = 0.01, noise = 0.02},
                    category = "Point-wise", baseline = "cuda", case_id = "n=1024"}
  local function write_raw(rows)
    local path = dir .. "/op.json"
    util.write_atomic(path, cjson.encode({rows = rows}))
    return path
  end

  it("reads a good row", function()
    local t = resultset.read_raw(write_raw({good_row}))
    assert.are.equal(1, #t)
    assert.are.equal(0.01, t[1].cases[1].by_impl.cuda.ms)
  end)

  -- each field given a value of every other JSON type (and non-finite numbers)
  local values = {string = "x", number = 7, boolean = true, list = {1, 2}, object = {a = {}},
                  nested = {{1}}, negative = -3}
  local allowed = {
    operator = {string = true}, mode = {string = true}, impl = {string = true}, dtype = {string = true},
    status = {string = true}, reason = {string = true}, category = {string = true}, baseline = {string = true},
    case_id = {string = true}, params = {string = true, object = true},
    ms = {number = true}, rho = {number = true}, speedup = {number = true}, elib = {number = true},
    bytes = {number = true}, flops = {number = true}, samples = {list = true}, stats = {object = true},
  }
  it("names the file, the row and the field, and what it should be", function()
    for field, ok_kinds in pairs(allowed) do
      for kind, v in pairs(values) do
        if not ok_kinds[kind] and not (field == "impl" and kind ~= "string") then
          local row = util.deepcopy(good_row)
          row[field] = v
          local path = write_raw({good_row, row})
          local ok, err = pcall(resultset.read_raw, path)
          assert.is_false(ok, field .. " = " .. kind)
          assert.matches("^" .. path:gsub("%p", "%%%0") .. ": row 2[^:]*: field '" .. field .. "[^']*' must be ", err)
          assert.is_nil(err:find("%.lua:%d"), err)
        end
      end
    end
  end)

  it("refuses damaged numbers inside samples and stats", function()
    for _, mutate in ipairs({
      function(r) r.samples = {0.01, "fast"} end,
      function(r) r.samples = {0.01, -1} end,
      function(r) r.stats = {median = "x"} end,
      function(r) r.stats = {samples = {1, {}}} end,
      function(r) r.stats = 5 end,
      function(r) r.params = {n = {1}} end,
    }) do
      local row = util.deepcopy(good_row)
      mutate(row)
      local ok, err = pcall(resultset.read_raw, write_raw({row}))
      assert.is_false(ok)
      assert.matches(": row 1 %(op cuda%): field '[%w_.%[%]]+' must be ", err)
    end
  end)
end)
