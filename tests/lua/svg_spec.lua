-- svg_spec.lua: the SVG writer: escaping, scales and ticks, and charts whose series carry
-- class="series" and data-series so tests (and readers) can count them.
local svg = require("tilebench.svg")

local function count(s, pat)
  local n = 0
  for _ in s:gmatch(pat) do n = n + 1 end
  return n
end

describe("svg elements", function()
  it("escapes text and attributes", function()
    assert.equals('<text a="&quot;x&amp;y&lt;">a&lt;b</text>', svg.el("text", {a = '"x&y<'}, svg.escape("a<b")))
  end)
  it("writes attributes sorted and numbers short", function()
    assert.equals('<line x1="1.5" y1="2"/>', svg.el("line", {y1 = 2.0, x1 = 1.5}))
  end)
  it("refuses non-finite coordinates", function()
    assert.has_error(function() svg.el("line", {x1 = 0 / 0}) end)
  end)
  it("formats numbers for ticks", function()
    assert.equals("1k", svg.format_number(1000))
    assert.equals("2.5M", svg.format_number(2.5e6))
    assert.equals("0.05", svg.format_number(0.05))
    assert.equals("1e-04", svg.format_number(1e-4))
  end)
end)

describe("svg scales", function()
  it("linear: nice ticks covering the data, mapped to the pixel range", function()
    local s = svg.scale{lo = 0.3, hi = 9.2, a = 0, b = 100}
    assert.equals(0, s.lo)
    assert.equals(10, s.hi)
    assert.same({0, 2, 4, 6, 8, 10}, s.ticks)
    assert.equals(50, s.map(5))
  end)
  it("log: decades as ticks, positions proportional to log10", function()
    local s = svg.scale{lo = 1, hi = 1000, a = 0, b = 300, log = true}
    assert.same({1, 10, 100, 1000}, s.ticks)
    assert.is_true(math.abs(s.map(10) - 100) < 1e-9)
  end)
  it("log with one decade adds 2x and 5x ticks", function()
    local s = svg.scale{lo = 1.2, hi = 4.5, a = 0, b = 100, log = true}
    assert.same({1, 2, 5}, s.ticks)
  end)
  it("log refuses non-positive data", function()
    assert.has_error(function() svg.scale{lo = 0, hi = 10, a = 0, b = 1, log = true} end)
  end)
end)

describe("svg charts", function()
  local series = {
    {name = "cuda", points = {{1, 2}, {10, 20}, {100, 30}}, data = {operator = "vector_add"}},
    {name = "lib", points = {{1, 3}, {10, 25}, {100, 0}}, data = {operator = "vector_add"}},
  }
  it("line chart: one path per series with its data attributes, a point per value, a legend", function()
    local s, dropped = svg.line_chart{title = "t", x_log = true, y_log = true, series = series}
    assert.equals(1, dropped)                        -- lib's 0 cannot sit on a log axis
    assert.equals(2, count(s, '<path class="series"'))
    assert.equals(1, count(s, '<path class="series"[^>]-data%-series="cuda"'))
    assert.equals(2, count(s, 'data%-operator="vector_add"'))
    assert.equals(5, count(s, '<circle class="point"'))
    assert.equals(2, count(s, 'class="legend%-entry"'))
    assert.truthy(s:find('^<svg [^>]*xmlns="http://www.w3.org/2000/svg"'))
    assert.truthy(s:find("</svg>$"))
  end)
  it("line chart without data says so", function()
    local s = svg.line_chart{title = "none", series = {}}
    assert.truthy(s:find("no data", 1, true))
    assert.equals(0, count(s, 'class="series"'))
  end)
  it("scatter chart: a series group per name and the ceilings", function()
    local s = svg.scatter_chart{x_log = true, y_log = true, series = series,
      ceilings = {{name = "4 TB/s", points = {{1, 1}, {100, 100}}}}}
    assert.equals(2, count(s, '<g class="series"'))
    assert.equals(1, count(s, 'class="ceiling"'))
    assert.equals(5, count(s, '<circle class="point"'))
  end)
  it("bar chart: a rect per value, grouped by series, with a reference line", function()
    local s = svg.bar_chart{groups = {"Point-wise", "Data Layout"}, reference = 1,
      series = {{name = "cuda", values = {["Point-wise"] = 1.2, ["Data Layout"] = 0.8}},
                {name = "tile", values = {["Point-wise"] = 2}}}}
    assert.equals(2, count(s, '<g class="series"'))
    assert.equals(3, count(s, '<rect class="bar"'))
    assert.equals(2, count(s, '<rect class="bar"[^>]-data%-series="cuda"'))
    assert.equals(1, count(s, 'class="reference"'))
  end)
end)
