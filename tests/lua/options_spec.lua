-- options.lua: command-line options as data, and the timer's protocol options generated from
-- tb.timer.options (the C table): the run command's flags and --help, the parser and the
-- campaign's protocol validation all know every option the timer declares.
local options = require('tilebench.options')
local timer = require('tb.timer')
local run = require('tilebench.cmd.run')
local campaign = require('tilebench.campaign')

local function flag_of(o) return options.PROTOCOL_FLAG_NAMES[o.name] or o.name:gsub('_', '-') end

-- A value the option accepts, as a command-line word and as a Lua value.
local function good_value(o)
  if o.type == 'boolean' then return nil, true end
  if o.type == 'choice' then return o.choices[#o.choices], o.choices[#o.choices] end
  return tostring(math.tointeger(o.min) or o.min), o.min
end

describe('options.parse', function()
  local spec = {
    { name = 'n', type = 'integer' }, { name = 'x', type = 'number' }, { name = 'on', type = 'flag' },
    { name = 'pick', type = 'string', choices = { 'a', 'b' } },
  }
  it('converts values and rejects bad ones as usage errors', function()
    local o, pos = options.parse({ '--n', '3', '--x=0.5', '--on', 'file', '--pick', 'b' }, spec, 'cmd')
    assert.same({ n = 3, x = 0.5, on = true, pick = 'b' }, o)
    assert.same({ 'file' }, pos)
    local ok, e = pcall(options.parse, { '--n', '1.5' }, spec, 'cmd')
    assert.is_false(ok)
    assert.is_true(options.is_usage_error(e))
    assert.matches("expects an integer, got '1.5'", e.message)
    ok, e = pcall(options.parse, { '--pick', 'c' }, spec, 'cmd')
    assert.matches('must be one of a, b', e.message)
    ok, e = pcall(options.parse, { '--bogus' }, spec, 'cmd')
    assert.matches("unknown option '%-%-bogus'", e.message)
  end)
end)

describe('the timer protocol options (tb.timer.options)', function()
  it('are all flags of tilebench run, in its --help, and reach the protocol under their own name', function()
    for _, o in ipairs(timer.options) do
      local flag = flag_of(o)
      local word, value = good_value(o)
      assert.truthy(run.usage:find('--' .. flag, 1, true), o.name .. ' missing from the help')
      assert.truthy(run.usage:find(o.desc:sub(1, 30), 1, true), o.name .. "'s description missing from the help")
      local args = o.type == 'boolean' and { '--' .. flag } or { '--' .. flag, word }
      local opts = options.parse(args, run.spec, 'run')
      local p = run.protocol_overrides(opts)
      assert.equals(value, p[o.name], o.name)
      if o.type == 'boolean' then
        p = run.protocol_overrides(options.parse({ '--no-' .. flag }, run.spec, 'run'))
        assert.equals(false, p[o.name], o.name)
      end
    end
  end)

  it('are checked on the command line against the C ranges and choices', function()
    for _, o in ipairs(timer.options) do
      if o.type == 'integer' or o.type == 'number' then
        local ok, e = pcall(options.parse, { '--' .. flag_of(o), tostring(o.max * 2 + 1) }, run.spec, 'run')
        assert.is_false(ok, o.name)
        assert.matches('must be in %[', e.message)
      elseif o.type == 'choice' then
        local ok, e = pcall(options.parse, { '--' .. flag_of(o), 'nonsense' }, run.spec, 'run')
        assert.is_false(ok, o.name)
        assert.matches('must be one of ' .. table.concat(o.choices, ', '), e.message, 1, true)
      end
    end
    local ok, e = pcall(options.parse, { '--repeat', '0' }, run.spec, 'run')
    assert.matches('option %-%-repeat: must be in %[1, 10000000%]', e.message)
    ok, e = pcall(function() run.protocol_overrides(options.parse({ '--flush', '--no-flush' }, run.spec, 'run')) end)
    assert.is_false(ok)
    assert.matches('contradict', e.message)
  end)

  it('keep the implied protocol: --warmup/--repeat select fixed, --max-noise adaptive', function()
    assert.equals('fixed', run.protocol_overrides(options.parse({ '--repeat', '5' }, run.spec, 'run')).mode)
    assert.equals('adaptive', run.protocol_overrides(options.parse({ '--max-noise', '0.01' }, run.spec, 'run')).mode)
    assert.equals('adaptive',
      run.protocol_overrides(options.parse({ '--repeat', '5', '--protocol', 'adaptive' }, run.spec, 'run')).mode)
    assert.equals('events', run.protocol_overrides(options.parse({ '--timer', 'events' }, run.spec, 'run')).clock)
  end)

  it('are the keys a campaign protocol may hold, with their types, choices and ranges', function()
    for _, o in ipairs(timer.options) do
      local _, value = good_value(o)
      assert.is_true(pcall(campaign.validate, { protocol = { [o.name] = value } }, 'c.lua'), o.name)
      local wrong = type(value) == 'string' and 1 or 'text'
      local ok, err = pcall(campaign.validate, { protocol = { [o.name] = wrong } }, 'c.lua')
      assert.is_false(ok, o.name)
      assert.matches("field 'protocol." .. o.name .. "' must be", err, 1, true)
    end
    local ok, err = pcall(campaign.validate, { protocol = { bogus = 1 } }, 'c.lua')
    assert.is_false(ok)
    assert.matches("unknown key 'bogus'", err)
    ok, err = pcall(campaign.validate, { protocol = { mode = 'slow' } }, 'c.lua')
    assert.matches("protocol.mode' must be one of adaptive, fixed, got 'slow'", err)
    ok, err = pcall(campaign.validate, { protocol = { ['repeat'] = 2.5 } }, 'c.lua')
    assert.matches("protocol.repeat' must be an integer in %[1, 10000000%], got 2.5", err)
  end)
end)
