-- tilebench.expr: TileBench's Python-subset expressions, with Python's numeric semantics.
local expr = require("tilebench.expr")
local yaml = require("tb.yaml")

local HOME = TILEBENCH_HOME or os.getenv("TILEBENCH_HOME") or "."

local function ev(src, env) return expr.eval(src, env or {}) end
local function err(src, env)
  local ok, e = pcall(expr.eval, src, env or {})
  assert.is_false(ok, "expected an error for: " .. src)
  return e
end
local function same_int(want, got)
  assert.are.equal("integer", math.type(got))
  assert.are.equal(want, got)
end
local function same_float(want, got)
  assert.are.equal("float", math.type(got))
  assert.are.equal(want, got)
end

describe("expr arithmetic follows Python", function()
  it("keeps int ops in Lua integers", function()
    same_int(4194304, ev("M * N", {M = 4096, N = 1024}))
    same_int(7, ev("1 + 2 * 3"))
    same_int(9, ev("(1 + 2) * 3"))
    same_int(1000, ev("1_000"))
    same_int(16, ev("0x10"))
  end)

  it("makes / true division and // floor division", function()
    same_float(3.5, ev("7 / 2"))
    same_float(2.0, ev("4 / 2"))
    same_int(3, ev("7 // 2"))
    same_int(-4, ev("-7 // 2"))
    same_int(-4, ev("7 // -2"))
    same_float(3.0, ev("7.5 // 2"))
    same_float(9.0, ev("1 // 0.1")) -- Python's divmod, not floor(1 / 0.1) = 10
  end)

  it("gives % the divisor's sign", function()
    same_int(2, ev("-7 % 3"))
    same_int(-2, ev("7 % -3"))
    same_float(0.5, ev("-1.5 % 2"))
  end)

  it("makes ** right-associative, tighter than unary minus, int for int >= 0", function()
    same_int(512, ev("2 ** 3 ** 2"))
    same_int(-4, ev("-2 ** 2"))
    same_int(4, ev("(-2) ** 2"))
    same_float(0.5, ev("2 ** -1"))
    same_int(1, ev("5 ** 0"))
    same_float(8.0, ev("2.0 ** 3"))
    same_int(4611686018427387904, ev("2 ** 62"))
  end)

  it("reads float literals", function()
    same_float(1e-6, ev("1e-6"))
    same_float(0.5, ev(".5"))
    same_float(1.0e-5, ev("1.0e-5"))
    same_float(3.0, ev("3."))
  end)

  it("raises on integer overflow instead of wrapping", function()
    assert.matches("integer overflow", err("2 ** 63"))
    assert.matches("integer overflow", err("M * M * M", {M = 4294967296}))
    assert.matches("integer overflow", err("9223372036854775807 + 1"))
  end)

  it("raises Python's errors for division by zero and domains", function()
    assert.are.equal('expression "1 / 0": division by zero at column 3', err("1 / 0"))
    assert.matches("modulo by zero", err("1 // 0"))
    assert.matches("modulo by zero", err("1 % 0"))
    assert.matches("math domain error in math.sqrt", err("math.sqrt(-1)"))
    assert.matches("math domain error in math.log", err("math.log(0)"))
  end)

  it("treats booleans as ints and supports comparisons, and/or/not, if-else", function()
    same_int(2, ev("True + 1"))
    assert.is_true(ev("1 < 2 < 3"))
    assert.is_false(ev("1 < 3 < 2"))
    assert.is_true(ev("not 0"))
    same_int(3, ev("0 or 3"))
    same_int(0, ev("0 and 3"))
    same_int(10, ev("10 if causal else 20", {causal = true}))
    same_int(20, ev("10 if x > 5 else 20", {x = 1}))
  end)
end)

describe("expr functions", function()
  it("provides int, float, min, max, abs", function()
    same_int(3, ev("int(7 / 2)"))
    same_int(-3, ev("int(-3.7)"))
    same_float(2.0, ev("float(2)"))
    same_int(9, ev("max([3, 9, 2])"))
    same_int(1, ev("min(3, 1, 2)"))
    same_float(1.5, ev("min(3, 1.5)"))
    same_int(5, ev("abs(-5)"))
  end)

  it("provides the math functions TileBench's configs use", function()
    same_float(4.0, ev("math.sqrt(16)"))
    same_int(3, ev("math.ceil(2.1)"))
    same_int(2, ev("math.floor(2.9)"))
    same_float(10.0, ev("math.log2(1024)"))
    same_float(3.0, ev("math.log(8, 2)"))
    same_float(1.0, ev("math.exp(0)"))
    same_float(8.0, ev("math.pow(2, 3)"))
    same_float(math.pi, ev("math.pi"))
    same_int(12, ev("math.isqrt(150)"))
  end)
end)

describe("expr lists", function()
  it("evaluates list literals and range comprehensions", function()
    assert.are.same({1, 2, 3}, ev("[1, 2, 3]"))
    local v = ev("[1024 * i for i in range(1, 21)]")
    assert.are.equal(20, #v)
    same_int(1024, v[1]); same_int(20480, v[20])
    assert.are.same({0, 3, 6, 9}, ev("[i for i in range(0, 10, 3)]"))
    assert.are.same({0, 1, 2}, ev("[i for i in range(3)]"))
    assert.are.same({5, 4}, ev("[i for i in range(5, 3, -1)]"))
    assert.are.same({0, 4, 8}, ev("[i * 2 for i in range(5) if i % 2 == 0]"))
    assert.are.same({2, 4}, ev("[2 * x for x in [1, 2]]"))
    assert.are.same({}, ev("[i for i in range(1, 1)]"))
  end)

  it("lets the comprehension variable shadow the environment only inside", function()
    assert.are.same({1, 2}, ev("[i for i in range(1, 3)]", {i = 100}))
  end)
end)

describe("expr rejects everything outside the subset", function()
  local cases = {
    {"M * K +", 'expression "M %* K %+": unexpected end at column 7'},
    {"__import__('os')", "string literals are not part of the expression language at column 12"},
    {"__import__(x)", 'function "__import__" is not available'},
    {"os.getenv(x)", "attribute access is not allowed %(only math.NAME%) at column 3"},
    {"M.bit_length()", "attribute access is not allowed"},
    {"math.system(1)", "math.system is not available"},
    {"lambda: 1", "lambda is not part of the expression language at column 1"},
    {"'abc'", "string literals are not part of the expression language"},
    {"x[0]", "subscripts are not supported"},
    {"2 ^ 3", 'operator "%^" is not part of the expression language'},
    {"a = 1", 'operator "=" is not part of the expression language'},
    {"print(1)", 'function "print" is not available'},
    {"load(x)", 'function "load" is not available'},
    {"range(3)", "range%(%) is allowed only in a list comprehension"},
    {"1 if 2", "unexpected end"},
    {"(1, 2)", "tuples are not supported"},
    {"3j", "complex numbers are not supported"},
    {"010", "leading zeros"},
    {"x in [1]", "membership tests"},
    {"None", "None is not part of the expression language"},
    {"M $ 2", 'unexpected character "%$" at column 3'},
    {"", "empty expression"},
    {"max(a=1)", "keyword arguments are not supported"},
  }
  for _, c in ipairs(cases) do
    it("rejects " .. c[1], function()
      local ok, e = pcall(expr.parse, c[1])
      if ok then ok, e = pcall(expr.eval, c[1], {x = 1, M = 2}) end
      assert.is_false(ok)
      assert.matches(c[2], e)
    end)
  end

  it("names an undefined variable", function()
    assert.are.equal('expression "M * Q": name "Q" is not defined at column 5', err("M * Q", {M = 1}))
  end)

  it("rejects non-numbers in arithmetic", function()
    assert.matches("unsupported operand type%(s%) for %*: 'str' and 'int'", err("s * 2", {s = "x"}))
  end)

  it("limits list sizes", function()
    assert.matches("evaluation budget exceeded", err("[i for i in range(100000000)]"))
  end)
end)

-- Hostile expressions (issue 13): whatever their shape, evaluation ends with an error that
-- quotes the expression (cut when long) and says which bound it hit; nothing wraps around.
describe("expr bounds", function()
  local function fails_with(pattern, src, env)
    local ok, e = pcall(expr.eval_in, "ops/x/config.yaml", "case_grid.n", src, env or {})
    assert.is_false(ok, src .. " evaluated")
    assert.matches("^ops/x/config%.yaml: case_grid%.n: expression \"", e)
    local any = false
    for alt in (pattern .. "|"):gmatch("(.-)|") do any = any or e:find(alt) ~= nil end
    assert.is_true(any, e .. " does not match " .. pattern)
    assert.is_true(#e < 400, "message too long: " .. #e)
    return e
  end

  it("stops list repetition of any count past the item budget", function()
    for _, n in ipairs({"1000001", "10**9", "10**18", "2**62", "9223372036854775807"}) do
      for _, items in ipairs({"[0]", "[1, 2, 3]", "[[]]"}) do
        fails_with("evaluation budget exceeded", items .. " * " .. n)
        fails_with("evaluation budget exceeded", n .. " * " .. items)
      end
      -- an empty list repeated any number of times is empty, at once
      assert.are.equal(0, #expr.eval("[] * " .. n, {}))
    end
  end)

  it("counts items across the whole evaluation, not per list", function()
    fails_with("evaluation budget exceeded", "[[0] * 1000 for i in range(2000)]")
    fails_with("evaluation budget exceeded", "[0] * 600000 + [0] * 600000")
  end)

  it("stops nested comprehensions whose every range is small", function()
    for depth = 2, 4 do
      local per = math.ceil((expr.limits.steps * 2) ^ (1 / depth))
      local clauses = {}
      for d = 1, depth do clauses[d] = ("for i%d in range(%d)"):format(d, per) end
      local body = table.concat(clauses, " ")
      fails_with("evaluation budget exceeded", "[1 " .. body .. "]")
      -- a filter that keeps nothing creates no items, but the steps still count
      fails_with("evaluation budget exceeded %(more than %d+ steps%)", "[1 " .. body .. " if 0]")
    end
  end)

  it("computes range() lengths without overflow, anywhere in 64 bits", function()
    local rng = 12345
    local function rand(lo, hi) -- a small LCG: the test is the same every run; hi - lo < 2**63
      rng = (rng * 6364136223846793005 + 1442695040888963407)
      return lo + ((rng >> 11) % (hi - lo + 1))
    end
    for _ = 1, 300 do
      local count = rand(0, 40)
      local step = rand(1, 1 << rand(0, 58)) * (rand(0, 1) == 0 and 1 or -1)
      local start = rand(math.mininteger // 2, math.maxinteger // 2)
      local stop = start + count * step
      local ok, v = pcall(expr.eval, "[i for i in range(a, b, c)]", {a = start, b = stop, c = step})
      if math.abs(count * (step + 0.0)) < 2.0 ^ 61 then
        assert.is_true(ok, tostring(v))
        assert.are.equal(count, #v)
        if count > 0 then assert.are.equal(start, v[1]); assert.are.equal(stop - step, v[count]) end
      end
    end
    -- spans wider than 64 bits and empty ranges at the edges
    for _, src in ipairs({"[i for i in range(a, b)]", "[i for i in range(b, a, -1)]", "[i for i in range(a, b, 3)]"}) do
      fails_with("evaluation budget exceeded", src, {a = math.mininteger, b = math.maxinteger})
    end
    assert.are.equal(0, #expr.eval("[i for i in range(0, a)]", {a = math.mininteger}))
    assert.are.equal(0, #expr.eval("[i for i in range(0, a, -1)]", {a = math.maxinteger}))
    assert.are.equal(4, #expr.eval("[i for i in range(a, b, 2**62)]", {a = math.mininteger, b = math.maxinteger}))
  end)

  it("math.isqrt is exact up to 2**63 - 1", function()
    local top = 3037000499 -- the largest r with r * r < 2**63
    local xs = {math.maxinteger, math.maxinteger - 1, top * top, top * top - 1, top * top + 1}
    for k = top - 50, top do xs[#xs + 1] = k * k; xs[#xs + 1] = k * k - 1 end
    for i = 0, 62 do xs[#xs + 1] = (1 << i) - 1; xs[#xs + 1] = 1 << i end
    for _, x in ipairs(xs) do
      if x >= 0 then
        local r = expr.eval("math.isqrt(x)", {x = x})
        assert.are.equal("integer", math.type(r))
        assert.is_true(r * r <= x, tostring(x))
        assert.is_true(r == top or (r + 1) * (r + 1) > x, tostring(x))
      end
    end
  end)

  it("refuses expressions with too many terms or levels before evaluating them", function()
    for _, n in ipairs({expr.limits.tokens, 200000}) do
      for _, op in ipairs({"+", "*", " and ", " or ", " < ", ", "}) do
        local src = ("1" .. op):rep(n) .. "1"
        if op == ", " then src = "max(" .. src .. ")" end
        fails_with("too long %(more than %d+ tokens%)", src)
      end
    end
    for _, wrap in ipairs({{"(", ")"}, {"[", "]"}, {"-", ""}, {"not ", ""}, {"abs(", ")"}, {"2 ** ", ""}}) do
      local depth = expr.limits.depth + 1
      fails_with("nested too deeply", wrap[1]:rep(depth) .. "1" .. wrap[2]:rep(depth))
    end
  end)

  it("keeps integers from wrapping in every operator", function()
    local big = {a = math.maxinteger, b = math.mininteger}
    for _, src in ipairs({"a + 1", "b - 1", "a * 2", "b * -1", "-b", "abs(b)", "b // -1", "3 ** 40",
                          "int(1e300)", "math.floor(1e300)", "[0] * a"}) do
      fails_with("integer overflow|budget exceeded|cannot convert", src, big)
    end
  end)

  it("lower limits stop evaluation earlier", function()
    local saved = expr.limits.steps
    expr.limits.steps = 1000
    local ok, e = pcall(expr.eval, "[i for i in range(2000)]", {})
    expr.limits.steps = saved
    assert.is_false(ok)
    assert.matches("more than 1000 steps", e)
    assert.are.equal(2000, #expr.eval("[i for i in range(2000)]", {}))
  end)
end)

describe("expr API", function()
  it("evaluates a parsed AST repeatedly", function()
    local ast = expr.parse("n * dtype_size")
    same_int(8, expr.eval(ast, {n = 4, dtype_size = 2}))
    same_int(16, expr.eval(ast, {n = 4, dtype_size = 4}))
  end)

  it("eval_in prefixes the file and the key", function()
    local ok, e = pcall(expr.eval_in, "operators/x/config.yaml", "metrics.flops_expr", "M * K +", {})
    assert.is_false(ok)
    assert.are.equal('operators/x/config.yaml: metrics.flops_expr: expression "M * K +": unexpected end at column 7', e)
  end)

  it("free_names lists what an expression reads", function()
    assert.are.same({M = true, K = true}, expr.free_names("[M * i for i in range(K)]"))
    assert.are.same({}, expr.free_names("math.pi * 2"))
  end)
end)

-- Every flops/bytes/grid expression of OPERATORS.md, extracted by
-- tests/fixtures/extract_expressions.lua with the variables of a first case.
describe("every expression in OPERATORS.md", function()
  local f = assert(io.open(HOME .. "/tests/fixtures/expressions.txt", "rb"))
  local lines = {}
  for line in f:lines() do
    if not line:match("^#") and line ~= "" then lines[#lines + 1] = line end
  end
  f:close()
  local values = {}

  it("has all 45 operators' flops and bytes", function()
    local ops = {}
    for _, line in ipairs(lines) do ops[line:match("^[^\t]+")] = true end
    local n = 0
    for _ in pairs(ops) do n = n + 1 end
    assert.are.equal(45, n)
    assert.is_true(#lines >= 45 * 3)
  end)

  for _, line in ipairs(lines) do
    local op, kind, src, vars = line:match("^([^\t]+)\t([^\t]+)\t([^\t]+)\t?(.*)$")
    it(op .. " " .. kind .. ": " .. src, function()
      local env = {}
      for k, v in vars:gmatch("([%w_]+)=(%S+)") do env[k] = yaml.load(v) end
      local v = expr.eval(src, env)
      if kind == "grid" then
        assert.is_true(type(v) == "table" and #v > 0)
        for _, x in ipairs(v) do assert.are.equal("integer", math.type(x)) end
      else
        assert.are.equal("number", type(v))
        assert.is_true(v >= 0)
        -- shapes are integers: no float drift anywhere in OPERATORS.md's formulas
        assert.are.equal("integer", math.type(v))
      end
      values[op .. " " .. kind .. " " .. src] = v
    end)
  end

  it("gives the hand-computed values", function()
    -- vector_add, n = 1048576, fp16
    assert.are.equal(1048576 * 2 * 3, values["vector_add bytes n * dtype_size * 3"])
    -- weight_dequant, M = 512, TILE 128, fp16: 2*512*512*2 + 4**2*2
    assert.are.equal(2 * 512 * 512 * 2 + 16 * 2,
      values["weight_dequant bytes 2 * M * M * dtype_size + ((M + TILE_SIZE - 1) // TILE_SIZE) ** 2 * dtype_size"])
    -- 1d_conv, L = 131072, fp16: out_L = L
    assert.are.equal(2 * 128 * 131072 * 128 * 3,
      values["1d_conv flops 2 * batch * out_channels * ((L + 2 * padding - kernel_size) // stride + 1) * (in_channels // groups) * kernel_size"])
    -- 2d_max_pooling, H = 32: Hout = (32 + 2 - 3) // 2 + 1 = 16
    assert.are.equal(4 * 128 * 16 * 16 * 9,
      values["2d_max_pooling flops N * C * ((H + 2 * padding - kernel_size) // stride + 1) ** 2 * kernel_size ** 2"])
    -- matmul_int8, K = 1024: M*K + K*N//4 + 4*M*N
    assert.are.equal(2048 * 1024 + 1024 * 2048 // 4 + 4 * 2048 * 2048,
      values["matmul_int8 bytes M * K + K * N // 4 + 4 * M * N"])
    -- destindex: n = 1600 * tokens
    assert.are.equal(1600 * 2048 * 2 * 2, values["destindex bytes n * dtype_size * 2"])
    -- flash_decode, seq_len 2048, block 128
    assert.are.equal(4 * 2 * 8 * 16 * 128, values["flash_decode flops 4 * batch * heads * (seq_len // block_seq) * head_dim"])
  end)
end)
