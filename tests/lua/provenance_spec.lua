-- tilebench.provenance: what provenance.json records.
local provenance = require("tilebench.provenance")

describe("provenance", function()
  it("records git state, versions, host, argv, protocol and gate", function()
    local rec = provenance.collect({
      argv = { "run", "smoke" }, run_id = "20250101T000000Z-abc123", label = "H200",
      campaign = { name = "smoke", protocol = { mode = "fixed", warmup = 1, ["repeat"] = 3 }, gate = { rho = 0.5 } },
      worker = { versions = { driver = 13000 }, device = { name = "NVIDIA H200", sm_count = 132 } },
    })
    assert.equal("20250101T000000Z-abc123", rec.run_id)
    assert.equal(TILEBENCH_VERSION, rec.tilebench.version)
    assert.equal(_VERSION, rec.lua)
    assert.equal(13000, rec.versions.driver)
    assert.equal(132, rec.device.sm_count)
    assert.same({ "run", "smoke" }, rec.argv)
    assert.equal(3, rec.protocol["repeat"])
    assert.equal(0.5, rec.gate.rho)
    -- the defaults the fields not set ran with (they change between versions)
    assert.equal("interleave", rec.timer_defaults.conditions)
    assert.equal("1", rec.timer_defaults.capped_exposure)
    assert.equal("0.1", rec.timer_defaults.heavy_probe_s)
    assert.is_string(rec.host.hostname)
    local git = rec.tilebench.git
    if git.error then
      assert.matches("not a git checkout", git.error)
    else
      assert.matches("^%x+$", git.sha)
      assert.equal(40, #git.sha)
      assert.is_boolean(git.dirty)
      assert.equal(#git.changed > 0, git.dirty)
    end
  end)

  it("sees a dirty tree", function()
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute(string.format("mkdir -p %s && cd %s && git init -q && git -c user.email=t@t -c user.name=t "
      .. "commit -q --allow-empty -m x && touch new.txt", dir, dir)))
    local g = provenance.git(dir)
    assert.equal(40, #g.sha)
    assert.is_true(g.dirty)
    assert.same({ "?? new.txt" }, g.changed)
    os.execute("rm -rf " .. dir)
    assert.matches("not a git checkout", provenance.git(dir).error)
  end)

  it("writes valid JSON atomically and reads it back", function()
    local path = os.tmpname()
    provenance.write(path, { a = 1, nan = 0 / 0 })
    local rec = provenance.read(path)
    assert.equal(1, rec.a)
    assert.equal("NaN", rec.nan)
    os.remove(path)
  end)
end)
