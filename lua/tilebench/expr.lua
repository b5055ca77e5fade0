-- expr.lua: TileBench's expression language (config.yaml's flops_expr, bytes_expr, grid
-- {expr: ...}): a Python subset parsed to an AST and evaluated by a tree walker. No Lua code is
-- ever generated from a user string, and nothing outside this file's tables is reachable.
--
-- The subset: int and float literals (1_000, 0x10, 1e-6, .5), names (case parameters, n,
-- dtype_size), + - * / // % ** (right-associative, tighter than unary minus on its left),
-- unary - + and not, comparisons (chained), and/or, `a if c else b`, parentheses, list
-- literals [a, b], comprehensions [E for i in range(a, b[, step]) if C], True/False, and calls
-- of int() float() min() max() abs() and math.X (sqrt log log2 log10 exp pow ceil floor trunc
-- fabs isqrt; pi e tau inf nan). Python semantics: ints stay Lua integers (overflow is an
-- error, never a silent wrap or float drift), / is true division, // floors toward -inf, %
-- takes the divisor's sign, int ** int >= 0 is an int, math.ceil/floor return ints.
--
-- API:
--   expr.parse(src) -> ast                  raises 'expression "M * K +": unexpected end at column 7'
--   expr.eval(src_or_ast, env) -> value     env: name -> number | boolean | list
--   expr.eval_in(file, key, src, env)       the same, errors prefixed "FILE: KEY: "
--   expr.free_names(src_or_ast) -> {name = true}   the names an expression reads from env
--   expr.limits = {tokens, depth, steps, elements}  the bounds below (tests lower them)
--
-- Bounds: a config is untrusted input, so every evaluation ends quickly. An expression has at
-- most limits.tokens tokens and limits.depth levels of nesting (parsed before anything runs);
-- one evaluation may take limits.steps steps (a node evaluated, a loop turn, an item compared)
-- and create limits.elements list items in all. Past a bound the evaluation stops with
-- 'expression "...": evaluation budget exceeded: ...', never a hang or an exhausted memory.
-- Integers never wrap: + - * ** // unary minus, abs, int() and range() lengths that leave
-- 64 bits raise "integer overflow".
-- Columns are 1-based; an unexpected end is reported at the expression's last column.
local M = {}

local LIST = {__name = "tilebench.expr.list"}

-- Generous for every expression an operator needs (the largest evaluates in well under 10^4
-- steps) and small enough that the worst evaluation ends in about a second.
M.limits = {tokens = 10000, depth = 200, steps = 2000000, elements = 1000000}

-- A message quotes the expression; a very long one is cut so the message stays readable.
local function quote(src)
  if #src > 120 then return src:sub(1, 100) .. string.format("... (%d characters)", #src) end
  return src
end

local function fail(src, msg, col)
  if col then msg = msg .. " at column " .. col end
  error(string.format('expression "%s": %s', quote(src), msg), 0)
end

-- ---- tokens ---------------------------------------------------------------------------------

local keywords = {["for"] = true, ["in"] = true, ["if"] = true, ["else"] = true, ["and"] = true,
                  ["or"] = true, ["not"] = true, ["True"] = true, ["False"] = true}
local rejected_keywords = {lambda = "lambda", import = "import", None = "None", is = "'is'",
                           yield = "yield", await = "await", async = "async", del = "del"}
local ops3 = {["**="] = true, ["//="] = true, ["<<="] = true, [">>="] = true}
local ops2 = {["**"] = true, ["//"] = true, ["=="] = true, ["!="] = true, ["<="] = true,
              [">="] = true, ["<<"] = true, [">>"] = true, ["+="] = true, ["-="] = true,
              ["*="] = true, ["/="] = true, ["->"] = true, [":="] = true}
local ops1 = "+-*/%()[],.<>=:&|^~@{};!"
local unsupported_ops = {["<<"] = true, [">>"] = true, ["&"] = true, ["|"] = true, ["^"] = true,
                         ["~"] = true, ["@"] = true, ["{"] = true, ["}"] = true, [":"] = true,
                         [";"] = true, ["="] = true, ["!"] = true, ["->"] = true, [":="] = true}

local function parse_int_literal(src, text, base, col)
  local digits = text:gsub("_", "")
  local v = 0
  local limit = math.maxinteger
  for i = 1, #digits do
    local d = tonumber(digits:sub(i, i), base)
    if v > (limit - d) // base then fail(src, "integer literal " .. text .. " is too large", col) end
    v = v * base + d
  end
  return v
end

local function tokenize(src)
  local toks, i, n = {}, 1, #src
  while i <= n do
    local c = src:sub(i, i)
    if c:match("%s") then
      i = i + 1
    elseif c:match("%d") or (c == "." and src:sub(i + 1, i + 1):match("%d")) then
      local col = i
      local text, v
      local prefix = src:sub(i, i + 1):lower()
      local base = ({["0x"] = 16, ["0o"] = 8, ["0b"] = 2})[prefix]
      if base then
        local pat = ({[16] = "^[%x_]+", [8] = "^[0-7_]+", [2] = "^[01_]+"})[base]
        local digits = src:match(pat, i + 2)
        if not digits or digits:sub(1, 1) == "_" and #digits == 1 then
          fail(src, "malformed number", col)
        end
        text = src:sub(i, i + 1 + #digits)
        v = parse_int_literal(src, digits, base, col)
      else
        text = src:match("^%d[%d_]*", i) or ""
        local frac = src:match("^%.[%d_]*", i + #text)
        local is_float = false
        if frac then text = text .. frac; is_float = true end
        local exp = src:match("^[eE][-+]?%d[%d_]*", i + #text)
        if exp then text = text .. exp; is_float = true end
        if text:find("__") or text:find("_$") or text:find("_[.eE]") or text:find("[.eE]_") then
          fail(src, "malformed number " .. text, col)
        end
        if is_float then
          v = tonumber((text:gsub("_", "")))
          if not v then fail(src, "malformed number " .. text, col) end
          v = v + 0.0
        else
          if text:match("^0%d") and text:match("[1-9]") then
            fail(src, "leading zeros in an integer literal (" .. text .. ") are not allowed", col)
          end
          v = parse_int_literal(src, text, 10, col)
        end
      end
      local after = src:sub(i + #text, i + #text)
      if after:match("[%w_]") then
        if after:lower() == "j" then fail(src, "complex numbers are not supported", col) end
        fail(src, "malformed number " .. text .. after, col)
      end
      toks[#toks + 1] = {t = "num", v = v, col = col, text = text}
      i = i + #text
    elseif c:match("[%a_]") then
      local name = src:match("^[%w_]+", i)
      if rejected_keywords[name] then
        fail(src, rejected_keywords[name] .. " is not part of the expression language", i)
      end
      toks[#toks + 1] = {t = keywords[name] and "kw" or "name", v = name, col = i}
      i = i + #name
    elseif c == '"' or c == "'" then
      fail(src, "string literals are not part of the expression language", i)
    else
      local op
      if ops3[src:sub(i, i + 2)] then op = src:sub(i, i + 2)
      elseif ops2[src:sub(i, i + 1)] then op = src:sub(i, i + 1)
      elseif ops1:find(c, 1, true) then op = c end
      if not op then fail(src, string.format('unexpected character "%s"', c), i) end
      local prev, before = toks[#toks], toks[#toks - 1]
      if op == "=" and prev and prev.t == "name" and before and before.t == "op" and
         (before.v == "(" or before.v == ",") then
        fail(src, "keyword arguments are not supported", prev.col)
      end
      if unsupported_ops[op] or op:sub(-1) == "=" and op ~= "==" and op ~= "!=" and op ~= "<="
         and op ~= ">=" then
        fail(src, string.format('operator "%s" is not part of the expression language', op), i)
      end
      toks[#toks + 1] = {t = "op", v = op, col = i}
      i = i + #op
    end
    if #toks > M.limits.tokens then
      fail(src, string.format("too long (more than %d tokens)", M.limits.tokens))
    end
  end
  local last = #(src:gsub("%s+$", ""))
  toks[#toks + 1] = {t = "eof", col = math.max(last, 1)}
  return toks
end

-- ---- parser ---------------------------------------------------------------------------------

local builtins = {int = true, float = true, min = true, max = true, abs = true}
local math_funcs = {sqrt = true, log = true, log2 = true, log10 = true, exp = true, pow = true,
                    ceil = true, floor = true, trunc = true, fabs = true, isqrt = true}
local math_consts = {pi = math.pi, e = math.exp(1), tau = 2 * math.pi, inf = math.huge,
                     nan = 0.0 / 0.0}

local Parser = {}
Parser.__index = Parser

function Parser:peek() return self.toks[self.pos] end
function Parser:next()
  local t = self.toks[self.pos]
  self.pos = self.pos + 1
  return t
end
function Parser:is(t, v)
  local tok = self.toks[self.pos]
  return tok.t == t and (v == nil or tok.v == v)
end
function Parser:unexpected(tok)
  tok = tok or self:peek()
  if tok.t == "eof" then fail(self.src, "unexpected end", tok.col) end
  fail(self.src, string.format('unexpected "%s"', tok.text or tostring(tok.v)), tok.col)
end
function Parser:expect(t, v)
  if not self:is(t, v) then self:unexpected() end
  return self:next()
end

-- expression, not_test, factor and power are where the parser recurses: each counts one level.
function Parser:enter()
  self.depth = self.depth + 1
  if self.depth > M.limits.depth then
    fail(self.src, string.format("nested too deeply (more than %d levels)", M.limits.depth), self:peek().col)
  end
end

function Parser:expression()
  self:enter()
  local e = self:expression_body()
  self.depth = self.depth - 1
  return e
end

function Parser:expression_body()
  local tok = self:peek()
  local e = self:or_test()
  if self:is("kw", "if") then
    self:next()
    local cond = self:or_test()
    self:expect("kw", "else")
    local other = self:expression()
    return {k = "if", cond = cond, a = e, b = other, col = tok.col}
  end
  return e
end

function Parser:or_test()
  local e = self:and_test()
  while self:is("kw", "or") do
    local tok = self:next()
    e = {k = "or", l = e, r = self:and_test(), col = tok.col}
  end
  return e
end

function Parser:and_test()
  local e = self:not_test()
  while self:is("kw", "and") do
    local tok = self:next()
    e = {k = "and", l = e, r = self:not_test(), col = tok.col}
  end
  return e
end

function Parser:not_test()
  if self:is("kw", "not") then
    local tok = self:next()
    self:enter()
    local e = self:not_test()
    self.depth = self.depth - 1
    return {k = "not", e = e, col = tok.col}
  end
  return self:comparison()
end

local cmp_ops = {["<"] = true, [">"] = true, ["<="] = true, [">="] = true, ["=="] = true, ["!="] = true}

function Parser:comparison()
  local first = self:arith()
  if not (self:peek().t == "op" and cmp_ops[self:peek().v]) and not self:is("kw", "in") and
     not self:is("kw", "not") then
    return first
  end
  local node = {k = "cmp", operands = {first}, ops = {}, cols = {}}
  while true do
    local tok = self:peek()
    if tok.t == "op" and cmp_ops[tok.v] then
      self:next()
      node.ops[#node.ops + 1] = tok.v
      node.cols[#node.cols + 1] = tok.col
      node.operands[#node.operands + 1] = self:arith()
    elseif tok.t == "kw" and (tok.v == "in" or tok.v == "not") then
      fail(self.src, "membership tests ('in') are not part of the expression language", tok.col)
    else
      break
    end
  end
  return node
end

function Parser:arith()
  local e = self:term()
  while self:is("op", "+") or self:is("op", "-") do
    local tok = self:next()
    e = {k = "bin", op = tok.v, l = e, r = self:term(), col = tok.col}
  end
  return e
end

local term_ops = {["*"] = true, ["/"] = true, ["//"] = true, ["%"] = true}
function Parser:term()
  local e = self:factor()
  while self:peek().t == "op" and term_ops[self:peek().v] do
    local tok = self:next()
    e = {k = "bin", op = tok.v, l = e, r = self:factor(), col = tok.col}
  end
  return e
end

function Parser:factor()
  if self:is("op", "-") or self:is("op", "+") then
    local tok = self:next()
    self:enter()
    local e = self:factor()
    self.depth = self.depth - 1
    return {k = "unary", op = tok.v, e = e, col = tok.col}
  end
  return self:power()
end

function Parser:power()
  local base = self:primary()
  if self:is("op", "**") then
    local tok = self:next()
    -- The exponent is a factor: 2 ** -1 is 0.5, and 2 ** 3 ** 2 is 2 ** 9.
    self:enter()
    local exponent = self:factor()
    self.depth = self.depth - 1
    return {k = "bin", op = "**", l = base, r = exponent, col = tok.col}
  end
  return base
end

function Parser:call_args()
  local args = {}
  self:expect("op", "(")
  if not self:is("op", ")") then
    repeat
      if self:is("op", "*") or self:is("op", "**") then
        fail(self.src, "argument unpacking is not supported", self:peek().col)
      end
      args[#args + 1] = self:expression()
      if not self:is("op", ",") then break end
      self:next()
    until self:is("op", ")")
  end
  self:expect("op", ")")
  return args
end

function Parser:primary()
  local tok = self:peek()
  local e
  if tok.t == "num" then
    self:next()
    e = {k = "num", v = tok.v, col = tok.col}
  elseif tok.t == "kw" and (tok.v == "True" or tok.v == "False") then
    self:next()
    e = {k = "num", v = tok.v == "True", col = tok.col}
  elseif tok.t == "name" then
    self:next()
    if tok.v == "math" and self:is("op", ".") then
      self:next()
      local attr = self:expect("name")
      if math_funcs[attr.v] then
        if not self:is("op", "(") then
          fail(self.src, "math." .. attr.v .. " must be called", attr.col)
        end
        e = {k = "call", fn = "math." .. attr.v, args = self:call_args(), col = tok.col}
      elseif math_consts[attr.v] then
        e = {k = "num", v = math_consts[attr.v], col = tok.col}
      else
        fail(self.src, "math." .. attr.v .. " is not available", attr.col)
      end
    elseif self:is("op", "(") then
      if not builtins[tok.v] then
        local what = tok.v == "range" and "range() is allowed only in a list comprehension"
          or string.format('function "%s" is not available (int, float, min, max, abs and math.* are)', tok.v)
        fail(self.src, what, tok.col)
      end
      e = {k = "call", fn = tok.v, args = self:call_args(), col = tok.col}
    else
      e = {k = "name", name = tok.v, col = tok.col}
    end
  elseif tok.t == "op" and tok.v == "(" then
    self:next()
    if self:is("op", ")") then fail(self.src, "tuples are not supported", tok.col) end
    e = self:expression()
    if self:is("op", ",") then fail(self.src, "tuples are not supported", self:peek().col) end
    self:expect("op", ")")
  elseif tok.t == "op" and tok.v == "[" then
    e = self:list()
  else
    self:unexpected(tok)
  end
  -- trailers
  while true do
    local t = self:peek()
    if t.t == "op" and t.v == "." then
      fail(self.src, "attribute access is not allowed (only math.NAME)", t.col)
    elseif t.t == "op" and t.v == "[" then
      fail(self.src, "subscripts are not supported", t.col)
    elseif t.t == "op" and t.v == "(" then
      fail(self.src, "only int, float, min, max, abs and math.* can be called", t.col)
    else
      break
    end
  end
  return e
end

function Parser:list()
  local open = self:expect("op", "[")
  if self:is("op", "]") then
    self:next()
    return {k = "list", items = {}, col = open.col}
  end
  local first = self:expression()
  if self:is("kw", "for") then
    local clauses = {}
    while self:is("kw", "for") or self:is("kw", "if") do
      local kw = self:next()
      if kw.v == "for" then
        local var = self:expect("name")
        if self:is("op", ",") then fail(self.src, "tuple targets are not supported", self:peek().col) end
        self:expect("kw", "in")
        local iter
        if self:is("name", "range") then
          local r = self:next()
          local args = self:call_args()
          if #args < 1 or #args > 3 then
            fail(self.src, "range() takes 1 to 3 arguments, got " .. #args, r.col)
          end
          iter = {k = "range", args = args, col = r.col}
        else
          iter = self:or_test()
        end
        clauses[#clauses + 1] = {var = var.v, iter = iter}
      else
        clauses[#clauses + 1] = {cond = self:or_test()}
      end
    end
    self:expect("op", "]")
    return {k = "comp", elt = first, clauses = clauses, col = open.col}
  end
  local items = {first}
  while self:is("op", ",") do
    self:next()
    if self:is("op", "]") then break end
    items[#items + 1] = self:expression()
  end
  self:expect("op", "]")
  return {k = "list", items = items, col = open.col}
end

local parse_cache = setmetatable({}, {__mode = "v"})

function M.parse(src)
  if type(src) ~= "string" then
    error(string.format("an expression must be a string, got %s", type(src)), 0)
  end
  local cached = parse_cache[src]
  if cached then return cached end
  if src:match("^%s*$") then fail(src, "empty expression") end
  local p = setmetatable({src = src, toks = tokenize(src), pos = 1, depth = 0}, Parser)
  local ast = p:expression()
  if not p:is("eof") then p:unexpected() end
  local root = {k = "root", src = src, e = ast}
  parse_cache[src] = root
  return root
end

-- ---- evaluation -----------------------------------------------------------------------------

local function tname(v)
  if v == true or v == false then return "bool" end
  local mt = math.type(v)
  if mt == "integer" then return "int" elseif mt == "float" then return "float" end
  if type(v) == "table" and getmetatable(v) == LIST then return "list" end
  if type(v) == "string" then return "str" end
  return type(v)
end

local function is_list(v) return type(v) == "table" and getmetatable(v) == LIST end

local Eval = {}
Eval.__index = Eval

function Eval:fail(msg, col) fail(self.src, msg, col) end

-- The work budget: n steps (n list items) more, or the evaluation stops. Counts are compared as
-- floats so a huge n (10**18 repetitions) cannot wrap.
function Eval:charge_steps(n, col)
  self.steps = self.steps - n
  if self.steps < 0 then
    self:fail(string.format("evaluation budget exceeded (more than %d steps)", M.limits.steps), col)
  end
end

function Eval:charge_elements(n, col)
  self.elements = self.elements - n
  if self.elements < 0 then
    self:fail(string.format("evaluation budget exceeded (lists of more than %d items in all)",
      M.limits.elements), col)
  end
  self:charge_steps(n, col)
end

-- A number from an int/float/bool operand (bool is an int, as in Python).
function Eval:num(v, op, other, col)
  if type(v) == "number" then return v end
  if v == true then return 1 elseif v == false then return 0 end
  if op then
    self:fail(string.format("unsupported operand type(s) for %s: '%s' and '%s'", op,
      tname(v), tname(other)), col)
  end
  self:fail(string.format("expected a number, got %s", tname(v)), col)
end

local function is_int(v) return math.type(v) == "integer" end

function Eval:add(a, b, col, op)
  local x, y = self:num(a, op, b, col), self:num(b, op, a, col)
  if op == "-" then
    if is_int(x) and is_int(y) then
      local r = x - y
      if (x >= 0) ~= (y >= 0) and (r >= 0) ~= (x >= 0) then self:fail("integer overflow", col) end
      return r
    end
    return x - y
  end
  if is_int(x) and is_int(y) then
    local r = x + y
    if (x >= 0) == (y >= 0) and (r >= 0) ~= (x >= 0) then self:fail("integer overflow", col) end
    return r
  end
  return x + y
end

function Eval:mul(x, y, col)
  if is_int(x) and is_int(y) then
    if x == 0 or y == 0 then return 0 end
    local r = x * y
    if r // y ~= x or (x == -1 and y == math.mininteger) or (y == -1 and x == math.mininteger) then
      self:fail("integer overflow", col)
    end
    return r
  end
  return x * y
end

local function py_float_divmod(x, y)
  local mod = math.fmod(x, y)
  local div = (x - mod) / y
  if mod ~= 0 then
    if (y < 0) ~= (mod < 0) then mod = mod + y; div = div - 1.0 end
  else
    mod = (y < 0) and -0.0 or 0.0
  end
  local floordiv
  if div ~= 0 then
    floordiv = math.floor(div) + 0.0
    if div - floordiv > 0.5 then floordiv = floordiv + 1.0 end
  else
    floordiv = ((x / y) < 0) and -0.0 or 0.0
  end
  return floordiv, mod
end

function Eval:pow(x, y, col)
  if is_int(x) and is_int(y) then
    if y < 0 then
      if x == 0 then self:fail("0 cannot be raised to a negative power", col) end
      return (x + 0.0) ^ y
    end
    local result, base, e = 1, x, y
    while e > 0 do
      if e % 2 == 1 then result = self:mul(result, base, col) end
      e = e // 2
      if e > 0 then base = self:mul(base, base, col) end
    end
    return result
  end
  if x == 0 and y < 0 then self:fail("0.0 cannot be raised to a negative power", col) end
  if x < 0 and y ~= math.floor(y) and y == y then
    self:fail("a negative number cannot be raised to a fractional power", col)
  end
  local r = (x + 0.0) ^ y
  if (r == math.huge or r == -math.huge) and x == x and y == y and
     x ~= math.huge and x ~= -math.huge and y ~= math.huge and y ~= -math.huge then
    self:fail("numerical result out of range", col)
  end
  return r
end

function Eval:binary(node, a, b)
  local op, col = node.op, node.col
  if op == "+" and is_list(a) and is_list(b) then
    self:charge_elements(#a + #b, col)
    local out = setmetatable({}, LIST)
    for _, v in ipairs(a) do out[#out + 1] = v end
    for _, v in ipairs(b) do out[#out + 1] = v end
    return out
  end
  if op == "*" and (is_list(a) or is_list(b)) then
    local list, times = a, b
    if is_list(b) then list, times = b, a end
    if not (is_int(times) or times == true or times == false) then
      self:fail(string.format("can't multiply a list by a non-int of type '%s'", tname(times)), col)
    end
    times = self:num(times)
    local out = setmetatable({}, LIST)
    if times <= 0 or #list == 0 then return out end
    self:charge_elements((times + 0.0) * #list, col)
    for _ = 1, times do for _, v in ipairs(list) do out[#out + 1] = v end end
    return out
  end
  if op == "+" or op == "-" then return self:add(a, b, col, op) end
  local x, y = self:num(a, op, b, col), self:num(b, op, a, col)
  if op == "*" then return self:mul(x, y, col)
  elseif op == "/" then
    if y == 0 then self:fail("division by zero", col) end
    return x / y
  elseif op == "//" then
    if y == 0 then self:fail("integer division or modulo by zero", col) end
    if is_int(x) and is_int(y) then
      if x == math.mininteger and y == -1 then self:fail("integer overflow", col) end
      return x // y
    end
    return (py_float_divmod(x + 0.0, y + 0.0))
  elseif op == "%" then
    if y == 0 then self:fail("integer division or modulo by zero", col) end
    if is_int(x) and is_int(y) then
      if y == -1 then return 0 end
      return x % y
    end
    local _, m = py_float_divmod(x + 0.0, y + 0.0)
    return m
  elseif op == "**" then
    return self:pow(x, y, col)
  end
  self:fail("unknown operator " .. op, col)
end

local function truthy(v)
  if v == false or v == 0 or v == nil then return false end
  if is_list(v) then return #v > 0 end
  return true
end

local function to_int(self, v, col)
  if v ~= v or v == math.huge or v == -math.huge then
    self:fail("cannot convert " .. tostring(v) .. " to an integer", col)
  end
  local t = v >= 0 and math.floor(v) or math.ceil(v)
  local i = math.tointeger(t)
  if i == nil then self:fail("integer overflow converting " .. tostring(v), col) end
  return i
end

function Eval:math_call(name, args, col)
  local function arg(i)
    local v = args[i]
    if v == nil then self:fail("math." .. name .. "() missing an argument", col) end
    return self:num(v, nil, nil, col)
  end
  local nargs = ({pow = 2, log = nil})[name] or 1
  if name == "log" then
    if #args < 1 or #args > 2 then self:fail("math.log() takes 1 or 2 arguments", col) end
  elseif #args ~= nargs then
    self:fail(string.format("math.%s() takes %d argument%s, got %d", name, nargs,
      nargs == 1 and "" or "s", #args), col)
  end
  local x = arg(1)
  local function domain(ok) if not ok then self:fail("math domain error in math." .. name, col) end end
  if name == "sqrt" then domain(x >= 0); return math.sqrt(x)
  elseif name == "log" then
    domain(x > 0)
    if args[2] ~= nil then
      local b = arg(2)
      domain(b > 0 and b ~= 1)
      return math.log(x) / math.log(b)
    end
    return math.log(x) + 0.0
  elseif name == "log2" then domain(x > 0); return math.log(x, 2) + 0.0
  elseif name == "log10" then domain(x > 0); return math.log(x, 10) + 0.0
  elseif name == "exp" then
    local r = math.exp(x)
    if r == math.huge and x ~= math.huge then self:fail("math range error in math.exp", col) end
    return r
  elseif name == "pow" then
    local y = arg(2)
    if x == 0 and y < 0 then self:fail("math domain error in math.pow", col) end
    return self:pow(x + 0.0, y + 0.0, col)
  elseif name == "ceil" then
    if is_int(x) then return x end
    return to_int(self, math.ceil(x), col)
  elseif name == "floor" then
    if is_int(x) then return x end
    return to_int(self, math.floor(x), col)
  elseif name == "trunc" then
    if is_int(x) then return x end
    return to_int(self, x, col)
  elseif name == "fabs" then return math.abs(x + 0.0)
  elseif name == "isqrt" then
    if not is_int(x) then self:fail("math.isqrt() needs an integer, got " .. tname(x), col) end
    domain(x >= 0)
    -- the float root can be off by one either way; 3037000499 is the largest r with r * r
    -- below 2^63, so the corrections never square past the integers
    local r = math.min(math.tointeger(math.floor(math.sqrt(x))) or 3037000499, 3037000499)
    while r * r > x do r = r - 1 end
    while r < 3037000499 and (r + 1) * (r + 1) <= x do r = r + 1 end
    return r
  end
  self:fail("math." .. name .. " is not available", col)
end

function Eval:call(node)
  local args = {}
  for i, a in ipairs(node.args) do args[i] = self:value(a) end
  local fn, col = node.fn, node.col
  if fn:sub(1, 5) == "math." then return self:math_call(fn:sub(6), args, col) end
  if fn == "int" or fn == "float" or fn == "abs" then
    if #args ~= 1 then self:fail(string.format("%s() takes exactly one argument (%d given)", fn, #args), col) end
    local v = self:num(args[1], nil, nil, col)
    if fn == "int" then
      if is_int(v) then return v end
      return to_int(self, v, col)
    elseif fn == "float" then
      return v + 0.0
    else
      if v == math.mininteger then self:fail("integer overflow", col) end
      return math.abs(v)
    end
  end
  -- min / max
  local items = args
  if #args == 1 then
    if not is_list(args[1]) then self:fail(string.format("'%s' object is not iterable", tname(args[1])), col) end
    items = args[1]
  end
  if #items == 0 then self:fail(fn .. "() arg is an empty sequence", col) end
  self:charge_steps(#items, col)
  local best = items[1]
  self:num(best, nil, nil, col)
  for i = 2, #items do
    local v = items[i]
    local x, y = self:num(v, nil, nil, col), self:num(best, nil, nil, col)
    if (fn == "min" and x < y) or (fn == "max" and x > y) then best = v end
  end
  return best
end

function Eval:lookup(name, col)
  for i = #self.scopes, 1, -1 do
    local v = self.scopes[i][name]
    if v ~= nil then return v end
  end
  local v = self.env[name]
  if v == nil then self:fail(string.format('name "%s" is not defined', name), col) end
  if type(v) == "table" and not is_list(v) then
    self:charge_elements(#v, col)
    local list = setmetatable({}, LIST)
    for i, x in ipairs(v) do list[i] = x end
    return list
  end
  return v
end

function Eval:iterate(clauses, idx, elt, out)
  local clause = clauses[idx]
  if clause == nil then
    self:charge_elements(1, elt.col)
    out[#out + 1] = self:value(elt)
    return
  end
  if clause.cond then
    if truthy(self:value(clause.cond)) then self:iterate(clauses, idx + 1, elt, out) end
    return
  end
  local scope = {}
  self.scopes[#self.scopes + 1] = scope
  local iter = clause.iter
  if iter.k == "range" then
    local a = {}
    for i, x in ipairs(iter.args) do
      local v = self:value(x)
      if v == true then v = 1 elseif v == false then v = 0 end
      if not is_int(v) then
        self:fail(string.format("range() needs integers, got %s", tname(v)), iter.col)
      end
      a[i] = v
    end
    local start, stop, step = 0, a[1], 1
    if #a >= 2 then start, stop = a[1], a[2] end
    if #a == 3 then step = a[3] end
    if step == 0 then self:fail("range() arg 3 must not be zero", iter.col) end
    -- the length in floats: stop - start may not fit 64 bits (range(-2**63, 2**63 - 1))
    local count = ((stop + 0.0) - start) / step
    if count > self.steps then
      local why = count > M.limits.steps and string.format(": range() of %.4g items", count) or ""
      self:fail(string.format("evaluation budget exceeded (more than %d steps%s)", M.limits.steps, why), iter.col)
    end
    -- empty ranges first: stop - 1 of range(0, math.mininteger) would wrap around
    if (step > 0 and stop > start) or (step < 0 and stop < start) then
      for v = start, stop - (step > 0 and 1 or -1), step do
        self:charge_steps(1, iter.col)
        scope[clause.var] = v
        self:iterate(clauses, idx + 1, elt, out)
      end
    end
  else
    local list = self:value(iter)
    if not is_list(list) then
      self:fail(string.format("'%s' object is not iterable", tname(list)), iter.col)
    end
    for _, v in ipairs(list) do
      self:charge_steps(1, iter.col)
      scope[clause.var] = v
      self:iterate(clauses, idx + 1, elt, out)
    end
  end
  self.scopes[#self.scopes] = nil
end

function Eval:value(node)
  self:charge_steps(1, node.col)
  local k = node.k
  if k == "num" then return node.v
  elseif k == "name" then return self:lookup(node.name, node.col)
  elseif k == "bin" then return self:binary(node, self:value(node.l), self:value(node.r))
  elseif k == "unary" then
    local v = self:value(node.e)
    if type(v) ~= "number" and type(v) ~= "boolean" then
      self:fail(string.format("bad operand type for unary %s: '%s'", node.op, tname(v)), node.col)
    end
    v = self:num(v)
    if node.op == "+" then return v end
    if v == math.mininteger then self:fail("integer overflow", node.col) end
    return -v
  elseif k == "not" then return not truthy(self:value(node.e))
  elseif k == "and" then
    local l = self:value(node.l)
    if not truthy(l) then return l end
    return self:value(node.r)
  elseif k == "or" then
    local l = self:value(node.l)
    if truthy(l) then return l end
    return self:value(node.r)
  elseif k == "if" then
    if truthy(self:value(node.cond)) then return self:value(node.a) end
    return self:value(node.b)
  elseif k == "cmp" then
    local left = self:value(node.operands[1])
    for i, op in ipairs(node.ops) do
      local right = self:value(node.operands[i + 1])
      local x = self:num(left, op, right, node.cols[i])
      local y = self:num(right, op, left, node.cols[i])
      local ok
      if op == "<" then ok = x < y elseif op == ">" then ok = x > y
      elseif op == "<=" then ok = x <= y elseif op == ">=" then ok = x >= y
      elseif op == "==" then ok = x == y else ok = x ~= y end
      if not ok then return false end
      left = right
    end
    return true
  elseif k == "call" then return self:call(node)
  elseif k == "list" then
    self:charge_elements(#node.items, node.col)
    local out = setmetatable({}, LIST)
    for i, item in ipairs(node.items) do out[i] = self:value(item) end
    return out
  elseif k == "comp" then
    local out = setmetatable({}, LIST)
    self:iterate(node.clauses, 1, node.elt, out)
    return out
  end
  self:fail("cannot evaluate a " .. tostring(k), node.col)
end

-- Evaluates an expression (source text or a parsed AST) with the variables of env.
function M.eval(src_or_ast, env)
  local ast = src_or_ast
  if type(ast) ~= "table" or ast.k ~= "root" then ast = M.parse(src_or_ast) end
  local ev = setmetatable({src = ast.src, env = env or {}, scopes = {}, steps = M.limits.steps,
                           elements = M.limits.elements}, Eval)
  return ev:value(ast.e)
end

-- eval with errors naming the file and the key: "operators/x/config.yaml: metrics.flops_expr: ..."
function M.eval_in(file, key, src, env)
  local ok, v = pcall(M.eval, src, env)
  if not ok then error(string.format("%s: %s: %s", file, key, tostring(v)), 0) end
  return v
end

-- parse with errors naming the file and the key.
function M.parse_in(file, key, src)
  local ok, v = pcall(M.parse, src)
  if not ok then error(string.format("%s: %s: %s", file, key, tostring(v)), 0) end
  return v
end

-- The names an expression reads from its environment (comprehension variables excluded).
function M.free_names(src_or_ast)
  local ast = src_or_ast
  if type(ast) ~= "table" or ast.k ~= "root" then ast = M.parse(src_or_ast) end
  local names = {}
  local function walk(node, bound)
    if type(node) ~= "table" then return end
    if node.k == "name" then
      if not bound[node.name] then names[node.name] = true end
      return
    end
    if node.k == "comp" then
      local inner = setmetatable({}, {__index = bound})
      for _, c in ipairs(node.clauses) do
        if c.var then
          walk(c.iter, inner)
          inner[c.var] = true
        else
          walk(c.cond, inner)
        end
      end
      walk(node.elt, inner)
      return
    end
    for key, child in pairs(node) do
      if key ~= "clauses" and type(child) == "table" then walk(child, bound) end
    end
  end
  walk(ast.e, {})
  return names
end

M.is_list = is_list

return M
