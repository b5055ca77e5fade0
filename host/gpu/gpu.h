/* gpu.h: the one backend-neutral interface to a GPU driver (devices, memory, modules, launches,
 * streams, events, graphs) with its run-time compiler and vendor BLAS as sub-tables. CUDA fills
 * it (cuda.c, cuda_rtc.c, cuda_blas.c); a HIP backend fills the same tables without changing a
 * caller, and the process picks one at run time (backend.c). No Lua header is included anywhere
 * under host/gpu/, and no CUDA name is used outside host/gpu/cuda*.c.
 *
 * Conventions: every call returns a gpu_status (GPU_OK == 0). On failure the backend records a
 * message naming the API and the driver's error, e.g.
 *   "cuLaunchKernel: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered)"
 * which gpu_last_error() returns (thread-local, valid until the next failing call). */
#ifndef TB_GPU_H
#define TB_GPU_H

#include <stddef.h>
#include <stdint.h>

typedef enum gpu_status {
  GPU_OK = 0,
  GPU_ERR_NO_DRIVER,   /* the driver library could not be opened, or has no device */
  GPU_ERR_NO_LIBRARY,  /* an optional library (NVRTC, CUPTI, cuBLASLt) is absent */
  GPU_ERR_OOM,         /* allocation failed for lack of memory: a case status, not a crash */
  GPU_ERR_INVALID,     /* bad argument, missing symbol, wrong image */
  GPU_ERR_COMPILE,     /* run-time compilation failed; the log is in the message */
  GPU_ERR_FAULT,       /* sticky error: the context is unusable (illegal address, trap, ...) */
  GPU_ERR_TIMEOUT,     /* a wait ran past its limit */
  GPU_ERR_BUSY,        /* resource held by someone else (CUPTI under ncu) */
  GPU_ERR_OTHER
} gpu_status;

const char *gpu_last_error(void);
/* Record an error message (printf-style) for gpu_last_error(); returns st for tail calls. */
gpu_status gpu_set_error(gpu_status st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same, naming the API that failed ("cuLaunchKernel"), which gpu_last_error_api() returns
 * until the next recorded error ("" after gpu_set_error). */
gpu_status gpu_set_api_error(gpu_status st, const char *api, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
const char *gpu_last_error_api(void);

/* The class of a failure, one descriptor per status (error.c): the name Lua sees on a structured
 * error (tb.error: "oom", "fault", "timeout", "launch", "compile", "no_driver", ...) and whether
 * the context is lost after it (a sticky fault, or a kernel still running past its limit): the
 * process must then be replaced. The backend decides which driver errors are which status. */
typedef struct gpu_error_class {
  gpu_status status;
  const char *name;
  int context_lost;
} gpu_error_class;
extern const gpu_error_class gpu_error_classes[]; /* one per status but GPU_OK, then {0, NULL, 0} */
const gpu_error_class *gpu_status_class(gpu_status st); /* NULL for GPU_OK */

typedef uint64_t gpu_ptr; /* device address */
typedef struct gpu_module gpu_module;
typedef struct gpu_function gpu_function;
typedef struct gpu_stream_s *gpu_stream; /* NULL = the default (legacy) stream */
typedef struct gpu_event_s *gpu_event;
typedef struct gpu_graph_s *gpu_graph; /* an instantiated, launchable graph */

typedef struct gpu_device_props {
  int index;
  char name[256];
  char arch[16];     /* "sm_90" (NVIDIA) or "gfx942" (AMD) */
  char family[16];   /* "hopper", "blackwell", "ampere", "ada", "cdna3", ... (verify.arch_overrides) */
  char pci_bus_id[32];
  char uuid[40];
  int cc_major, cc_minor;
  int sm_count;
  int warp_size;
  int max_threads_per_block;
  int max_threads_per_sm;
  int regs_per_sm;
  size_t l2_bytes;
  size_t total_mem;
  int clock_khz;          /* max SM clock */
  int mem_clock_khz;      /* peak memory clock */
  int mem_bus_width_bits;
  size_t smem_per_block;        /* default limit */
  size_t smem_per_block_optin;  /* with the dynamic limit raised */
  size_t smem_per_sm;
  double peak_dram_gbs;   /* 2 * mem_clock * bus_width / 8, the datasheet-style figure */
} gpu_device_props;

typedef struct gpu_function_attrs {
  int num_regs;
  int static_smem_bytes;
  int local_bytes;        /* per-thread local memory (spills, stack) */
  int const_bytes;
  int max_threads_per_block;
  int max_dynamic_smem_bytes;
  int ptx_version, binary_version;
  int num_params;         /* -1 when the driver cannot tell */
  size_t param_offset[64], param_size[64];
} gpu_function_attrs;

typedef struct gpu_version_info {
  int driver_version;     /* e.g. 13000 */
  char backend[16];       /* "cuda" */
  char driver_path[512];  /* where the driver library was found */
} gpu_version_info;

/* A TMA tensor map (cuTensorMapEncodeTiled): `rank` dimensions of elem_bytes-sized elements at
 * `address`, innermost first; strides in bytes of dimensions 1 .. rank-1; a box of box[i]
 * elements per TMA copy; swizzle 0, 32, 64 or 128 bytes. Elements are copied as raw bits
 * (unsigned integer types), out-of-bounds ones as zero bits. */
typedef struct gpu_tensormap_spec {
  gpu_ptr address;
  int elem_bytes, rank, swizzle;
  uint64_t dims[5], strides[4];
  uint32_t box[5];
} gpu_tensormap_spec;
#define GPU_TENSORMAP_BYTES 128

/* Kernel timestamps: the GPU's own start and end time of every kernel, grouped by an id the caller
 * pushes around its launches, so one run of a multi-kernel plan sums as one unit. The timer's
 * "cupti" clock reads them (CUPTI activity records on CUDA: cupti.c); a backend without them sets
 * gpu_backend.timestamps to NULL and the timer times with events. The source is process-wide. */
typedef struct gpu_timestamps {
  const char *name; /* "cupti" */
  /* Opens the source; idempotent (later calls return the first outcome). GPU_ERR_NO_LIBRARY when
   * the library is absent, GPU_ERR_BUSY when another profiler holds it; the message says which. */
  gpu_status (*start)(void);
  const char *(*library_path)(void); /* where it was found ("" before a successful start) */
  /* Every launch between push and pop (a graph launch included) is tagged with id. */
  gpu_status (*push)(uint64_t id);
  gpu_status (*pop)(void);
  /* Fallback for a source that tags no launch: trace every API call instead of launches only. */
  gpu_status (*trace_all_api)(void);
  gpu_status (*flush)(void); /* delivers every buffered record; synchronize the streams first */
  /* Delivers the records of finished work, forcing a flush only when no complete record tagged
   * last_id (the last launch waited for) came without one. */
  gpu_status (*flush_until)(uint64_t last_id);
  void (*flush_counts)(unsigned long *plain, unsigned long *forced); /* diagnostics */
  /* For each id in [first_id, first_id + n): the time (ns) covered by the kernels launched under
   * it (the union of their intervals, tb_clip_next), how many there were, and how many lacked
   * complete timestamps. Forgets every record so far. GPU_ERR_OTHER when records were dropped. */
  gpu_status (*collect)(uint64_t first_id, size_t n, double *kernel_ns, int *kernels, int *incomplete);
  /* Kernels whose name starts with prefix are markers (the eviction kernels that open each sample
   * of a graph group); applies to records kept from then on. */
  void (*set_marker)(const char *prefix);
  /* For graph launches tagged first_id .. first_id + groups - 1, each holding `per` samples laid out
   * as [marker kernels, other kernels] in stream order: for sample j (< N = groups * per) the time
   * the other kernels cover in kernel_ns[j] and their count in kernels[j]; the markers' in
   * kernel_ns[N + j], kernels[N + j]. A launch that does not split into `per` samples, or lacks
   * timestamps, marks its samples incomplete. Forgets every record. Arrays hold 2 * N entries. */
  gpu_status (*collect_groups)(uint64_t first_id, size_t groups, size_t per, double *kernel_ns, int *kernels,
                               int *incomplete);
  void (*discard)(void);        /* forgets every record gathered so far */
  double (*clipped_ns)(void);   /* kernel time the collects removed as overlap, process total */
} gpu_timestamps;

/* Power and clock state, read by the host while the GPU works (NVML on CUDA: nvml.c). The timer
 * reads it around every batch of samples: whether the device was held under a power or thermal
 * cap, its SM clock and its power draw (docs/MEASUREMENT.md, "Power and clock state"). A backend
 * without such a source sets gpu_backend.power to NULL; open() failing is a recorded reason,
 * never an error of the measurement. */
#define GPU_CAP_SW_POWER 0x1u     /* the driver holds the clocks down to stay under the power limit */
#define GPU_CAP_HW_SLOWDOWN 0x2u  /* hardware slowdown (power brake, external signal) */
#define GPU_CAP_SW_THERMAL 0x4u   /* the driver holds the clocks down for temperature */
#define GPU_CAP_HW_THERMAL 0x8u   /* hardware thermal slowdown */
#define GPU_CAP_HW_POWER_BRAKE 0x10u
#define GPU_CAP_ANY 0x1fu         /* every cap above: a sample under any of them is "capped" */
#define GPU_STATE_IDLE 0x100u     /* not a cap: the driver lowered the clocks because the GPU is idle */
typedef struct gpu_power_reading {
  unsigned reasons;       /* GPU_CAP_* and GPU_STATE_IDLE bits */
  double sm_clock_mhz;    /* < 0: unknown */
  double power_w;         /* < 0: unknown (NVML's own averaging window applies: 1 s on GPUs newer
                             than Ampere's GA100, so a load's first ~0.5 s still reads what ran before) */
  double power_now_w;     /* instantaneous power; <= 0: unknown (no device reads 0 W while it can be
                             read, so a reading a source left zeroed means "not given"); the timer
                             then falls back to power_w */
} gpu_power_reading;
typedef struct gpu_power {
  const char *name; /* "nvml" */
  /* Opens the source for the device p describes (by PCI bus id, else UUID). Idempotent per
   * device. GPU_ERR_NO_LIBRARY when the library is absent ("libnvidia-ml.so.1: <dlerror>"),
   * GPU_ERR_INVALID when it does not know the device or lacks a function; the message says which. */
  gpu_status (*open)(const gpu_device_props *p);
  /* One reading of the opened device. Clock and powers each may be unknown; the call fails only
   * when the reasons cannot be read. */
  gpu_status (*read)(gpu_power_reading *out);
  /* The enforced power limit in W (GPU_ERR_INVALID when the device does not report it). */
  gpu_status (*limit_w)(double *w);
} gpu_power;
extern const gpu_power gpu_nvml_power; /* nvml.c: NVML by dlopen */

struct gpu_compiler; /* below, with rtc_compile */
struct gpu_blas;     /* blas.h */
struct gpu_dnn;      /* dnn.h */

/* What every vendor library a backend opens at run time (its BLAS, its DNN library) offers first:
 * the head of gpu_blas and gpu_dnn, so that finding, opening and versioning one is written once
 * (library.c) and blas.c / dnn.c only dispatch their own operations. */
typedef struct gpu_library {
  const char *name; /* "cuBLASLt", "cuDNN": in messages */
  /* Opens the library once (later calls return the first outcome); GPU_ERR_NO_LIBRARY naming it
   * and every place searched when absent. */
  gpu_status (*init)(void);
  /* The library's own version number and the path it was opened from. */
  gpu_status (*version)(size_t *version, char *path, size_t path_len);
} gpu_library;

typedef enum gpu_library_kind { GPU_LIB_BLAS = 0, GPU_LIB_DNN, GPU_NLIBRARY_KINDS } gpu_library_kind;
/* The backend in use's library of kind k, or NULL with *st = GPU_ERR_NO_LIBRARY and the message
 * "<blas|dnn>: the <backend> backend has no <BLAS|DNN> library". */
const gpu_library *gpu_library_get(gpu_library_kind k, gpu_status *st);
gpu_status gpu_library_init(gpu_library_kind k);
gpu_status gpu_library_version(gpu_library_kind k, size_t *version, char *path, size_t path_len);

typedef struct gpu_backend {
  const char *name;         /* "cuda": what TILEBENCH_BACKEND names */
  const char *display_name; /* "CUDA": in messages ("no CUDA device found"); NULL: name */
  /* Run-time compilation of the backend's kernel language (rtc_compile keys and caches what it
   * produces), the vendor BLAS (blas.h) and DNN library (dnn.h); NULL where the backend has none. */
  const struct gpu_compiler *compiler;
  const struct gpu_blas *blas;
  const struct gpu_dnn *dnn;
  /* The kernel language's name of a tilebench dtype ("fp16" -> "__half" for CUDA C), for the
   * sources operators generate; NULL for a dtype the backend has no type for. */
  const char *(*kernel_type)(const char *dtype);
  /* Opens the driver library and initialises it. Safe to call again. GPU_ERR_NO_DRIVER with
   * "no CUDA driver found (libcuda.so.1: <dlerror>)" when absent. */
  gpu_status (*init)(void);
  gpu_status (*version)(gpu_version_info *v);
  gpu_status (*device_count)(int *n);
  gpu_status (*device_props)(int dev, gpu_device_props *p);
  /* Retains the device's primary context and makes it current on the calling thread. */
  gpu_status (*set_device)(int dev);
  gpu_status (*current_device)(int *dev);
  gpu_status (*synchronize)(void); /* whole context */

  gpu_status (*mem_alloc)(gpu_ptr *p, size_t bytes); /* GPU_ERR_OOM when memory is short */
  gpu_status (*mem_free)(gpu_ptr p);
  gpu_status (*mem_info)(size_t *free_bytes, size_t *total_bytes);
  gpu_status (*memset8_async)(gpu_ptr p, unsigned char value, size_t bytes, gpu_stream s);
  gpu_status (*memset32_async)(gpu_ptr p, uint32_t value, size_t count, gpu_stream s);
  gpu_status (*copy_htod)(gpu_ptr dst, const void *src, size_t bytes); /* synchronous */
  gpu_status (*copy_dtoh)(void *dst, gpu_ptr src, size_t bytes);       /* synchronous */
  gpu_status (*copy_dtod_async)(gpu_ptr dst, gpu_ptr src, size_t bytes, gpu_stream s);

  /* Modules: a cubin, fatbin or NUL-terminated PTX image, or a file holding one. */
  gpu_status (*module_load_image)(gpu_module **m, const void *image, size_t size);
  gpu_status (*module_load_file)(gpu_module **m, const char *path);
  gpu_status (*module_unload)(gpu_module *m);
  /* GPU_ERR_INVALID with "cuModuleGetFunction: ... 'name'" when the kernel is absent. */
  gpu_status (*function_get)(gpu_function **f, gpu_module *m, const char *name);
  gpu_status (*function_attrs)(gpu_function *f, gpu_function_attrs *a);
  gpu_status (*function_set_max_dynamic_smem)(gpu_function *f, int bytes);
  /* args: array of pointers to each argument value, as cuLaunchKernel takes them.
   * Raises the dynamic shared-memory limit first when smem_bytes > 48 KiB. */
  gpu_status (*launch)(gpu_function *f, const unsigned grid[3], const unsigned block[3],
                       unsigned smem_bytes, gpu_stream s, void **args);

  gpu_status (*stream_create)(gpu_stream *s);
  gpu_status (*stream_destroy)(gpu_stream s);
  gpu_status (*stream_synchronize)(gpu_stream s);
  /* Waits at most timeout_ms (polling); GPU_ERR_TIMEOUT past it. <0 waits forever. */
  gpu_status (*stream_wait_timeout)(gpu_stream s, double timeout_ms);

  gpu_status (*event_create)(gpu_event *e); /* with timing */
  gpu_status (*event_destroy)(gpu_event e);
  gpu_status (*event_record)(gpu_event e, gpu_stream s);
  /* Work enqueued on s from now on waits for e's last record (during a capture: a dependency,
   * which is how a second stream forks from and joins the captured one). */
  gpu_status (*stream_wait_event)(gpu_stream s, gpu_event e);
  gpu_status (*event_synchronize)(gpu_event e);
  gpu_status (*event_elapsed_ms)(float *ms, gpu_event start, gpu_event end);

  /* Stream capture into a graph; end_capture instantiates it. */
  gpu_status (*capture_begin)(gpu_stream s);
  gpu_status (*capture_end)(gpu_stream s, gpu_graph *g);
  gpu_status (*graph_launch)(gpu_graph g, gpu_stream s);
  gpu_status (*graph_destroy)(gpu_graph g);
  /* Event nodes in a captured graph, re-pointed per launch (timing events inside a graph):
   * event_record_captured records e during a capture as an event-record node
   * (cuEventRecordWithFlags, CU_EVENT_RECORD_EXTERNAL); capture_end_events is capture_end that
   * also finds the node of each of the n events so recorded (events[i]: node i) and keeps what
   * graph_set_event needs; graph_set_event makes node i record e from the next launch on
   * (launches already enqueued keep their events). GPU_ERR_INVALID where the driver lacks them. */
  gpu_status (*event_record_captured)(gpu_event e, gpu_stream s);
  gpu_status (*capture_end_events)(gpu_stream s, gpu_graph *g, const gpu_event *events, size_t n);
  gpu_status (*graph_set_event)(gpu_graph g, size_t i, gpu_event e);

  /* Encodes spec into out (GPU_TENSORMAP_BYTES, 64-byte aligned). GPU_ERR_INVALID with the
   * driver's reason for a spec it refuses, or where the driver lacks cuTensorMapEncodeTiled. */
  gpu_status (*tensormap_encode)(void *out, const gpu_tensormap_spec *spec);

  /* Kernel timestamps (CUPTI for CUDA); NULL where the backend has none. */
  const gpu_timestamps *timestamps;
  /* Power and clock state (NVML for CUDA); NULL where the backend has none. */
  const gpu_power *power;

  /* Raw handles for sibling layers (CUPTI, cuBLASLt) that need the driver's own types. */
  void *(*native_context)(void);
  void *(*native_stream)(gpu_stream s);
} gpu_backend;

/* ---- which backend (backend.c) --------------------------------------------------------------
 * The backend in use: the one gpu_backend_select() chose, else the one $TILEBENCH_BACKEND names,
 * else "cuda". Never NULL; init() reports whether a driver exists. */
const gpu_backend *gpu_backend_get(void);
/* Makes the registered backend called name the one gpu_backend_get() returns; GPU_ERR_INVALID
 * naming the known ones for another name. Call it before any GPU work. */
gpu_status gpu_backend_select(const char *name);
/* Adds a backend (a test's fake); GPU_ERR_INVALID when the name is taken or the list is full. */
gpu_status gpu_backend_register(const gpu_backend *b);
/* "cuda, fake": the registered names, for messages. */
const char *gpu_backend_names(void);
const gpu_backend *gpu_cuda_backend(void);

/* ---- library lookup for the CUDA libraries (cuda_dl.c) -----------------------------------
 * Opens a shared library by trying, in order: $TILEBENCH_CUDA_LIB_DIR/<name>, the system loader
 * (<name>), $CUDA_HOME/lib64/<name>, /usr/local/cuda/lib64/<name>; for each name in the
 * NULL-terminated list. Returns the handle or NULL, with gpu_last_error() naming the library and
 * every place searched. Never aborts. */
void *gpu_dlopen_first(const char *const *names, char *found_path, size_t found_len);

/* ---- run-time compilation (rtc.c, with the backend's compiler table) ------------------------ */
typedef struct rtc_header {
  const char *name;   /* include name, e.g. "tb_common.cuh" */
  const char *source;
} rtc_header;

typedef struct rtc_result {
  void *image;        /* cubin, PTX, ... (malloc'd; free with rtc_result_free) */
  size_t size;
  char *log;          /* compiler log (may be empty), malloc'd */
  int from_cache;     /* 1 when the image came from the on-disk cache */
  char key[65];       /* the cache key (hex) */
} rtc_result;

/* What kind of image a target yields: the cache file's extension ("cubin", "ptx") and whether it
 * is NUL-terminated text whose size counts the NUL (PTX, as nvrtcGetPTXSize counts it). */
typedef struct rtc_target {
  char extension[16];
  int text_image;
} rtc_target;

#define RTC_IMPLICIT_OPTIONS 8 /* at most this many options a compiler adds to the caller's */

/* A backend's run-time compiler. rtc_compile checks the arguments, keys, caches and verifies;
 * the compiler only says which targets it knows, which options it adds and turns a source into
 * an image. */
typedef struct gpu_compiler {
  const char *name;         /* "nvrtc": hashed into the key with the version; a provenance field */
  const char *default_arch; /* the target when no device tells one ("sm_90") */
  /* Opens the compiler library; GPU_ERR_NO_LIBRARY naming it and where it was searched. */
  gpu_status (*version)(int *major, int *minor);
  /* GPU_ERR_INVALID naming program and arch for a target the compiler does not know. */
  gpu_status (*target)(const char *program, const char *arch, rtc_target *t);
  /* Appends the options the compiler adds for arch (target, language level, include
   * directories) to opts[0 .. n-1], whose array has room for RTC_IMPLICIT_OPTIONS more; their
   * text lives in buf. Returns the new count. They are part of the cache key. */
  int (*implicit_options)(const char *arch, const char **opts, int n, char *buf, size_t buf_len);
  /* Compiles; fills image, size and log of out. GPU_ERR_COMPILE with the log in the message
   * when the source (or an option) is the caller's mistake. */
  gpu_status (*build)(const char *source, const char *program, const rtc_header *headers, int n_headers,
                      const char *const *options, int n_options, const rtc_target *t, rtc_result *out);
} gpu_compiler;

/* Compiles kernel source for arch ("sm_90"; NULL = the current device's, or the compiler's
 * default_arch without one) with options (e.g. "-DBLOCK=256", "-O3") and headers, by the backend's
 * compiler. Results are cached on disk under rtc_cache_dir(), keyed by source, headers, options,
 * compiler version and arch; each entry carries its size and SHA-256, checked on every read (a
 * damaged entry is a miss, recompiled and replaced, with a warning on stderr). A cache directory
 * that cannot be created or written, or an entry that cannot be stored, is an error
 * (GPU_ERR_OTHER naming the directory): nothing reports success with nothing cached. A hit only
 * reads, so a read-only cache filled elsewhere (scripts/warm-cache.sh) serves what it holds.
 * GPU_ERR_COMPILE with the full log in gpu_last_error() when the source does not compile;
 * GPU_ERR_NO_LIBRARY when the compiler library is absent. */
gpu_status rtc_compile(const char *source, const char *program_name, const rtc_header *headers,
                       int n_headers, const char *const *options, int n_options, const char *arch,
                       rtc_result *out);
void rtc_result_free(rtc_result *r);
/* The backend compiler's version (opens its library). */
gpu_status rtc_version(int *major, int *minor);
/* $TILEBENCH_CACHE_DIR, else $XDG_CACHE_HOME/tilebench/rtc, else ~/.cache/tilebench/rtc. */
const char *rtc_cache_dir(void);
/* Entries of the same cache that another compiler fills (Triton: lua/tilebench/triton.lua), with
 * the same checksum file and atomic writes. name = "<64 lowercase hex>.<ext>" (GPU_ERR_INVALID
 * otherwise). read: *data = NULL on a miss or a damaged entry (warned on stderr), else a malloc'd
 * copy (NUL-terminated, *size without the NUL). write: the directory must be usable. */
gpu_status rtc_cache_read(const char *name, char **data, size_t *size);
gpu_status rtc_cache_write(const char *name, const void *data, size_t size);

#endif
