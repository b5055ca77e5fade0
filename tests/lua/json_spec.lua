-- tilebench.json: the one JSON codec (journal, worker pipe, run files, raw results, peaks) and
-- its one NaN/Inf rule: written as the strings "NaN", "Infinity", "-Infinity"; read back as
-- those strings, which json.number turns into the numbers they were.
local json = require("tilebench.json")
local journal = require("tilebench.journal")
local util = require("tilebench.util")

local function is_nan(v) return type(v) == "number" and v ~= v end

describe("tilebench.json", function()
  it("is the codec journal and util use", function()
    assert.equal(json.encode, journal.encode)
    assert.equal(json.decode, journal.decode)
    assert.equal(json.encode_sorted, util.json_encode)
  end)

  it("writes NaN and infinities as strings, in both encoders", function()
    local v = {nan = 0 / 0, inf = math.huge, ninf = -math.huge}
    assert.equal('{"inf":"Infinity","nan":"NaN","ninf":"-Infinity"}', json.encode_sorted(v))
    assert.same(json.decode(json.encode_sorted(v)), json.decode(json.encode(v)))
  end)

  it("reads them back as the strings; json.number gives the numbers they were", function()
    local back = json.decode(json.encode({rows = {{ms = 1.5, max_abs = 0 / 0, got = {1, -math.huge}}}}))
    local r = back.rows[1]
    assert.equal(1.5, r.ms)
    assert.equal("NaN", r.max_abs)
    assert.equal("-Infinity", r.got[2])
    assert.is_true(is_nan(json.number(r.max_abs)))
    assert.equal(-math.huge, json.number(r.got[2]))
    assert.equal(math.huge, json.number("Infinity"))
    assert.equal(1.5, json.number(r.ms))
    assert.is_nil(json.number("nan"))
    assert.is_nil(json.number("1.5")) -- only the rule's three strings, not any numeric text
  end)

  it("accepts the bare NaN and Infinity Python's json writes (TileBench's raw files)", function()
    local v = json.decode('{"a": NaN, "b": Infinity, "c": -Infinity}')
    assert.is_true(is_nan(v.a))
    assert.equal(math.huge, v.b)
    assert.equal(-math.huge, v.c)
  end)

  it("gives integers back as integers, null as nil or json.null", function()
    local v = json.decode('{"i": 3, "f": 2.5, "n": null, "big": 1e300}')
    assert.equal("integer", math.type(v.i))
    assert.equal(2.5, v.f)
    assert.is_nil(v.n)
    assert.equal(1e300, v.big)
    assert.equal(json.null, json.decode('{"n": null}', {keep_null = true}).n)
  end)

  it("writes exact numbers with sorted keys, and 14 digits compactly", function()
    assert.equal('{"a":0.30000000000000004,"b":9007199254740993}', json.encode_sorted({b = 9007199254740993, a = 0.1 + 0.2}))
    assert.equal('[0.3]', json.encode({0.1 + 0.2}))
  end)

  it("answers nil and a message for bad text, refuses cycles", function()
    local v, err = json.decode("{")
    assert.is_nil(v)
    assert.is_string(err)
    local t = {}
    t.t = t
    assert.has_error(function() json.encode(t) end, "JSON cannot hold a table that contains itself")
    assert.has_error(function() json.encode_sorted(t) end, "JSON cannot hold a table that contains itself")
  end)
end)
