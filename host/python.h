/* python.h: an embedded CPython, opened at run time (dlopen, like the GPU libraries) so the binary
 * builds without Python and runs with whichever libpython 3.x the machine has. Plain C without Lua
 * (tb_python.c is its binding). The interpreter is started once per process; every call goes
 * through the bridge module host/python/tb_bridge.py (embedded at build time), whose functions
 * take (str, int) and return a str, so this file needs a dozen CPython functions and no headers.
 *
 * Where libpython comes from: $TILEBENCH_PYTHON naming a libpython*.so* file is opened as is;
 * naming anything else, it is the interpreter asked (default `python3` on PATH): its sysconfig
 * LIBDIR/INSTSONAME (libpython3.12.so.1.0), then INSTSONAME on the loader's path, then
 * LIBDIR/LDLIBRARY; the interpreter's sys.path (venvs, site-packages) and base prefix are used. */
#ifndef TB_PYTHON_H
#define TB_PYTHON_H

#include <stddef.h>
#include <stdint.h>

#include "gpu/gpu.h"

/* Starts the interpreter (once; later calls return the first outcome). 0 on success; else -1 and
 * *why (static storage) says what is missing: "no python3 on PATH", "libpython not found: ...". */
int python_start(const char **why);

/* What was opened: the library's path and the interpreter's version ("3.12.3"); "" before start. */
const char *python_library(void);
const char *python_version(void);

/* Calls tb_bridge.<fn>(arg, n) holding the GIL. Returns 0 and *out (malloc'd, the caller frees)
 * with the function's string result; -1 and *out = the error text when the call itself failed
 * (the bridge catches Python exceptions and returns them as data, so -1 means a broken bridge). */
int python_call(const char *fn, const char *arg, int64_t n, char **out);

/* A launch-plan step (launch_plan_call_fn) over the bridge's step `id` (made by its make_step):
 * run(id, the native handle of s) enqueues the step's call on s. A Python exception is a
 * GPU_ERR_OTHER whose message is "<name> raised <exception and the operator file's frames>". */
typedef struct python_step {
  long long id; /* 0 once closed */
  char name[96];
} python_step;
gpu_status python_step_run(void *step, gpu_stream s);

#endif
