-- device_spec.lua: tb.device without a GPU (what every machine can check) and, where a device is
-- present, the shape of what it reports.
local device = require("tb.device")
local errors = require("tb.error")
local available, why = device.available()

describe("tb.device", function()
  it("available() answers true, or false with the reason, without raising", function()
    assert.is_boolean(available)
    if not available then
      assert.is_string(why)
      assert.truthy(why:find("^no CUDA driver found %(libcuda%.so%.1: .+%)$") or why:find("^cuInit: CUDA_ERROR_")
                    or why:find("^no CUDA device found"), why)
    end
  end)

  it("versions() never raises and says what is missing", function()
    local v = device.versions()
    assert.equals("cuda", v.backend)
    assert.is_string(v.cache_dir)
    if os.getenv("TILEBENCH_CACHE_DIR") then assert.equals(os.getenv("TILEBENCH_CACHE_DIR"), v.cache_dir) end
    assert.is_true((v.driver ~= nil) ~= (v.driver_error ~= nil))
    assert.is_true((v.nvrtc ~= nil) ~= (v.nvrtc_error ~= nil))
    if v.nvrtc then assert.matches("^%d+%.%d+$", v.nvrtc) end
    if v.driver then
      assert.matches("^%d+%.%d+$", v.driver)
      assert.is_true(v.driver_version >= 11000)
      assert.is_string(v.driver_path)
    end
  end)

  if not available then
    describe("without a usable driver", function()
      for _, name in ipairs({ "count", "list", "props", "current", "driver_version", "synchronize", "mem_info" }) do
        it(name .. "() raises the driver's message", function()
          local ok, err = pcall(device[name])
          assert.is_false(ok)
          assert.equals(why, tostring(err))
          assert.equals("no_driver", errors.class(err)) -- the backend's class, not the text
        end)
      end
      it("select() and props(i) raise it too", function()
        local ok, err = pcall(device.select, 0)
        assert.is_false(ok)
        assert.equals(why, tostring(err))
        ok, err = pcall(device.props, 0)
        assert.is_false(ok)
        assert.equals(why, tostring(err))
        assert.equals("no_driver", errors.class(err))
      end)
    end)
  else
    describe("with a device", function()
      it("lists every device with its properties", function()
        local n = device.count()
        assert.is_true(n >= 1)
        local list = device.list()
        assert.equals(n, #list)
        for i, p in ipairs(list) do
          assert.equals(i - 1, p.index)
          assert.matches("^sm_%d+$", p.arch)
          assert.equals(p.cc_major .. "." .. p.cc_minor, p.cc)
          assert.is_true(p.sm_count > 0 and p.l2_bytes > 0 and p.total_mem > 0)
          assert.is_true(p.smem_per_block_optin >= p.smem_per_block)
          assert.matches("^GPU%-%x+%-%x+%-%x+%-%x+%-%x+$", p.uuid)
          assert.is_string(p.pci_bus_id)
        end
      end)
      it("select() refuses an ordinal out of range", function()
        local ok, err = pcall(device.select, device.count())
        assert.is_false(ok)
        assert.matches("out of range", err)
        assert.has_error(function() device.select(-1) end)
      end)
      it("current(), props(), mem_info() describe the device in use", function()
        local cur = device.current()
        assert.equals(cur, device.props().index)
        local free, total = device.mem_info()
        assert.is_true(free > 0 and free <= total)
        device.synchronize()
      end)
    end)
  end
end)
