# tb_bridge.py: the Python half of tilebench's embedded interpreter (host/python.c runs this file
# in __main__ once per process). Every function takes (str, int) and returns a str, so the C side
# needs no Python headers; failures come back as data ({"error": traceback}), never as exceptions.
#
#   init(sys_path_json, 0)       -> ""              sys.path of the interpreter that was probed
#   call(desc_json, 0)           -> JSON            no torch: fn(**tensor descriptions) (CI seam test)
#   compile_file(path, 0)        -> ""              or the syntax error (CI checks every torch file)
#   torch_probe("", device)      -> JSON            {python, torch, torch_cuda} or {error}; sets the device
#   torch_versions("", 0)        -> JSON            the same without touching CUDA (provenance)
#   make_step(desc_json, device) -> JSON            {"id": n} or {"error": ...} (kind "plain": no torch)
#   run(id, stream)              -> ""              or the traceback; enqueues the torch call only
#   finish(id, stream)           -> JSON            {"ok": true} | {"wrong": reason} | {"error": ...}
#   close(id, 0)                 -> ""
#   triton_version(driver, 0)    -> JSON            {"triton": version} | {"error": why}
#   triton_compile(desc_json, 0) -> JSON            tb_triton.py's compile_kernel(desc) (desc.driver:
#                                                   its path) | {"error": traceback}
#   triton_launch(desc_json, stream) -> JSON        the same kernel through triton's own launcher
#                                                   (GPU test) | {"error": traceback}
# A tensor description: {"name", "ptr", "shape", "strides" (elements), "dtype" (tilebench's name)}.
import json
import sys
import traceback

_steps = {}
_next_id = [1]
_modules = {}


def init(path_json, _n):
    if path_json:
        sys.path[:] = json.loads(path_json)
    if not getattr(sys, "argv", None):
        sys.argv = ["tilebench"]
    return ""


def _short_traceback():
    """The exception first (a results CSV keeps a reason's first 300 characters), then the frames
    of the operator's own files (<name>_torch.py), innermost last; all frames when none is."""
    etype, exc, tb = sys.exc_info()
    frames = traceback.extract_tb(tb)
    mine = [f for f in frames if f.filename.endswith("_torch.py")]
    lines = ["%s: %s" % (etype.__name__, exc)]
    for f in (mine or frames[-4:]):
        lines.append('  File "%s", line %d, in %s' % (f.filename, f.lineno, f.name))
        if f.line:
            lines.append("    " + f.line.strip())
    return "\n".join(lines)


def _err(where):
    return json.dumps({"error": _short_traceback() + "\n(" + where + ")"})


def _load(path):
    """The operator's <name>_torch.py as a module, loaded once (its traceback names the file)."""
    if path not in _modules:
        import importlib.util
        spec = importlib.util.spec_from_file_location("tb_torch_" + str(len(_modules)), path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        _modules[path] = mod
    return _modules[path]


# tilebench dtype -> (__cuda_array_interface__ typestr, itemsize, the torch dtype to view as)
_TYPES = {
    "fp32": ("<f4", 4, None), "fp16": ("<f2", 2, None), "bf16": ("<i2", 2, "bfloat16"),
    "fp8_e4m3": ("|u1", 1, "float8_e4m3fn"), "int8": ("|i1", 1, None), "uint8": ("|u1", 1, None),
    "int32": ("<i4", 4, None), "int64": ("<i8", 8, None),
}


class Described:
    """A device tensor as its description: the __cuda_array_interface__ (version 2: no stream, so
    a consumer adds no synchronisation) over tilebench's own memory."""

    def __init__(self, d):
        typestr, size, _ = _TYPES[d["dtype"]]
        self.name, self.dtype = d["name"], d["dtype"]
        self.__cuda_array_interface__ = {
            "shape": tuple(d["shape"]), "typestr": typestr, "data": (int(d["ptr"]), False),
            "strides": tuple(s * size for s in d["strides"]), "version": 2}


def call(desc_json, _n):
    try:
        d = json.loads(desc_json)
        fn = getattr(_load(d["file"]), d["function"])
        args = {t["name"]: Described(t) for t in d["inputs"]}
        return json.dumps({"result": fn(**args, case=d.get("params", {}))})
    except Exception:
        return _err("calling the function")


def compile_file(path, _n):
    """Byte-compiles an operator's torch file without running it (no torch needed): "" or the error."""
    try:
        with open(path) as f:
            compile(f.read(), path, "exec")
        return ""
    except Exception:
        return _short_traceback()


def torch_probe(_s, device):
    info = {"python": "%d.%d.%d" % sys.version_info[:3]}
    try:
        import torch
    except Exception as e:
        info["error"] = "torch is not installed for python %s (%s)" % (info["python"], e)
        return json.dumps(info)
    info["torch"] = torch.__version__
    info["torch_cuda"] = torch.version.cuda
    if torch.version.cuda is None:
        info["error"] = "torch %s is not a CUDA build" % torch.__version__
    else:
        import warnings
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            ok = torch.cuda.is_available()
        if not ok:
            why = "; ".join(str(x.message).strip() for x in w) or "torch.cuda.is_available() is False"
            info["error"] = "torch %s (CUDA %s) cannot use the GPU: %s" % (
                torch.__version__, torch.version.cuda, why)
        elif device >= torch.cuda.device_count():
            info["error"] = "torch sees %d devices, not device %d" % (torch.cuda.device_count(), device)
        else:
            # The device's primary context, which tilebench made current: torch's runtime binds to it.
            torch.cuda.set_device(device)
    return json.dumps(info)


def torch_versions(_s, _n):
    """python, torch and torch's CUDA version, without initialising CUDA (import torch is lazy)."""
    info = {"python": "%d.%d.%d" % sys.version_info[:3]}
    try:
        import torch
        info["torch"], info["torch_cuda"] = torch.__version__, torch.version.cuda
    except Exception as e:
        info["error"] = "torch is not installed for python %s (%s)" % (info["python"], e)
    return json.dumps(info)


class Step:
    def __init__(self, d, device):
        import torch
        self.torch = torch
        mod = _load(d["file"])
        self.fn = getattr(mod, d.get("function", "forward"))
        self.case = d.get("params", {})
        self.device = device
        self.ins = {t["name"]: self._tensor(t) for t in d["inputs"]}
        self.outs = {t["name"]: self._tensor(t) for t in d["outputs"]}
        self.kwargs = dict(self.ins)
        prepare = getattr(mod, "prepare", None)
        if prepare is not None:
            # Once per case, untimed: what the published reference builds before its timed call
            # (fp8's column-major view of b, the scales).
            torch.cuda.synchronize(device)
            self.kwargs.update(prepare(case=self.case, **self.ins) or {})
            torch.cuda.synchronize(device)
        self.result = None
        self.streams = {}

    def _tensor(self, t):
        torch = self.torch
        typestr, _, view = _TYPES[t["dtype"]]
        x = torch.as_tensor(Described(t), device="cuda:%d" % self.device)
        if view is not None:
            x = x.view(getattr(torch, view))
        if x.numel() and x.data_ptr() != int(t["ptr"]):
            raise RuntimeError("tensor '%s' was copied, not shared" % t["name"])
        return x

    def stream(self, handle):
        s = self.streams.get(handle)
        if s is None:
            s = self.torch.cuda.ExternalStream(handle, device=self.device)
            self.streams[handle] = s
        return s

    def run(self, handle):
        # The previous result goes back to torch's cache first, so this call's result gets the
        # same block (no allocation from the driver, which a graph capture would refuse).
        self.result = None
        with self.torch.cuda.stream(self.stream(handle)):
            self.result = self.fn(**self.kwargs, case=self.case)

    def finish(self, handle):
        """Checks what the last run returned against tilebench's outputs and copies it there on
        tilebench's stream (outside any timed interval): verification then reads them as any
        implementation's outputs."""
        r = self.result
        names = sorted(self.outs)
        if not isinstance(r, dict):
            if isinstance(r, (tuple, list)):
                if len(r) != len(names):
                    return {"wrong": "returned %d tensors, the operator has %d outputs (%s)"
                            % (len(r), len(names), ", ".join(names))}
                r = dict(zip(names, r))
            else:
                r = {names[0]: r} if len(names) == 1 else r
        if not isinstance(r, dict):
            return {"wrong": "returned %s, not a tensor per output (%s)" % (type(r).__name__, ", ".join(names))}
        for n in names:
            got = r.get(n)
            want = self.outs[n]
            if not isinstance(got, self.torch.Tensor):
                return {"wrong": "output '%s': returned %s, not a tensor" % (n, type(got).__name__)}
            if got.dtype != want.dtype:
                return {"wrong": "output '%s': dtype %s, expected %s" % (n, got.dtype, want.dtype)}
            if tuple(got.shape) != tuple(want.shape):
                return {"wrong": "output '%s': shape %s, expected %s" % (n, tuple(got.shape), tuple(want.shape))}
            if got.device != want.device:
                return {"wrong": "output '%s': on %s, expected %s" % (n, got.device, want.device)}
        with self.torch.cuda.stream(self.stream(handle)):
            for n in names:
                self.outs[n].copy_(r[n])
        self.result = None
        return {"ok": True}


class PlainStep:
    """A step without torch (kind "plain": the CI test of the plan-step seam, tests/c/test_python.c):
    each run calls fn(**described inputs, case); finish reports the calls and the streams."""

    def __init__(self, d):
        self.fn = getattr(_load(d["file"]), d.get("function", "forward"))
        self.ins = {t["name"]: Described(t) for t in d["inputs"]}
        self.case = d.get("params", {})
        self.calls, self.streams, self.result = 0, set(), None

    def run(self, handle):
        self.calls += 1
        self.streams.add(handle)
        self.result = self.fn(**self.ins, case=self.case)

    def finish(self, handle):
        return {"ok": True, "calls": self.calls, "streams": sorted(self.streams), "result": self.result}


def make_step(desc_json, device):
    try:
        d = json.loads(desc_json)
        st = PlainStep(d) if d.get("kind") == "plain" else Step(d, device)
    except Exception:
        return _err("making the torch step")
    sid = _next_id[0]
    _next_id[0] += 1
    _steps[sid] = st
    return json.dumps({"id": sid})


def run(sid, handle):
    try:
        _steps[int(sid)].run(handle)
        return ""
    except Exception:
        return _short_traceback()


def finish(sid, handle):
    try:
        return json.dumps(_steps[int(sid)].finish(handle))
    except Exception:
        return _err("copying the torch outputs")


def close(sid, _n):
    _steps.pop(int(sid), None)
    return ""


def _driver(path):
    """host/python/tb_triton.py, the Triton compile driver (a file of the source tree, not embedded:
    it also runs on its own, `python3 tb_triton.py DESC.json`)."""
    key = "driver:" + path
    if key not in _modules:
        import importlib.util
        spec = importlib.util.spec_from_file_location("tb_triton_driver", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        _modules[key] = mod
    return _modules[key]


def triton_version(driver, _n):
    try:
        return json.dumps({"triton": _driver(driver).version()})
    except Exception as e:
        return json.dumps({"error": "triton does not import for python %d.%d.%d: %s: %s"
                           % (sys.version_info[:3] + (type(e).__name__, e))})


def triton_compile(desc_json, _n):
    return _triton_call(desc_json, lambda drv, d: drv.compile_kernel(d))


def triton_launch(desc_json, stream):
    return _triton_call(desc_json, lambda drv, d: drv.launch_with_triton(d, stream))


def _triton_call(desc_json, fn):
    try:
        d = json.loads(desc_json)
        return json.dumps(fn(_driver(d["driver"]), d))
    except Exception:
        etype, exc, tb = sys.exc_info()
        frames = [f for f in traceback.extract_tb(tb) if f.filename.endswith("_triton.py")]
        lines = ["%s: %s" % (etype.__name__, exc)]
        for f in frames[-3:]:
            lines.append('  File "%s", line %d, in %s' % (f.filename, f.lineno, f.name))
        return json.dumps({"error": "\n".join(lines)})
