/* fake_backend.c: the host-memory gpu_backend of fake_backend.h, for C unit tests without CUDA.
 * Everything runs synchronously on the calling thread; a fake clock stands in for the GPU's. */
#include "fake_backend.h"
#include "fake_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


fake_state fake;

/* ---- bookkeeping ------------------------------------------------------------------------------ */

struct gpu_module { const fake_kernel *kernels; };
struct gpu_function { const fake_kernel *k; int max_dynamic_smem; };
struct gpu_stream_s { int capturing; int pending_polls; };
struct gpu_event_s { double t_ns; int recorded; };

typedef enum node_kind { NODE_KERNEL, NODE_MEMSET, NODE_EVENT } node_kind;
typedef struct node {
  node_kind kind;
  /* kernel */
  gpu_function *f;
  unsigned grid[3], block[3], smem;
  uint64_t args[FAKE_MAX_ARGS]; /* each argument's bytes, in an aligned 8-byte slot */
  /* memset */
  gpu_ptr p;
  uint32_t value;
  size_t count, width;
  /* event */
  gpu_event e;
} node;

struct gpu_graph_s {
  node *nodes;
  size_t n, cap;
  size_t *event_node; /* capture_end_events: node of event i */
  size_t n_events;
};


typedef struct registered { const char *path; const fake_kernel *kernels; } registered;

static struct {
  void **allocs;          /* live allocations (freed by fake_reset) */
  size_t *alloc_bytes;
  size_t n_allocs, cap_allocs, cap_alloc_bytes;
  gpu_stream streams[64]; /* created streams, to end their part in a capture */
  size_t n_streams;
  gpu_graph capture;      /* the graph being captured (one capture at a time) */
  registered modules[32];
  size_t n_modules;
  /* objects handed out, freed by fake_reset */
  void **objects;
  size_t n_objects, cap_objects;
  gpu_graph *graphs;
  size_t n_graphs, cap_graphs;
} S;

void *fake_grow(void *arr, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return arr;
  size_t c = *cap ? *cap * 2 : 64;
  while (c < need) c *= 2;
  void *a = realloc(arr, c * elem);
  if (a == NULL) {
    fprintf(stderr, "fake_backend: out of host memory\n");
    abort();
  }
  *cap = c;
  return a;
}

static void *new_object(size_t bytes) {
  void *p = calloc(1, bytes);
  if (p == NULL) abort();
  S.objects = fake_grow(S.objects, &S.cap_objects, S.n_objects + 1, sizeof *S.objects);
  S.objects[S.n_objects++] = p;
  return p;
}

fake_op *fake_log_op(fake_op_kind kind, gpu_stream s) {
  fake.ops = fake_grow(fake.ops, &fake.cap_ops, fake.n_ops + 1, sizeof *fake.ops);
  fake_op *op = &fake.ops[fake.n_ops++];
  memset(op, 0, sizeof *op);
  op->kind = kind;
  op->stream = s;
  op->tag = fake_ts_tag();
  op->start_ns = op->end_ns = fake.now_ns;
  return op;
}

size_t fake_count(fake_op_kind kind, const char *kernel) {
  size_t n = 0;
  for (size_t i = 0; i < fake.n_ops; i++)
    if (fake.ops[i].kind == kind && (kernel == NULL || (fake.ops[i].kernel && strcmp(fake.ops[i].kernel, kernel) == 0)))
      n++;
  return n;
}

void fake_register_module(const char *path, const fake_kernel *kernels) {
  for (size_t i = 0; i < S.n_modules; i++)
    if (strcmp(S.modules[i].path, path) == 0) {
      S.modules[i].kernels = kernels;
      return;
    }
  if (S.n_modules < sizeof S.modules / sizeof S.modules[0]) S.modules[S.n_modules++] = (registered){path, kernels};
}

static int in_capture(gpu_stream s) { return S.capture != NULL && s != NULL && s->capturing; }

/* After a submission the stream looks busy for fake.busy_polls queries. */
static void submitted(gpu_stream s) {
  if (s) s->pending_polls = fake.busy_polls;
}

static node *add_node(node_kind kind, gpu_stream s) {
  gpu_graph g = S.capture;
  g->nodes = fake_grow(g->nodes, &g->cap, g->n + 1, sizeof *g->nodes);
  node *nd = &g->nodes[g->n++];
  memset(nd, 0, sizeof *nd);
  nd->kind = kind;
  fake_op *op = fake_log_op(FAKE_OP_CAPTURED, s);
  op->captured = kind == NODE_KERNEL ? FAKE_OP_KERNEL : kind == NODE_MEMSET ? FAKE_OP_MEMSET : FAKE_OP_EVENT;
  return nd;
}

/* ---- execution ------------------------------------------------------------------------------- */

static gpu_status run_kernel(gpu_function *f, const unsigned grid[3], const unsigned block[3], unsigned smem,
                             gpu_stream s, void **args, int in_graph) {
  const fake_kernel *k = f->k;
  uint64_t nth = ++fake.kernels_run;
  if ((fake.fail_launch_at && nth == fake.fail_launch_at) || (fake.fail_kernel && strcmp(fake.fail_kernel, k->name) == 0)) {
    gpu_status st = fake.fail_status ? fake.fail_status : GPU_ERR_FAULT;
    return gpu_set_api_error(st, "fakeLaunchKernel", "fakeLaunchKernel: FAKE_ERROR (injected failure of '%s', launch %llu)",
                             k->name, (unsigned long long)nth);
  }
  fake_launch l = {k->name, {grid[0], grid[1], grid[2]}, {block[0], block[1], block[2]}, smem, s, args, nth, k->user};
  if (k->run) {
    gpu_status st = k->run(&l);
    if (st != GPU_OK) return st;
  }
  if (k->thread) {
    unsigned b[3], t[3];
    for (b[2] = 0; b[2] < grid[2]; b[2]++)
      for (b[1] = 0; b[1] < grid[1]; b[1]++)
        for (b[0] = 0; b[0] < grid[0]; b[0]++)
          for (t[2] = 0; t[2] < block[2]; t[2]++)
            for (t[1] = 0; t[1] < block[1]; t[1]++)
              for (t[0] = 0; t[0] < block[0]; t[0]++) k->thread(&l, b, t);
  }
  fake.now_ns += fake.gap_ns;
  double d = fake.duration ? fake.duration(k->name, nth, fake.duration_user) : k->duration_ns;
  fake_op *op = fake_log_op(FAKE_OP_KERNEL, s);
  op->kernel = k->name;
  op->in_graph = in_graph;
  op->start_ns = fake.now_ns;
  fake.now_ns += d > 0 ? d : 0;
  op->end_ns = fake.now_ns;
  fake_ts_kernel(k->name, op->tag, nth, op->start_ns, op->end_ns);
  submitted(s);
  return GPU_OK;
}

static void run_memset(gpu_ptr p, uint32_t value, size_t count, size_t width, gpu_stream s, int in_graph) {
  unsigned char *d = (unsigned char *)(uintptr_t)p;
  if (width == 1)
    memset(d, (int)value, count);
  else
    for (size_t i = 0; i < count; i++) memcpy(d + 4 * i, &value, 4);
  fake.now_ns += fake.gap_ns;
  fake_op *op = fake_log_op(FAKE_OP_MEMSET, s);
  op->in_graph = in_graph;
  fake.now_ns += fake.memset_ns;
  op->end_ns = fake.now_ns;
  submitted(s);
}

static void run_event(gpu_event e, gpu_stream s, int in_graph) {
  e->t_ns = fake.now_ns;
  e->recorded = 1;
  fake_op *op = fake_log_op(FAKE_OP_EVENT, s);
  op->event = e;
  op->in_graph = in_graph;
}

/* ---- the backend's functions ----------------------------------------------------------------- */

static gpu_status f_init(void) { return GPU_OK; }

static gpu_status f_version(gpu_version_info *v) {
  memset(v, 0, sizeof *v);
  v->driver_version = 1;
  snprintf(v->backend, sizeof v->backend, "fake");
  snprintf(v->driver_path, sizeof v->driver_path, "(host memory)");
  return GPU_OK;
}

static gpu_status f_device_count(int *n) { *n = 1; return GPU_OK; }

static gpu_status f_device_props(int dev, gpu_device_props *p) {
  if (dev != 0) return gpu_set_error(GPU_ERR_INVALID, "fakeDeviceGet: no device %d", dev);
  *p = fake.props;
  return GPU_OK;
}

static gpu_status f_set_device(int dev) {
  return dev == 0 ? GPU_OK : gpu_set_error(GPU_ERR_INVALID, "fakeDeviceGet: no device %d", dev);
}
static gpu_status f_current_device(int *dev) { *dev = 0; return GPU_OK; }

static gpu_status f_synchronize(void) {
  return fake.hang ? gpu_set_error(GPU_ERR_TIMEOUT, "fakeCtxSynchronize: the fake GPU hangs") : GPU_OK;
}

static gpu_status f_mem_alloc(gpu_ptr *p, size_t bytes) {
  *p = 0;
  if (fake.mem_limit && fake.bytes_in_use + bytes > fake.mem_limit)
    return gpu_set_error(GPU_ERR_OOM, "fakeMemAlloc: FAKE_ERROR_OUT_OF_MEMORY (%zu bytes, %zu of %zu in use)", bytes,
                         fake.bytes_in_use, fake.mem_limit);
  void *m = calloc(1, bytes ? bytes : 1);
  if (m == NULL) return gpu_set_error(GPU_ERR_OOM, "fakeMemAlloc: out of host memory (%zu bytes)", bytes);
  S.allocs = fake_grow(S.allocs, &S.cap_allocs, S.n_allocs + 1, sizeof *S.allocs);
  S.allocs[S.n_allocs] = m;
  S.alloc_bytes = fake_grow(S.alloc_bytes, &S.cap_alloc_bytes, S.n_allocs + 1, sizeof *S.alloc_bytes);
  S.alloc_bytes[S.n_allocs++] = bytes;
  fake.bytes_in_use += bytes;
  fake.allocs++;
  *p = (gpu_ptr)(uintptr_t)m;
  return GPU_OK;
}

static gpu_status f_mem_free(gpu_ptr p) {
  for (size_t i = 0; i < S.n_allocs; i++)
    if ((gpu_ptr)(uintptr_t)S.allocs[i] == p) {
      free(S.allocs[i]);
      fake.bytes_in_use -= S.alloc_bytes[i];
      S.allocs[i] = S.allocs[S.n_allocs - 1];
      S.alloc_bytes[i] = S.alloc_bytes[S.n_allocs - 1];
      S.n_allocs--;
      fake.frees++;
      return GPU_OK;
    }
  return gpu_set_error(GPU_ERR_INVALID, "fakeMemFree: 0x%llx was not allocated", (unsigned long long)p);
}

static gpu_status f_mem_info(size_t *free_bytes, size_t *total_bytes) {
  size_t total = fake.mem_limit ? fake.mem_limit : fake.props.total_mem;
  *total_bytes = total;
  *free_bytes = total > fake.bytes_in_use ? total - fake.bytes_in_use : 0;
  return GPU_OK;
}

static gpu_status memset_any(gpu_ptr p, uint32_t value, size_t count, size_t width, gpu_stream s) {
  if (in_capture(s)) {
    node *nd = add_node(NODE_MEMSET, s);
    nd->p = p, nd->value = value, nd->count = count, nd->width = width;
    return GPU_OK;
  }
  run_memset(p, value, count, width, s, 0);
  return GPU_OK;
}

static gpu_status f_memset8(gpu_ptr p, unsigned char value, size_t bytes, gpu_stream s) {
  return memset_any(p, value, bytes, 1, s);
}
static gpu_status f_memset32(gpu_ptr p, uint32_t value, size_t count, gpu_stream s) {
  return memset_any(p, value, count, 4, s);
}

static gpu_status copy(void *dst, const void *src, size_t bytes, gpu_stream s) {
  memmove(dst, src, bytes);
  fake_log_op(FAKE_OP_COPY, s);
  return GPU_OK;
}
static gpu_status f_copy_htod(gpu_ptr dst, const void *src, size_t bytes) {
  return copy((void *)(uintptr_t)dst, src, bytes, NULL);
}
static gpu_status f_copy_dtoh(void *dst, gpu_ptr src, size_t bytes) {
  if (fake.hang) return gpu_set_error(GPU_ERR_TIMEOUT, "fakeMemcpyDtoH: the fake GPU hangs");
  return copy(dst, (const void *)(uintptr_t)src, bytes, NULL);
}
static gpu_status f_copy_dtod(gpu_ptr dst, gpu_ptr src, size_t bytes, gpu_stream s) {
  if (in_capture(s)) return gpu_set_error(GPU_ERR_INVALID, "fakeMemcpyDtoDAsync: not capturable in the fake");
  return copy((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, bytes, s);
}

static gpu_status f_module_load_file(gpu_module **m, const char *path);

static gpu_status f_module_load_image(gpu_module **m, const void *image, size_t size) {
  *m = NULL;
  if (image == NULL) return gpu_set_error(GPU_ERR_INVALID, "fakeModuleLoadData: no image");
  if (size > 0) { /* an image of the fake compiler: "fake-module <program>" */
    char program[256];
    if (sscanf(image, "fake-module %255s", program) != 1)
      return gpu_set_error(GPU_ERR_INVALID, "fakeModuleLoadData: FAKE_ERROR_INVALID_IMAGE (not a fake module)");
    return f_module_load_file(m, program);
  }
  gpu_module *mod = new_object(sizeof *mod);
  mod->kernels = image;
  *m = mod;
  return GPU_OK;
}

static gpu_status f_module_load_file(gpu_module **m, const char *path) {
  for (size_t i = 0; i < S.n_modules; i++)
    if (strcmp(S.modules[i].path, path) == 0) return f_module_load_image(m, S.modules[i].kernels, 0);
  *m = NULL;
  return gpu_set_error(GPU_ERR_INVALID, "fakeModuleLoad: no module registered as '%s'", path);
}

static gpu_status f_module_unload(gpu_module *m) { return GPU_OK; /* freed by fake_reset */ }

static gpu_status f_function_get(gpu_function **f, gpu_module *m, const char *name) {
  *f = NULL;
  for (const fake_kernel *k = m->kernels; k->name; k++)
    if (strcmp(k->name, name) == 0) {
      gpu_function *fn = new_object(sizeof *fn);
      fn->k = k;
      *f = fn;
      return GPU_OK;
    }
  return gpu_set_error(GPU_ERR_INVALID, "fakeModuleGetFunction: FAKE_ERROR_NOT_FOUND (no kernel '%s')", name);
}

static gpu_status f_function_attrs(gpu_function *f, gpu_function_attrs *a) {
  memset(a, 0, sizeof *a);
  a->max_threads_per_block = 1024;
  a->num_params = f->k->nargs ? f->k->nargs : -1;
  size_t off = 0;
  for (int i = 0; i < f->k->nargs && i < 64; i++) {
    size_t b = f->k->arg_bytes[i] ? f->k->arg_bytes[i] : 8;
    off = (off + b - 1) / b * b;
    a->param_offset[i] = off;
    a->param_size[i] = b;
    off += b;
  }
  return GPU_OK;
}

static gpu_status f_set_max_dynamic_smem(gpu_function *f, int bytes) {
  f->max_dynamic_smem = bytes;
  return GPU_OK;
}

static gpu_status f_launch(gpu_function *f, const unsigned grid[3], const unsigned block[3], unsigned smem,
                           gpu_stream s, void **args) {
  if (in_capture(s)) {
    if (f->k->nargs > FAKE_MAX_ARGS)
      return gpu_set_error(GPU_ERR_INVALID, "fakeLaunchKernel: '%s' has more than %d arguments", f->k->name,
                           FAKE_MAX_ARGS);
    for (int i = 0; i < f->k->nargs; i++)
      if (f->k->arg_bytes[i] > 8)
        return gpu_set_error(GPU_ERR_INVALID, "fakeLaunchKernel: '%s' argument %d is over 8 bytes", f->k->name, i);
    node *nd = add_node(NODE_KERNEL, s);
    fake.ops[fake.n_ops - 1].kernel = f->k->name;
    nd->f = f;
    memcpy(nd->grid, grid, sizeof nd->grid);
    memcpy(nd->block, block, sizeof nd->block);
    nd->smem = smem;
    for (int i = 0; i < f->k->nargs; i++) memcpy(&nd->args[i], args[i], f->k->arg_bytes[i] ? f->k->arg_bytes[i] : 8);
    return GPU_OK;
  }
  return run_kernel(f, grid, block, smem, s, args, 0);
}

static gpu_status f_stream_create(gpu_stream *s) {
  *s = NULL;
  if (S.n_streams == sizeof S.streams / sizeof S.streams[0])
    return gpu_set_error(GPU_ERR_OOM, "fakeStreamCreate: more than %zu streams", S.n_streams);
  *s = new_object(sizeof **s);
  S.streams[S.n_streams++] = *s;
  return GPU_OK;
}
static gpu_status f_stream_destroy(gpu_stream s) { return GPU_OK; }

static gpu_status f_stream_wait_timeout(gpu_stream s, double timeout_ms) {
  if (fake.hang) return gpu_set_error(GPU_ERR_TIMEOUT, "fakeStreamQuery: the fake GPU hangs");
  if (s && s->pending_polls > 0) {
    if (timeout_ms != 0) { /* a waiting call: the work finishes within it */
      s->pending_polls = 0;
      return GPU_OK;
    }
    s->pending_polls--;
    return gpu_set_error(GPU_ERR_TIMEOUT, "fakeStreamQuery: still running");
  }
  return GPU_OK;
}

static gpu_status f_stream_synchronize(gpu_stream s) { return f_stream_wait_timeout(s, -1); }

static gpu_status f_event_create(gpu_event *e) {
  *e = new_object(sizeof **e);
  return GPU_OK;
}
static gpu_status f_event_destroy(gpu_event e) { return GPU_OK; }

static gpu_status f_event_record(gpu_event e, gpu_stream s) {
  if (in_capture(s)) {
    add_node(NODE_EVENT, s)->e = e;
    fake.ops[fake.n_ops - 1].event = e;
    return GPU_OK;
  }
  run_event(e, s, 0);
  return GPU_OK;
}

static gpu_status f_stream_wait_event(gpu_stream s, gpu_event e) {
  /* During a capture, a stream that waits on the captured stream joins the capture (the fork). */
  if (S.capture && s && !s->capturing) s->capturing = 1;
  fake_op *op = fake_log_op(FAKE_OP_WAIT_EVENT, s);
  op->event = e;
  return GPU_OK;
}

static gpu_status f_event_synchronize(gpu_event e) {
  return fake.hang ? gpu_set_error(GPU_ERR_TIMEOUT, "fakeEventSynchronize: the fake GPU hangs") : GPU_OK;
}

static gpu_status f_event_elapsed_ms(float *ms, gpu_event start, gpu_event end) {
  if (!start->recorded || !end->recorded)
    return gpu_set_error(GPU_ERR_INVALID, "fakeEventElapsedTime: FAKE_ERROR_INVALID_HANDLE (event not recorded)");
  *ms = (float)((end->t_ns - start->t_ns) * 1e-6);
  return GPU_OK;
}

static gpu_status f_capture_begin(gpu_stream s) {
  if (s == NULL) return gpu_set_error(GPU_ERR_INVALID, "fakeStreamBeginCapture: the legacy stream cannot capture");
  if (S.capture) return gpu_set_error(GPU_ERR_INVALID, "fakeStreamBeginCapture: a capture is under way");
  gpu_graph g = calloc(1, sizeof *g);
  if (g == NULL) abort();
  S.graphs = fake_grow(S.graphs, &S.cap_graphs, S.n_graphs + 1, sizeof *S.graphs);
  S.graphs[S.n_graphs++] = g;
  S.capture = g;
  s->capturing = 1;
  fake.captures++;
  fake_log_op(FAKE_OP_CAPTURE_BEGIN, s);
  return GPU_OK;
}

static void end_capture(void) {
  for (size_t i = 0; i < S.n_streams; i++) S.streams[i]->capturing = 0;
  S.capture = NULL;
}

static gpu_status f_capture_end_events(gpu_stream s, gpu_graph *out, const gpu_event *events, size_t n) {
  *out = NULL;
  if (S.capture == NULL || s == NULL || !s->capturing)
    return gpu_set_error(GPU_ERR_INVALID, "fakeStreamEndCapture: the stream is not capturing");
  gpu_graph g = S.capture;
  end_capture();
  s->capturing = 0;
  fake_log_op(FAKE_OP_CAPTURE_END, s);
  if (n) {
    g->event_node = calloc(n, sizeof *g->event_node);
    if (g->event_node == NULL) abort();
    g->n_events = n;
    for (size_t i = 0; i < n; i++) {
      size_t k = 0;
      while (k < g->n && !(g->nodes[k].kind == NODE_EVENT && g->nodes[k].e == events[i])) k++;
      if (k == g->n) return gpu_set_error(GPU_ERR_INVALID, "fakeGraphGetNodes: event %zu has no node", i);
      g->event_node[i] = k;
    }
  }
  *out = g;
  return GPU_OK;
}

static gpu_status f_capture_end(gpu_stream s, gpu_graph *g) { return f_capture_end_events(s, g, NULL, 0); }

static gpu_status f_graph_launch(gpu_graph g, gpu_stream s) {
  if (in_capture(s)) return gpu_set_error(GPU_ERR_INVALID, "fakeGraphLaunch: graphs do not nest in the fake");
  fake.graph_launches++;
  fake_log_op(FAKE_OP_GRAPH_LAUNCH, s);
  for (size_t i = 0; i < g->n; i++) {
    node *nd = &g->nodes[i];
    if (nd->kind == NODE_KERNEL) {
      void *args[FAKE_MAX_ARGS];
      for (int a = 0; a < nd->f->k->nargs; a++) args[a] = &nd->args[a];
      gpu_status st = run_kernel(nd->f, nd->grid, nd->block, nd->smem, s, args, 1);
      if (st != GPU_OK) return st;
    } else if (nd->kind == NODE_MEMSET) {
      run_memset(nd->p, nd->value, nd->count, nd->width, s, 1);
    } else {
      run_event(nd->e, s, 1);
    }
  }
  submitted(s);
  return GPU_OK;
}

static gpu_status f_graph_destroy(gpu_graph g) {
  for (size_t i = 0; i < S.n_graphs; i++)
    if (S.graphs[i] == g) {
      S.graphs[i] = S.graphs[--S.n_graphs];
      free(g->nodes);
      free(g->event_node);
      free(g);
      return GPU_OK;
    }
  return gpu_set_error(GPU_ERR_INVALID, "fakeGraphExecDestroy: unknown graph");
}

static gpu_status f_event_record_captured(gpu_event e, gpu_stream s) {
  if (!in_capture(s)) return gpu_set_error(GPU_ERR_INVALID, "fakeEventRecordWithFlags: the stream is not capturing");
  add_node(NODE_EVENT, s)->e = e;
  fake.ops[fake.n_ops - 1].event = e;
  return GPU_OK;
}

static gpu_status f_graph_set_event(gpu_graph g, size_t i, gpu_event e) {
  if (i >= g->n_events) return gpu_set_error(GPU_ERR_INVALID, "fakeGraphExecEventRecordNodeSetEvent: no node %zu", i);
  g->nodes[g->event_node[i]].e = e;
  return GPU_OK;
}

static gpu_status f_tensormap_encode(void *out, const gpu_tensormap_spec *spec) {
  memset(out, 0, GPU_TENSORMAP_BYTES);
  memcpy(out, spec, sizeof *spec < GPU_TENSORMAP_BYTES ? sizeof *spec : GPU_TENSORMAP_BYTES);
  return GPU_OK;
}

static void *f_native_context(void) { return NULL; }
static void *f_native_stream(gpu_stream s) { return s; }

/* ---- the compiler ------------------------------------------------------------------------------
 * "Compiles" a source into a module of named C functions: the image names the program, and
 * loading it gives the table fake_register_module registered under that program name (the host
 * kernels' program names are "host/kernels/<file>"). rtc_compile caches these images like cubins. */

static gpu_status c_version(int *major, int *minor) {
  *major = 1, *minor = 0;
  return GPU_OK;
}

static gpu_status c_target(const char *program, const char *arch, rtc_target *t) {
  if (strcmp(arch, "fake") != 0)
    return gpu_set_error(GPU_ERR_INVALID, "rtc_compile: %s: invalid architecture '%s' (the fake compiles for 'fake')",
                         program, arch);
  snprintf(t->extension, sizeof t->extension, "fake");
  t->text_image = 1;
  return GPU_OK;
}

static int c_implicit_options(const char *arch, const char **opts, int n, char *buf, size_t buf_len) { return n; }

static gpu_status c_build(const char *source, const char *program, const rtc_header *headers, int n_headers,
                          const char *const *options, int n_options, const rtc_target *t, rtc_result *out) {
  fake.compiles++;
  if (strstr(source, "FAKE_COMPILE_ERROR")) {
    out->log = strdup("fake.cu(1): error: FAKE_COMPILE_ERROR");
    return gpu_set_error(GPU_ERR_COMPILE, "fakeCompileProgram: %s: FAKE_ERROR_COMPILATION\n%s", program, out->log);
  }
  size_t n = strlen(program) + sizeof "fake-module \n";
  out->image = malloc(n);
  out->log = strdup("");
  if (out->image == NULL || out->log == NULL) abort();
  snprintf(out->image, n, "fake-module %s\n", program);
  out->size = n; /* text: counts its NUL */
  return GPU_OK;
}

static const gpu_compiler fake_compiler = {
  .name = "fakecc",
  .default_arch = "fake",
  .version = c_version,
  .target = c_target,
  .implicit_options = c_implicit_options,
  .build = c_build,
};


static gpu_status p_open(const gpu_device_props *p) {
  (void)p;
  if (fake.power_absent) return gpu_set_api_error(GPU_ERR_NO_LIBRARY, "dlopen", "fake power source absent");
  return GPU_OK;
}

static gpu_status p_read(gpu_power_reading *out) {
  fake.power_reads++;
  memset(out, 0, sizeof *out); /* a field the test does not set is 0: power_now_w unknown */
  if (fake.power_fn) fake.power_fn(fake.power_reads, out, fake.power_user);
  else *out = fake.power_reading;
  return GPU_OK;
}

static gpu_status p_limit(double *w) {
  *w = 700;
  return GPU_OK;
}

static const gpu_power fake_power = {.name = "fake", .open = p_open, .read = p_read, .limit_w = p_limit};

static const gpu_backend fake_gpu = {
  .name = "fake",
  .compiler = &fake_compiler,
  .init = f_init,
  .version = f_version,
  .device_count = f_device_count,
  .device_props = f_device_props,
  .set_device = f_set_device,
  .current_device = f_current_device,
  .synchronize = f_synchronize,
  .mem_alloc = f_mem_alloc,
  .mem_free = f_mem_free,
  .mem_info = f_mem_info,
  .memset8_async = f_memset8,
  .memset32_async = f_memset32,
  .copy_htod = f_copy_htod,
  .copy_dtoh = f_copy_dtoh,
  .copy_dtod_async = f_copy_dtod,
  .module_load_image = f_module_load_image,
  .module_load_file = f_module_load_file,
  .module_unload = f_module_unload,
  .function_get = f_function_get,
  .function_attrs = f_function_attrs,
  .function_set_max_dynamic_smem = f_set_max_dynamic_smem,
  .launch = f_launch,
  .stream_create = f_stream_create,
  .stream_destroy = f_stream_destroy,
  .stream_synchronize = f_stream_synchronize,
  .stream_wait_timeout = f_stream_wait_timeout,
  .event_create = f_event_create,
  .event_destroy = f_event_destroy,
  .event_record = f_event_record,
  .stream_wait_event = f_stream_wait_event,
  .event_synchronize = f_event_synchronize,
  .event_elapsed_ms = f_event_elapsed_ms,
  .capture_begin = f_capture_begin,
  .capture_end = f_capture_end,
  .graph_launch = f_graph_launch,
  .graph_destroy = f_graph_destroy,
  .event_record_captured = f_event_record_captured,
  .capture_end_events = f_capture_end_events,
  .graph_set_event = f_graph_set_event,
  .tensormap_encode = f_tensormap_encode,
  .timestamps = &fake_timestamps_table,
  .power = &fake_power,
  .native_context = f_native_context,
  .native_stream = f_native_stream,
};

const gpu_backend *fake_backend(void) { return &fake_gpu; }

void fake_reset(void) {
  for (size_t i = 0; i < S.n_allocs; i++) free(S.allocs[i]);
  for (size_t i = 0; i < S.n_objects; i++) free(S.objects[i]);
  for (size_t i = 0; i < S.n_graphs; i++) {
    free(S.graphs[i]->nodes);
    free(S.graphs[i]->event_node);
    free(S.graphs[i]);
  }
  free(S.allocs);
  free(S.alloc_bytes);
  free(S.objects);
  free(S.graphs);
  fake_ts_reset();
  free(fake.ops);
  registered keep[32];
  size_t n_keep = S.n_modules;
  memcpy(keep, S.modules, sizeof keep);
  memset(&S, 0, sizeof S);
  memcpy(S.modules, keep, sizeof keep);
  S.n_modules = n_keep;
  memset(&fake, 0, sizeof fake);
  gpu_device_props *p = &fake.props;
  snprintf(p->name, sizeof p->name, "fake");
  snprintf(p->arch, sizeof p->arch, "fake");
  snprintf(p->family, sizeof p->family, "fake");
  snprintf(p->pci_bus_id, sizeof p->pci_bus_id, "0000:00:00.0");
  p->cc_major = 9;
  p->sm_count = 4;
  p->warp_size = 32;
  p->max_threads_per_block = 1024;
  p->max_threads_per_sm = 2048;
  p->regs_per_sm = 65536;
  p->l2_bytes = 1u << 20;
  p->total_mem = 1ull << 32;
  p->clock_khz = 1500000;
  p->mem_clock_khz = 1000000;
  p->mem_bus_width_bits = 256;
  p->smem_per_block = 48 << 10;
  p->smem_per_block_optin = 227 << 10;
  p->smem_per_sm = 228 << 10;
  p->peak_dram_gbs = 64;
}
