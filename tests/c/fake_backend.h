/* fake_backend.h: a gpu_backend (host/gpu/gpu.h) that runs on the host, for C unit tests of
 * everything above the GPU layer (the timer's engine, plans, verification) without CUDA.
 *
 * What it is:
 *   - memory is host memory: a gpu_ptr is the address of a malloc'd block, so a test reads and
 *     writes "device" memory directly ((float *)(uintptr_t)ptr);
 *   - a module is a table of named C functions (fake_kernel, ended by a {NULL} entry), loaded with
 *     module_load_image(image = the table) or module_load_file(path) for a table registered under
 *     that path with fake_register_module; a launch runs its function at once, on the calling
 *     thread (per launch, and/or once per thread of the grid);
 *   - a fake GPU clock (fake.now_ns) advances by each kernel's duration (fake_kernel.duration_ns, or
 *     fake.duration() when set) and each memset's fake.memset_ns; events record that clock, so
 *     event_elapsed_ms gives the kernels' durations exactly;
 *   - streams, events, stream capture and graph replay: every operation is appended to fake.ops
 *     in the order it ran (captured ones once as FAKE_OP_CAPTURED, then again at each replay), so
 *     a test asserts the order (eviction before each run, event layout of graph groups);
 *   - kernel timestamps (gpu_backend.timestamps, "fake": fake_timestamps.c): every executed kernel
 *     leaves a record [start, end) tagged with the id pushed around its launch (a graph launch's
 *     id for its kernels, as CUPTI does), collected like CUPTI's (union of intervals, markers);
 *   - a compiler (gpu_backend.compiler, "fakecc", arch "fake"): rtc_compile of any source named
 *     <program> yields an image that loads as the table registered under <program> with
 *     fake_register_module (host kernels: "host/kernels/verify.cu", ...); a source containing
 *     FAKE_COMPILE_ERROR fails with GPU_ERR_COMPILE; fake.compiles counts real compiles (cache
 *     misses);
 *   - a power source (gpu_backend.power, "fake"): readings of fake.power_reading or fake.power_fn,
 *     absent with fake.power_absent;
 *   - failure injection: a launch that fails (fake.fail_launch_at), memory that runs out
 *     (fake.mem_limit), a stream that stays busy (fake.busy_polls) or hangs (fake.hang), a
 *     timestamp source that is absent (fake.timestamps_absent) or tags nothing.
 *
 * Use: fake_reset(); set fields of `fake`; then call fake_backend()'s functions (or code that takes
 * a const gpu_backend *). Single-threaded. To extend it, add a field to fake_state (zero must
 * mean "as before": fake_reset zeroes the struct) and document it here. */
#ifndef TB_FAKE_BACKEND_H
#define TB_FAKE_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "gpu/gpu.h"

#define FAKE_MAX_ARGS 16

/* What a kernel's function sees of its launch. */
typedef struct fake_launch {
  const char *kernel;          /* the function's name */
  unsigned grid[3], block[3];
  unsigned smem_bytes;
  gpu_stream stream;
  void **args;                 /* pointers to each argument value, as cuLaunchKernel takes them */
  uint64_t nth;                /* 1-based count of kernel executions since fake_reset */
  void *user;                  /* fake_kernel.user */
} fake_launch;

/* The argument values, read as the kernel's code would (no type check). */
/* read through memcpy: a launch's argument pointers need not be aligned for their type (the
 * driver copies them too); a plain load there is undefined behaviour (UBSan reports it) */
#define FAKE_ARG(l, i, type) \
  (__extension__({ type fake_arg_; memcpy(&fake_arg_, (l)->args[i], sizeof fake_arg_); fake_arg_; }))
#define FAKE_PTR(l, i, type) ((type *)(uintptr_t)FAKE_ARG(l, i, gpu_ptr))

typedef struct fake_kernel {
  const char *name;            /* NULL ends a module's table */
  /* Once per launch; a status other than GPU_OK fails the launch (message: gpu_set_error). */
  gpu_status (*run)(const fake_launch *l);
  /* Once per thread of the grid (block-major, x fastest), after run. */
  void (*thread)(const fake_launch *l, const unsigned block_idx[3], const unsigned thread_idx[3]);
  double duration_ns;          /* fake GPU time of one launch (fake.duration overrides) */
  int nargs;                   /* arguments a captured launch copies (0: none) */
  unsigned char arg_bytes[FAKE_MAX_ARGS]; /* size of each, at most 8 (0: 8 bytes) */
  void *user;
} fake_kernel;

typedef enum fake_op_kind {
  FAKE_OP_KERNEL,         /* a kernel executed (directly or by a graph replay) */
  FAKE_OP_MEMSET,         /* memset8 / memset32 executed */
  FAKE_OP_COPY,           /* copy_htod / copy_dtoh / copy_dtod executed */
  FAKE_OP_EVENT,          /* an event recorded (directly or by a replayed event node) */
  FAKE_OP_WAIT_EVENT,     /* stream_wait_event */
  FAKE_OP_CAPTURE_BEGIN,
  FAKE_OP_CAPTURE_END,
  FAKE_OP_CAPTURED,       /* an operation added to the graph being captured (not run) */
  FAKE_OP_GRAPH_LAUNCH,   /* a graph replay begins (its nodes follow as KERNEL/MEMSET/EVENT) */
  FAKE_OP_PUSH, FAKE_OP_POP /* timestamp ids */
} fake_op_kind;

typedef struct fake_op {
  fake_op_kind kind;
  fake_op_kind captured;  /* FAKE_OP_CAPTURED: what was captured */
  const char *kernel;     /* KERNEL: the function's name (static storage of its fake_kernel) */
  gpu_stream stream;
  gpu_event event;        /* EVENT, WAIT_EVENT */
  uint64_t tag;           /* the timestamp id pushed while it ran (0: none); PUSH: the id */
  double start_ns, end_ns;/* on the fake clock */
  int in_graph;           /* executed by a graph replay */
} fake_op;

typedef double (*fake_duration_fn)(const char *kernel, uint64_t nth, void *user);

typedef struct fake_state {
  /* ---- settings (zero = the default); set after fake_reset() ---- */
  gpu_device_props props;        /* what device_props returns; fake_reset fills a small device */
  size_t mem_limit;              /* bytes that may be allocated at once (0: no limit) -> GPU_ERR_OOM */
  double memset_ns;              /* fake GPU time of a memset */
  double gap_ns;                 /* fake GPU time between two operations (launch gaps) */
  fake_duration_fn duration;     /* kernel time by name and execution count (overrides duration_ns) */
  void *duration_user;
  uint64_t fail_launch_at;       /* the n-th kernel execution (1-based, counted like fake_launch.nth)
                                    fails with fail_status (default GPU_ERR_FAULT) ... */
  const char *fail_kernel;       /* ... or, when set, every execution of this kernel from then on */
  gpu_status fail_status;
  int busy_polls;                /* stream_wait_timeout(s, 0) answers GPU_ERR_TIMEOUT this many times
                                    after each submission before GPU_OK (a GPU still busy) */
  int hang;                      /* streams never finish: stream_wait_timeout / synchronize time out */
  int timestamps_absent;         /* timestamps->start fails with GPU_ERR_NO_LIBRARY */
  int timestamps_untagged;       /* records carry no id (a CUPTI that tags nothing) */
  uint64_t timestamps_incomplete_at; /* the record of this kernel execution (1-based, as fake_launch.nth)
                                    lacks its timestamps (start 0), as CUPTI's can */
  double timestamp_skew_ns;      /* each record starts this much before its kernel (overlap, as
                                    CUPTI's records of back-to-back kernels can) */
  /* power source (gpu_backend.power, "fake"): open fails with GPU_ERR_NO_LIBRARY when power_absent;
   * each read returns power_fn's reading (the n-th read, 1-based; fields it leaves alone are 0)
   * when set, else power_reading. power_now_w 0 (not given) is an unknown instantaneous power. */
  int power_absent;
  gpu_power_reading power_reading;
  void (*power_fn)(uint64_t nth, gpu_power_reading *out, void *user);
  void *power_user;
  uint64_t power_reads;          /* reads so far */
  /* ---- what happened (read by tests) ---- */
  fake_op *ops;                  /* every operation in order */
  size_t n_ops, cap_ops;
  double now_ns;                 /* the fake GPU clock */
  uint64_t kernels_run;          /* kernel executions (graph replays included) */
  uint64_t graph_launches, captures, allocs, frees, timestamp_flushes;
  uint64_t compiles;             /* the compiler's builds (cache misses) */
  size_t bytes_in_use;
  int timestamps_started, trace_all_api;
  char marker[64];               /* set_marker's prefix */
} fake_state;

extern fake_state fake;

/* The backend. init() succeeds, one device (index 0) with fake.props. */
const gpu_backend *fake_backend(void);
/* Frees everything (memory, graphs, records), zeroes `fake`, fills fake.props with a small device
 * (name "fake", arch "fake", 4 SMs, 1 MiB L2, 1.5 GHz, warp 32). */
void fake_reset(void);
/* module_load_file(path) then loads this table (kept by pointer). */
void fake_register_module(const char *path, const fake_kernel *kernels);
/* Counting helpers over fake.ops: operations of a kind (kernel == NULL: any name; else kernels
 * of that name). */
size_t fake_count(fake_op_kind kind, const char *kernel);

#endif
