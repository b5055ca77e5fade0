/* python.c: the embedded CPython (python.h): finds libpython, opens it with dlopen, starts the
 * interpreter once and calls the bridge module's functions by name. The CPython functions are
 * resolved by name, so no Python header is needed to build and the same binary runs with 3.11
 * (CI, Debian 12) and 3.12 (the GPU machine). */
#define _GNU_SOURCE
#include "python.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* host/python/tb_bridge.py, embedded by cmake/embed_sources.cmake (TABLE=tb_embedded_python). */
struct tb_embedded_source { const char *name; const char *text; size_t size; };
extern const struct tb_embedded_source tb_embedded_python[];

static const char *bridge_source(void) {
  for (const struct tb_embedded_source *s = tb_embedded_python; s->name; s++)
    if (strcmp(s->name, "tb_bridge.py") == 0) return s->text;
  return NULL;
}

typedef struct PyObject PyObject; /* opaque: only pointers cross this file */
#define PY_FILE_INPUT 257         /* Py_file_input, stable since Python 2 */

/* The CPython API used, as a table of descriptors: the name dlsym finds and where it goes. */
static struct {
  void (*Py_InitializeEx)(int);
  int (*Py_IsInitialized)(void);
  const char *(*Py_GetVersion)(void);
  void *(*PyEval_SaveThread)(void);
  int (*PyGILState_Ensure)(void);
  void (*PyGILState_Release)(int);
  PyObject *(*PyImport_AddModule)(const char *);
  PyObject *(*PyModule_GetDict)(PyObject *);
  PyObject *(*PyRun_String)(const char *, int, PyObject *, PyObject *);
  PyObject *(*PyDict_GetItemString)(PyObject *, const char *);
  PyObject *(*PyObject_CallFunction)(PyObject *, const char *, ...);
  const char *(*PyUnicode_AsUTF8)(PyObject *);
  void (*Py_DecRef)(PyObject *);
  void (*PyErr_Print)(void);
} api;

#define SYM(name) {#name, (void **)&api.name}
static const struct { const char *name; void **slot; } symbols[] = {
  SYM(Py_InitializeEx), SYM(Py_IsInitialized), SYM(Py_GetVersion), SYM(PyEval_SaveThread),
  SYM(PyGILState_Ensure), SYM(PyGILState_Release), SYM(PyImport_AddModule), SYM(PyModule_GetDict),
  SYM(PyRun_String), SYM(PyDict_GetItemString), SYM(PyObject_CallFunction), SYM(PyUnicode_AsUTF8),
  SYM(Py_DecRef), SYM(PyErr_Print),
};

static int started;            /* 0: not tried; 1: running; -1: failed (why holds the reason) */
static char why_buf[4096];
static char library[1024];
static char version[64];
static PyObject *bridge;       /* __main__'s dict, where tb_bridge.py's functions live */

static int fail(const char *fmt, const char *a, const char *b) {
  snprintf(why_buf, sizeof why_buf, fmt, a, b);
  started = -1;
  return -1;
}

static void chomp(char *s) {
  size_t n = strlen(s);
  while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r')) s[--n] = 0;
}

/* What the interpreter says about itself: version, base prefixes, the library candidates and
 * sys.path (JSON), one per line. */
static const char PROBE[] =
  "import sys, sysconfig, json, os\n"
  "v = sysconfig.get_config_var\n"
  "d = v('LIBDIR') or ''\n"
  "print('%d.%d.%d' % sys.version_info[:3])\n"
  "print(sys.base_prefix)\n"
  "print(sys.base_exec_prefix)\n"
  "print(os.path.join(d, v('INSTSONAME') or 'none'))\n"
  "print(v('INSTSONAME') or 'none')\n"
  "print(os.path.join(d, v('LDLIBRARY') or 'none'))\n"
  "print(json.dumps([p for p in sys.path if p]))\n";

enum { P_VERSION, P_PREFIX, P_EXEC_PREFIX, P_LIB1, P_LIB2, P_LIB3, P_PATH, P_LINES };

/* Runs `interp -c PROBE`; fills lines (malloc'd) or returns -1 with why set. */
static int probe(const char *interp, char *lines[P_LINES]) {
  /* The interpreter's name is quoted for the shell; a name holding a quote is refused. */
  if (strchr(interp, '\'')) return fail("TILEBENCH_PYTHON '%s' holds a quote%s", interp, "");
  size_t n = strlen(interp) + sizeof PROBE * 2 + 64;
  char *cmd = malloc(n);
  if (!cmd) return fail("out of host memory%s%s", "", "");
  snprintf(cmd, n, "'%s' -c \"$TB_PY_PROBE\" 2>&1", interp);
  setenv("TB_PY_PROBE", PROBE, 1);
  FILE *f = popen(cmd, "r");
  free(cmd);
  if (!f) return fail("cannot run %s%s", interp, "");
  char buf[65536];
  int got = 0;
  while (got < P_LINES && fgets(buf, sizeof buf, f)) {
    chomp(buf);
    lines[got++] = strdup(buf);
  }
  int rc = pclose(f);
  unsetenv("TB_PY_PROBE");
  if (rc != 0 || got < P_LINES) {
    char first[512];
    snprintf(first, sizeof first, "%s", got > 0 ? lines[0] : "no output");
    for (int i = 0; i < got; i++) free(lines[i]);
    return fail("python interpreter '%s' did not answer (%s)", interp, first);
  }
  return 0;
}

static void *open_library(char *lines[P_LINES], char *tried, size_t n) {
  const int order[] = {P_LIB1, P_LIB2, P_LIB3};
  tried[0] = 0;
  for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
    const char *path = lines[order[i]];
    if (strstr(path, "none")) continue;
    void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (h) {
      snprintf(library, sizeof library, "%s", path);
      return h;
    }
    size_t used = strlen(tried);
    snprintf(tried + used, n - used, "%s%s", used ? "; " : "", dlerror());
  }
  return NULL;
}

/* Calls fn(arg, n) with the GIL held (taken by the caller). */
static int call_locked(const char *fn, const char *arg, int64_t n, char **out) {
  PyObject *f = api.PyDict_GetItemString(bridge, fn);
  if (!f) {
    char msg[160];
    snprintf(msg, sizeof msg, "python bridge: no function '%s'", fn);
    *out = strdup(msg);
    return -1;
  }
  PyObject *r = api.PyObject_CallFunction(f, "sL", arg, (long long)n);
  const char *s = r ? api.PyUnicode_AsUTF8(r) : NULL;
  if (!s) {
    api.PyErr_Print(); /* a broken bridge: its traceback goes to stderr */
    if (r) api.Py_DecRef(r);
    char msg[256];
    snprintf(msg, sizeof msg, "python bridge: %s raised (traceback on stderr)", fn);
    *out = strdup(msg);
    return -1;
  }
  *out = strdup(s);
  api.Py_DecRef(r);
  return 0;
}

int python_start(const char **why) {
  *why = why_buf;
  if (started) return started > 0 ? 0 : -1;
  const char *env = getenv("TILEBENCH_PYTHON");
  const char *interp = env && *env ? env : "python3";
  const char *base = strrchr(interp, '/') ? strrchr(interp, '/') + 1 : interp;
  char *lines[P_LINES] = {0};
  void *h = NULL;
  if (strncmp(base, "libpython", 9) == 0) {
    h = dlopen(interp, RTLD_NOW | RTLD_GLOBAL);
    if (!h) return fail("libpython not found: TILEBENCH_PYTHON=%s: %s", interp, dlerror());
    snprintf(library, sizeof library, "%s", interp);
  } else {
    if (probe(interp, lines) != 0) return -1;
    char tried[2048];
    h = open_library(lines, tried, sizeof tried);
    if (!h) {
      for (int i = 0; i < P_LINES; i++) free(lines[i]);
      return fail("libpython not found for %s (no shared libpython: %s)", interp, tried);
    }
  }
  for (size_t i = 0; i < sizeof symbols / sizeof symbols[0]; i++) {
    *symbols[i].slot = dlsym(h, symbols[i].name);
    if (!*symbols[i].slot) {
      for (int j = 0; j < P_LINES; j++) free(lines[j]);
      return fail("%s: no symbol %s (not a CPython 3 library)", library, symbols[i].name);
    }
  }
  if (!api.Py_IsInitialized()) {
    /* The interpreter's own standard library, wherever tilebench's binary lives. */
    if (lines[P_PREFIX] && !getenv("PYTHONHOME")) {
      char home[2100];
      snprintf(home, sizeof home, "%s:%s", lines[P_PREFIX], lines[P_EXEC_PREFIX]);
      setenv("PYTHONHOME", home, 1);
      api.Py_InitializeEx(0); /* 0: Python installs no signal handlers (Ctrl-C stays ours) */
      unsetenv("PYTHONHOME"); /* read at start-up only; never passed to children */
    } else {
      api.Py_InitializeEx(0);
    }
  }
  snprintf(version, sizeof version, "%s", api.Py_GetVersion());
  version[strcspn(version, " ")] = 0;
  const char *src = bridge_source();
  int gil = api.PyGILState_Ensure();
  PyObject *main_mod = api.PyImport_AddModule("__main__");
  bridge = main_mod ? api.PyModule_GetDict(main_mod) : NULL;
  PyObject *r = bridge && src ? api.PyRun_String(src, PY_FILE_INPUT, bridge, bridge) : NULL;
  char *out = NULL;
  int rc = -1;
  if (r) {
    api.Py_DecRef(r);
    rc = call_locked("init", lines[P_PATH] ? lines[P_PATH] : "", 0, &out);
  } else if (src) {
    api.PyErr_Print();
  }
  api.PyGILState_Release(gil);
  for (int i = 0; i < P_LINES; i++) free(lines[i]);
  if (rc != 0 || (out && *out)) {
    fail("python bridge did not start: %s%s", out ? out : "tb_bridge.py failed (traceback on stderr)", "");
    free(out);
    return -1;
  }
  free(out);
  api.PyEval_SaveThread(); /* the GIL is taken per call (PyGILState), from any thread */
  started = 1;
  return 0;
}

const char *python_library(void) { return library; }
const char *python_version(void) { return version; }

int python_call(const char *fn, const char *arg, int64_t n, char **out) {
  const char *why;
  if (python_start(&why) != 0) {
    *out = strdup(why);
    return -1;
  }
  int gil = api.PyGILState_Ensure();
  int rc = call_locked(fn, arg, n, out);
  api.PyGILState_Release(gil);
  return rc;
}

gpu_status python_step_run(void *self, gpu_stream s) {
  python_step *p = self;
  if (p->id == 0) return gpu_set_error(GPU_ERR_INVALID, "torch step is closed");
  const gpu_backend *b = gpu_backend_get();
  int64_t handle = (int64_t)(uintptr_t)(b && b->native_stream ? b->native_stream(s) : (void *)s);
  char id[32];
  snprintf(id, sizeof id, "%lld", p->id);
  char *out = NULL;
  int rc = python_call("run", id, handle, &out);
  if (!out) return gpu_set_error(GPU_ERR_OTHER, "python: out of host memory");
  gpu_status st = GPU_OK;
  if (rc != 0 || out[0]) st = gpu_set_error(GPU_ERR_OTHER, "%s raised %s", p->name, out);
  free(out);
  return st;
}
