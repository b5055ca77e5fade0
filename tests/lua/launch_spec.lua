-- tb.launch: scalars of explicit width and the plan checks that need no GPU. Plans of real
-- kernels are exercised by tests/gpu/timer_*.lua.
local launch = require('tb.launch')

describe('tb.launch scalars', function()
  it('carries kind and value', function()
    assert.same({'i32', 5}, {launch.value(launch.i32(5))})
    assert.same({'i64', -3}, {launch.value(launch.i64(-3))})
    assert.same({'u32', 4294967295}, {launch.value(launch.u32(4294967295))})
    assert.same({'u64', 7}, {launch.value(launch.u64(7))})
    assert.same({'f64', 0.1}, {launch.value(launch.f64(0.1))})
    local kind, v = launch.value(launch.f32(1.5))
    assert.equals('f32', kind)
    assert.equals(1.5, v)
    assert.equals('i32(5)', tostring(launch.i32(5)))
  end)

  it('accepts integral floats for integer kinds', function()
    assert.same({'i64', 1024}, {launch.value(launch.i64(1024.0))})
  end)

  it('refuses values out of range', function()
    assert.has_error(function() launch.i32(2147483648) end,
      'bad argument #1 to \'i32\' (out of range for i32: 2147483648)')
    assert.has_no_error(function() launch.i32(-2147483648) end)
    assert.has_error(function() launch.i32(-2147483649) end)
    assert.has_error(function() launch.u32(4294967296) end)
    assert.has_error(function() launch.u32(-1) end)
    assert.has_error(function() launch.u64(-1) end)
    assert.has_error(function() launch.f32(1e39) end)
    assert.has_no_error(function() launch.f32(math.huge) end) -- inf is representable
  end)

  it('refuses non-integers for integer kinds and non-numbers', function()
    assert.has_error(function() launch.i32(1.5) end, "bad argument #1 to 'i32' (not an integer: 1.5)")
    assert.has_error(function() launch.i64('x') end)
    assert.has_error(function() launch.value(5) end)
  end)
end)

describe('tb.launch.plan', function()
  it('needs steps', function()
    assert.has_error(function() launch.plan({}) end,
      "bad argument #1 to 'plan' (a plan needs at least one step)")
    assert.has_error(function() launch.plan() end)
  end)

  it('names the step that is wrong', function()
    assert.has_error(function() launch.plan({5}) end, 'plan step 1 is a number, not a table')
    assert.has_error(function() launch.plan({{}}) end,
      'plan step 1 needs exactly one of fn (a kernel), call (a library call) or copy')
    assert.has_error(function() launch.plan({{fn = 3, copy = {}}}) end,
      'plan step 1 needs exactly one of fn (a kernel), call (a library call) or copy')
    assert.has_error(function() launch.plan({{copy = 3}}) end,
      'plan step 1: copy must be a table {dst = tensor, src = tensor [, bytes = n]}')
    assert.has_error(function() launch.plan({{copy = {dst = 1}}}) end,
      'plan step 1: copy.dst is a number, not a tensor')
    assert.has_error(function() launch.plan({{fn = 3}}) end, 'plan step 1: fn is a number, not a tb.function')
    assert.has_error(function() launch.plan({{call = {}}}) end,
      'plan step 1: call is a table, not a library call object')
    assert.has_error(function() launch.plan({{call = io.stdout}}) end,
      'plan step 1: call has no __tb_run in its metatable (not a library call object)')
  end)

  -- a plan made without a GPU: a call step over a stand-in object (a closed file given the
  -- metatable's one field the plan reads, a tb.dnn graph's __tb_run); never run
  local function callable_plan()
    local f = io.tmpfile()
    f:close()
    debug.setmetatable(f, { __tb_run = debug.getregistry()["tb.dnn.graph"].__tb_run })
    return launch.plan({{call = f}})
  end

  it('takes a note, the one field a plan has, and keeps it', function()
    require("tb.dnn")
    local p = callable_plan()
    assert.is_nil(p.note)
    p.note = "cuDNN engine 3"
    assert.equals("cuDNN engine 3", p.note)
    assert.is_function(p.run) -- the methods are still there
    assert.equals(1, p:steps())
    p.note = nil
    assert.is_nil(p.note)
    assert.has_error(function() p.other = 1 end, "tb.launch plan: only 'note' can be set (got other)")
    assert.has_error(function() p.note = 5 end, "tb.launch plan: note must be a string or nil (got number)")
    p:close()
  end)
end)
