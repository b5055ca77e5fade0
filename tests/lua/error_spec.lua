-- tb.error: GPU failures as structured errors (class from the backend, text as before), and the
-- class's trip through the worker's JSON pipe to the parent (cmd/worker.lua, worker.lua).
local errors = require("tb.error")
local journal = require("tilebench.journal")
local worker_cmd = require("tilebench.cmd.worker")

describe("tb.error", function()
  it("knows the backend's classes and which lose the context", function()
    for _, c in ipairs({ "no_driver", "no_library", "oom", "launch", "compile", "fault", "timeout", "busy", "other" }) do
      assert.is_table(errors.classes[c], c)
    end
    assert.is_true(errors.classes.fault.context_lost)
    assert.is_true(errors.classes.timeout.context_lost)
    assert.is_false(errors.classes.oom.context_lost)
  end)

  it("reads as its message: tostring, concatenation and string methods", function()
    local e = errors.new("fault", "cuLaunchKernel: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access)", "cuLaunchKernel")
    assert.equal("fault", errors.class(e))
    assert.equal("cuLaunchKernel", e.api)
    assert.equal("cuLaunchKernel: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access)", tostring(e))
    assert.equal("inputs/reference: cuLaunchKernel: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access)",
                 "inputs/reference: " .. e)
    assert.equal(1, e:find("cuLaunchKernel", 1, true))
    assert.equal("CUDA_ERROR_ILLEGAL_ADDRESS", e:match("CUDA_ERROR_[%u_]+"))
    local ok, raised = pcall(error, e)
    assert.is_false(ok)
    assert.equal(e, raised)
  end)

  it("refuses an unknown class and tells plain errors apart", function()
    assert.has_error(function() errors.new("sticky", "x") end, "bad argument #1 to 'new' (unknown error class 'sticky')")
    assert.is_nil(errors.class("cuX: CUDA_ERROR_ILLEGAL_ADDRESS"))
    assert.is_nil(errors.class({ class = "fault", message = "a look-alike table" }))
    assert.is_nil(errors.class(nil))
  end)

  it("survives the worker's JSON pipe: hello errors and rows keep their class", function()
    local e = errors.new("no_driver", "no CUDA driver found (libcuda.so.1: not here)")
    local hello = journal.decode(journal.encode({ hello = { pid = 1, error = tostring(e), error_class = errors.class(e) } }))
    local back = worker_cmd.error_of(hello.hello.error, hello.hello.error_class)
    assert.equal("no_driver", errors.class(back))
    assert.equal(tostring(e), tostring(back))
    -- an answer without a class (an older worker, a Lua failure) stays plain text
    assert.is_nil(errors.class(worker_cmd.error_of("worker: cannot load the runner")))
    assert.is_nil(errors.class(worker_cmd.error_of("x", "no_such_class")))
    local row = journal.decode(journal.encode({ status = "failed", fatal = true, error_class = "fault" }))
    assert.equal("fault", row.error_class)
  end)

  it("keeps the message and adds the traceback for the worker's error answer", function()
    local ok, text = xpcall(function() error(errors.new("launch", "cuLaunchKernel: CUDA_ERROR_INVALID_VALUE")) end,
                            worker_cmd.traceback)
    assert.is_false(ok)
    assert.matches("^cuLaunchKernel: CUDA_ERROR_INVALID_VALUE\nstack traceback:", text)
  end)
end)
