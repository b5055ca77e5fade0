-- tb.timer: the option table and argument checks that need no GPU. Measurements are tested by
-- tests/gpu/timer_*.lua; the statistics and stopping rules by tests/c/test_stats.c.
local timer = require('tb.timer')

describe('tb.timer.options', function()
  local by_name = {}
  for _, o in ipairs(timer.options) do by_name[o.name] = o end

  it('declares every option of the measurement protocol with its default', function()
    local want = {
      mode = 'adaptive', ['repeat'] = '100', min_samples = '10', max_noise = '0.005', min_time = '0.05',
      timeout = '15', flush = 'true', graph = 'true', clock = 'cupti', clock_check = 'true',
      throttle_threshold = '0.9', sync_timeout = '60', max_samples = '0', clock_window_ns = '2000',
      flush_mode = 'read', flush_tlb_bytes = '0', clock_interval = '0.005', noise_plateau = '0.02',
    }
    for name, default in pairs(want) do
      assert.is_not_nil(by_name[name], name)
      assert.equals(default, by_name[name].default, name)
      assert.is_true(#by_name[name].desc > 10, name)
    end
    assert.truthy(by_name.warmup.default:find('20 %(fixed%)'))
    assert.truthy(by_name.flush_bytes.default:find('cdna3'))
    assert.same({ 'cupti', 'events' }, by_name.clock.choices)
    assert.same({ 'adaptive', 'fixed' }, by_name.mode.choices)
    assert.same({ 'read', 'write' }, by_name.flush_mode.choices)
    assert.same({ 'split', 'inline' }, by_name.group_events.choices)
  end)

  it('gives the range of every number and integer option, and no range to the others', function()
    for _, o in ipairs(timer.options) do
      if o.type == 'number' or o.type == 'integer' then
        assert.is_number(o.min, o.name)
        assert.is_true(o.max >= o.min, o.name)
      else
        assert.is_nil(o.min, o.name)
      end
    end
    assert.equals(2, by_name.min_samples.min)
    assert.equals(1024, by_name.graph_group.max)
  end)
end)

describe('tb.timer.measure', function()
  it('wants a plan', function()
    assert.has_error(function() timer.measure(nil) end)
    assert.has_error(function() timer.measure({}) end)
  end)
end)
