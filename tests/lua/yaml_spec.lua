-- tb.yaml: typing of scalars, mapping order, anchors, and errors with file:line:col.
local yaml = require("tb.yaml")
local cjson = require("cjson")

local FIX = (TILEBENCH_HOME or os.getenv("TILEBENCH_HOME") or ".") .. "/tests/fixtures/yaml/"

local function order(t) return getmetatable(t).__order end

local function load_error(text)
  local ok, err = pcall(yaml.load, text, "t.yaml")
  assert.is_false(ok, "expected an error for: " .. text)
  return err
end

describe("tb.yaml scalar typing", function()
  local t = yaml.load_file(FIX .. "good/types.yaml")

  it("reads integers as Lua integers", function()
    for key, want in pairs({int_dec = 42, int_neg = -17, int_pos = 4, int_under = 1048576,
                            int_hex = 31, int_oct = 15, int_bin = 5, int_zero_lead = 10}) do
      assert.are.equal("integer", math.type(t[key]), key)
      assert.are.equal(want, t[key], key)
    end
  end)

  it("reads floats as Lua floats", function()
    for key, want in pairs({float_plain = 1.5, float_exp = 1e-5, float_exp_nodot = 1e-3,
                            float_lead_dot = 0.5, float_trail_dot = 3.0, float_tagged = 3.0}) do
      assert.are.equal("float", math.type(t[key]), key)
      assert.are.equal(want, t[key], key)
    end
    assert.are.equal(math.huge, t.float_inf)
    assert.are.equal(-math.huge, t.float_ninf)
    assert.is_true(t.float_nan ~= t.float_nan)
  end)

  it("reads YAML 1.1 booleans in any case", function()
    assert.is_true(t.bool_true); assert.is_true(t.bool_True); assert.is_true(t.bool_yes)
    assert.is_false(t.bool_NO); assert.is_true(t.bool_on); assert.is_false(t.bool_off)
  end)

  it("reads nulls as yaml.null, the same value as cjson.null", function()
    assert.are.equal(yaml.null, t.null_tilde)
    assert.are.equal(yaml.null, t.null_word)
    assert.are.equal(yaml.null, t.null_empty)
    assert.are.equal(cjson.null, yaml.null)
  end)

  it("keeps quoted, tagged and non-numeric scalars as strings", function()
    assert.are.equal("fp16", t.str_plain)
    assert.are.equal("12", t.str_quoted_int)
    assert.are.equal("1.5", t.str_single)
    assert.are.equal("0x10", t.str_tagged)
    assert.are.equal("1.2.3", t.str_version)
    assert.are.equal("a:b", t.str_colon)
    assert.are.equal("two\nlines\n", t.str_literal)
  end)

  it("reads sequences as arrays without holes", function()
    assert.are.same({1, 2.5, "three", yaml.null, true}, t.list)
    assert.are.equal(5, #t.list)
  end)

  it("loads a scalar document and an empty stream", function()
    assert.are.equal(7, yaml.load("7"))
    assert.is_nil(yaml.load(""))
    assert.is_nil(yaml.load("# only a comment\n"))
  end)
end)

describe("tb.yaml mappings", function()
  it("keeps the document order of keys in the metatable's __order", function()
    local t = yaml.load_file(FIX .. "good/order.yaml")
    assert.are.same({"case_grid"}, order(t))
    assert.are.same({"rows", "cols", "alpha", "Zeta"}, order(t.case_grid))
  end)

  it("reads flow-style mappings such as {expr: ...}", function()
    local t = yaml.load_file(FIX .. "good/flow.yaml")
    assert.are.equal("[1024 * i for i in range(1, 21)]", t.case_grid.N.expr)
    assert.are.same({"expr"}, order(t.case_grid.N))
    assert.are.same({"warmup", "repeat", "use_cuda_graph", "flush_l2", "autotune"}, order(t.benchmark))
    assert.are.equal(3, t.benchmark["repeat"])
    assert.is_false(t.benchmark.autotune)
    assert.are.same({"fp16", "bf16", "fp32"}, t.dtype)
  end)

  it("supports anchors, aliases and merge keys (explicit keys win)", function()
    local t = yaml.load_file(FIX .. "good/anchors.yaml")
    assert.are.same({warmup = 20, ["repeat"] = 3}, t.fast)
    assert.are.same({"warmup", "repeat"}, order(t.fast))
    assert.are.equal(t.sizes, t.again) -- the same table
    assert.are.same({warmup = 20, ["repeat"] = 100, flush_l2 = true}, t.two_merges)
  end)

  it("types keys like values", function()
    local t = yaml.load("1: a\n2.5: b\nx: c\n")
    assert.are.equal("a", t[1])
    assert.are.equal("b", t[2.5])
    assert.are.same({1, 2.5, "x"}, order(t))
  end)
end)

describe("tb.yaml errors", function()
  local function file_error(name)
    local path = FIX .. "bad/" .. name
    local ok, err = pcall(yaml.load_file, path)
    assert.is_false(ok, name .. " should not load")
    assert.are.equal(path, err:sub(1, #path), err)
    return err:sub(#path + 1)
  end

  it("rejects a duplicate key, naming both lines", function()
    assert.are.equal(':3:1: duplicate key "a" (first defined at line 1)', file_error("duplicate_key.yaml"))
  end)

  it("reports libyaml's problem and context with 1-based line and column", function()
    assert.are.equal(":3:4: did not find expected ',' or ']' (while parsing a flow sequence at line 2, column 6)",
      file_error("unclosed_flow.yaml"))
    assert.matches("^:3:2: did not find expected key %(while parsing a block mapping at line 1, column 1%)$",
      file_error("bad_indent.yaml"))
    assert.matches("^:2:1: found character that cannot start any token", file_error("tab.yaml"))
    assert.matches("^:2:1: found unexpected end of stream %(while scanning a quoted scalar at line 1, column 4%)",
      file_error("unterminated_string.yaml"))
  end)

  it("rejects an unknown alias, a second document, huge integers, unknown tags, complex keys", function()
    assert.matches("^:1:4: unknown alias %*missing", file_error("unknown_alias.yaml"))
    assert.matches("^:2:1: expected a single document", file_error("two_documents.yaml"))
    assert.matches("^:1:4: integer 123456789012345678901234567890 is out of the 64%-bit range",
      file_error("int_range.yaml"))
    assert.matches("^:1:4: unsupported tag '!python/object:os.system'", file_error("unsupported_tag.yaml"))
    assert.matches("^:1:3: a mapping key must be a scalar, not a sequence", file_error("complex_key.yaml"))
  end)

  it("names the string source when given one, <string> otherwise", function()
    assert.matches("^t%.yaml:1:8: ", load_error("a: [1, }"))
    local ok, err = pcall(yaml.load, "a: 1\na: 2")
    assert.is_false(ok)
    assert.matches("^<string>:2:1: duplicate key", err)
  end)

  it("rejects a null key, a self-referencing alias and a wrong explicit tag", function()
    assert.matches("a mapping key cannot be null", load_error("~: 1\n"))
    assert.matches("unknown alias %*a", load_error("a: &a [1, *a]\n"))
    assert.matches("cannot read 'abc' as !!int", load_error("x: !!int abc\n"))
  end)

  it("refuses a tag on a sequence or mapping that would change what it means", function()
    -- every collection style (flow, block, nested), every kind of tag but the node's own type
    local tags = {"!!set", "!!omap", "!!pairs", "!!seq", "!!map", "!!binary", "!local",
                  "!<tag:example.com,2000:x>", "!!python/tuple"}
    local shapes = {
      map = {"a: TAG {x: 1}\n", "a: TAG\n  x: 1\n", "TAG {x: 1}\n", "a:\n  b: TAG {x: 1}\n"},
      seq = {"a: TAG [1]\n", "a: TAG\n  - 1\n", "TAG [1]\n", "a:\n  - TAG [1]\n"},
    }
    for kind, texts in pairs(shapes) do
      local what = kind == "map" and "mapping" or "sequence"
      for _, tag in ipairs(tags) do
        for _, text in ipairs(texts) do
          local doc = text:gsub("TAG", tag)
          if tag == "!!" .. kind then
            assert.is_table(yaml.load(doc, "t.yaml")) -- its own type: harmless
          else
            local err = load_error(doc)
            assert.matches("^t%.yaml:%d+:%d+: tag '[^']+' on a " .. what .. " is not supported", err)
          end
        end
      end
    end
    assert.is_table(yaml.load("a: ! [1]\n")) -- the non-specific tag
  end)

  it("says which file cannot be opened", function()
    local ok, err = pcall(yaml.load_file, FIX .. "no-such-file.yaml")
    assert.is_false(ok)
    assert.matches("^cannot open .*no%-such%-file%.yaml: No such file or directory$", err)
  end)

  it("raises a bad-argument error for a non-string", function()
    assert.has_error(function() yaml.load({}) end)
  end)
end)
