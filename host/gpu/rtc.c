/* rtc.c: run-time compilation of CUDA C with NVRTC (opened with dlopen), and the on-disk cache
 * that makes the second compile of the same source, headers, options and compiler a file read.
 *
 * The cache key is a SHA-256 over every input that can change the binary; entries are written to
 * a temporary file and renamed into place, so a reader never sees half an image. A cache that
 * cannot be read or written costs a recompile, never an error. */
#include <dlfcn.h>
#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../atomic_file.h"
#include "gpu.h"

/* ---- SHA-256 (FIPS 180-4), enough for cache keys ------------------------------------------ */

typedef struct sha256 {
  uint32_t h[8];
  uint64_t bytes;
  unsigned char block[64];
  size_t fill;
} sha256;

static const uint32_t sha256_k[64] = {
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

#define ROTR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void sha256_block(sha256 *s, const unsigned char *p) {
  uint32_t w[64];
  for (int i = 0; i < 16; i++)
    w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
  for (int i = 16; i < 64; i++) {
    uint32_t s0 = ROTR(w[i - 15], 7) ^ ROTR(w[i - 15], 18) ^ (w[i - 15] >> 3);
    uint32_t s1 = ROTR(w[i - 2], 17) ^ ROTR(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = s->h[0], b = s->h[1], c = s->h[2], d = s->h[3], e = s->h[4], f = s->h[5], g = s->h[6],
           h = s->h[7];
  for (int i = 0; i < 64; i++) {
    uint32_t t1 = h + (ROTR(e, 6) ^ ROTR(e, 11) ^ ROTR(e, 25)) + ((e & f) ^ (~e & g)) + sha256_k[i] + w[i];
    uint32_t t2 = (ROTR(a, 2) ^ ROTR(a, 13) ^ ROTR(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    h = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
  }
  s->h[0] += a, s->h[1] += b, s->h[2] += c, s->h[3] += d;
  s->h[4] += e, s->h[5] += f, s->h[6] += g, s->h[7] += h;
}

static void sha256_init(sha256 *s) {
  static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  memcpy(s->h, h0, sizeof h0);
  s->bytes = 0;
  s->fill = 0;
}

static void sha256_update(sha256 *s, const void *data, size_t len) {
  const unsigned char *p = data;
  s->bytes += len;
  while (len > 0) {
    size_t take = 64 - s->fill < len ? 64 - s->fill : len;
    memcpy(s->block + s->fill, p, take);
    s->fill += take, p += take, len -= take;
    if (s->fill == 64) {
      sha256_block(s, s->block);
      s->fill = 0;
    }
  }
}

static void sha256_hex(sha256 *s, char out[65]) {
  uint64_t bits = s->bytes * 8;
  unsigned char pad[72] = {0x80};
  size_t padlen = (s->fill < 56 ? 56 : 120) - s->fill;
  for (int i = 0; i < 8; i++) pad[padlen + i] = (unsigned char)(bits >> (56 - 8 * i));
  sha256_update(s, pad, padlen + 8);
  for (int i = 0; i < 8; i++) sprintf(out + 8 * i, "%08x", s->h[i]);
  out[64] = '\0';
}

/* Each field is length-prefixed so that ("ab","c") and ("a","bc") hash differently. */
static void sha256_field(sha256 *s, const char *tag, const void *data, size_t len) {
  uint64_t n = len;
  sha256_update(s, tag, strlen(tag) + 1);
  sha256_update(s, &n, sizeof n);
  if (len) sha256_update(s, data, len);
}

/* ---- NVRTC, opened on first use ------------------------------------------------------------ */

#define NVRTC_SYMBOLS(X)                                                                        \
  X(nvrtcVersion) X(nvrtcGetErrorString) X(nvrtcCreateProgram) X(nvrtcDestroyProgram)          \
  X(nvrtcCompileProgram) X(nvrtcGetProgramLogSize) X(nvrtcGetProgramLog) X(nvrtcGetCUBINSize)  \
  X(nvrtcGetCUBIN) X(nvrtcGetPTXSize) X(nvrtcGetPTX)
#define DECLARE_POINTER(name) static __typeof__(name) *p_##name;
NVRTC_SYMBOLS(DECLARE_POINTER)

static int nvrtc_state; /* 0 not tried, 1 ready, -1 absent (nvrtc_message says why) */
static char nvrtc_message[4096];
static int nvrtc_major, nvrtc_minor;

static gpu_status nvrtc_open(void) {
  if (nvrtc_state == 1) return GPU_OK;
  if (nvrtc_state == -1) return gpu_set_error(GPU_ERR_NO_LIBRARY, "%s", nvrtc_message);
  static const char *const names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so", NULL};
  char path[512];
  void *lib = gpu_dlopen_first(names, path, sizeof path);
  const char *missing = NULL;
  if (lib) {
#define RESOLVE(name) \
  if ((p_##name = (__typeof__(p_##name))dlsym(lib, #name)) == NULL && missing == NULL) missing = #name;
    NVRTC_SYMBOLS(RESOLVE)
#undef RESOLVE
    if (missing) gpu_set_error(GPU_ERR_NO_LIBRARY, "NVRTC at %s lacks %s (too old: CUDA 11.1+ is needed)", path,
                               missing);
  }
  if (lib == NULL || missing) {
    snprintf(nvrtc_message, sizeof nvrtc_message, "%s", gpu_last_error());
    nvrtc_state = -1;
    return GPU_ERR_NO_LIBRARY;
  }
  if (p_nvrtcVersion(&nvrtc_major, &nvrtc_minor) != NVRTC_SUCCESS) nvrtc_major = nvrtc_minor = 0;
  nvrtc_state = 1;
  return GPU_OK;
}

gpu_status rtc_version(int *major, int *minor) {
  gpu_status st = nvrtc_open();
  if (st != GPU_OK) return st;
  *major = nvrtc_major;
  *minor = nvrtc_minor;
  return GPU_OK;
}

/* ---- the cache ------------------------------------------------------------------------------ */

const char *rtc_cache_dir(void) {
  static char dir[1024];
  const char *env = getenv("TILEBENCH_CACHE_DIR");
  const char *xdg = getenv("XDG_CACHE_HOME");
  const char *home = getenv("HOME");
  if (env && *env) snprintf(dir, sizeof dir, "%s", env);
  else if (xdg && *xdg) snprintf(dir, sizeof dir, "%s/tilebench/rtc", xdg);
  else if (home && *home) snprintf(dir, sizeof dir, "%s/.cache/tilebench/rtc", home);
  else snprintf(dir, sizeof dir, "/tmp/tilebench-%u/rtc", (unsigned)getuid());
  return dir;
}

/* mkdir -p; failure is reported by the write that follows. */
static void make_dirs(const char *path) {
  char p[1024];
  snprintf(p, sizeof p, "%s", path);
  for (char *s = p + 1; *s; s++) {
    if (*s != '/') continue;
    *s = '\0';
    mkdir(p, 0755);
    *s = '/';
  }
  mkdir(p, 0755);
}

static void *read_whole_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) return NULL;
  char *buf = NULL;
  long len = -1;
  if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
      (buf = malloc((size_t)len + 1)) != NULL && fread(buf, 1, (size_t)len, f) != (size_t)len) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  if (buf) {
    buf[len] = '\0';
    *size = (size_t)len;
  }
  return buf;
}

/* A cubin is an ELF file; PTX is text holding ".version". Anything else is a damaged entry. */
static int plausible_image(const char *image, size_t size, int cubin) {
  if (cubin) return size > 64 && memcmp(image, "\x7f" "ELF", 4) == 0;
  return size > 0 && strstr(image, ".version") != NULL;
}

static void cache_store(const char *path, const void *image, size_t size) {
  char err[1200];
  /* a cache entry is written like every other file (atomic_file.c): a reader never sees half */
  if (atomic_write(path, image, size, err, sizeof err) != 0) {
    make_dirs(rtc_cache_dir());
    atomic_write(path, image, size, err, sizeof err);
  }
}

/* ---- compiling ------------------------------------------------------------------------------ */

/* sm_90, sm_90a, sm_100f, compute_90 ... */
static int valid_arch(const char *arch, int *cubin) {
  const char *digits;
  if (strncmp(arch, "sm_", 3) == 0) *cubin = 1, digits = arch + 3;
  else if (strncmp(arch, "compute_", 8) == 0) *cubin = 0, digits = arch + 8;
  else return 0;
  size_t n = strspn(digits, "0123456789");
  if (n < 2 || n > 3) return 0;
  return digits[n] == '\0' || ((digits[n] == 'a' || digits[n] == 'f') && digits[n + 1] == '\0');
}

static void default_arch(char *arch, size_t len) {
  const gpu_backend *b = gpu_backend_get();
  gpu_device_props props;
  int dev = 0, count = 0;
  snprintf(arch, len, "sm_90");
  if (b->init() != GPU_OK) return;
  if (b->current_device(&dev) != GPU_OK) {
    if (b->device_count(&count) != GPU_OK || count == 0) return;
    dev = 0;
  }
  if (b->device_props(dev, &props) == GPU_OK) snprintf(arch, len, "%s", props.arch);
}

static const char *cuda_include_dir(void) {
  static char dir[1024];
  struct stat st;
  const char *home = getenv("CUDA_HOME");
  if (home && *home) {
    snprintf(dir, sizeof dir, "%s/include", home);
    if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode)) return dir;
  }
  snprintf(dir, sizeof dir, "/usr/local/cuda/include");
  if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode)) return dir;
  return NULL;
}

static int has_std_option(const char *const *options, int n) {
  for (int i = 0; i < n; i++)
    if (strncmp(options[i], "-std", 4) == 0 || strncmp(options[i], "--std", 5) == 0) return 1;
  return 0;
}

static char *copy_string(const char *s) {
  size_t n = strlen(s) + 1;
  char *c = malloc(n);
  if (c) memcpy(c, s, n);
  return c;
}

void rtc_result_free(rtc_result *r) {
  if (r == NULL) return;
  free(r->image);
  free(r->log);
  r->image = NULL;
  r->log = NULL;
  r->size = 0;
}

/* Compiles with NVRTC; fills image/size/log of out. */
static gpu_status nvrtc_build(const char *source, const char *name, const rtc_header *headers, int n_headers,
                              const char **options, int n_options, int cubin, rtc_result *out) {
  const char **header_text = calloc((size_t)n_headers + 1, sizeof *header_text);
  const char **header_name = calloc((size_t)n_headers + 1, sizeof *header_name);
  if (header_text == NULL || header_name == NULL) {
    free(header_text);
    free(header_name);
    return gpu_set_error(GPU_ERR_OOM, "rtc_compile: out of host memory");
  }
  for (int i = 0; i < n_headers; i++) header_text[i] = headers[i].source, header_name[i] = headers[i].name;
  nvrtcProgram prog = NULL;
  nvrtcResult r = p_nvrtcCreateProgram(&prog, source, name, n_headers, header_text, header_name);
  free(header_text);
  free(header_name);
  if (r != NVRTC_SUCCESS)
    return gpu_set_error(r == NVRTC_ERROR_OUT_OF_MEMORY ? GPU_ERR_OOM : GPU_ERR_OTHER,
                         "nvrtcCreateProgram: %s: %s", name, p_nvrtcGetErrorString(r));

  nvrtcResult compiled = p_nvrtcCompileProgram(prog, n_options, options);
  size_t log_size = 0;
  if (p_nvrtcGetProgramLogSize(prog, &log_size) != NVRTC_SUCCESS) log_size = 0;
  out->log = malloc(log_size + 1);
  if (out->log == NULL) {
    p_nvrtcDestroyProgram(&prog);
    return gpu_set_error(GPU_ERR_OOM, "rtc_compile: out of host memory");
  }
  out->log[0] = '\0';
  if (log_size > 0 && p_nvrtcGetProgramLog(prog, out->log) != NVRTC_SUCCESS) out->log[0] = '\0';
  out->log[log_size] = '\0';

  gpu_status st = GPU_OK;
  if (compiled != NVRTC_SUCCESS) {
    /* A source that does not compile, or an option NVRTC rejects: both are the caller's input. */
    int input = compiled == NVRTC_ERROR_COMPILATION || compiled == NVRTC_ERROR_INVALID_OPTION;
    st = gpu_set_error(input ? GPU_ERR_COMPILE : GPU_ERR_OTHER, "nvrtcCompileProgram: %s: %s\n%s", name,
                       p_nvrtcGetErrorString(compiled), out->log);
  } else {
    size_t size = 0;
    r = cubin ? p_nvrtcGetCUBINSize(prog, &size) : p_nvrtcGetPTXSize(prog, &size);
    if (r != NVRTC_SUCCESS || size == 0) {
      st = gpu_set_error(GPU_ERR_OTHER, "%s: %s: %s", cubin ? "nvrtcGetCUBINSize" : "nvrtcGetPTXSize", name,
                         r != NVRTC_SUCCESS ? p_nvrtcGetErrorString(r) : "empty image");
    } else if ((out->image = malloc(size)) == NULL) {
      st = gpu_set_error(GPU_ERR_OOM, "rtc_compile: out of host memory for a %zu-byte image", size);
    } else if ((r = cubin ? p_nvrtcGetCUBIN(prog, out->image) : p_nvrtcGetPTX(prog, out->image)) !=
               NVRTC_SUCCESS) {
      st = gpu_set_error(GPU_ERR_OTHER, "%s: %s: %s", cubin ? "nvrtcGetCUBIN" : "nvrtcGetPTX", name,
                         p_nvrtcGetErrorString(r));
    } else {
      out->size = size;
    }
  }
  p_nvrtcDestroyProgram(&prog);
  return st;
}

gpu_status rtc_compile(const char *source, const char *program_name, const rtc_header *headers,
                       int n_headers, const char *const *options, int n_options, const char *arch,
                       rtc_result *out) {
  memset(out, 0, sizeof *out);
  if (source == NULL) return gpu_set_error(GPU_ERR_INVALID, "rtc_compile: no source");
  if (n_headers < 0 || n_options < 0 || (n_headers > 0 && headers == NULL) || (n_options > 0 && options == NULL))
    return gpu_set_error(GPU_ERR_INVALID, "rtc_compile: bad header or option list");
  for (int i = 0; i < n_headers; i++)
    if (headers[i].name == NULL || headers[i].source == NULL)
      return gpu_set_error(GPU_ERR_INVALID, "rtc_compile: header %d has no name or no text", i);
  for (int i = 0; i < n_options; i++)
    if (options[i] == NULL) return gpu_set_error(GPU_ERR_INVALID, "rtc_compile: option %d is NULL", i);
  const char *name = program_name && *program_name ? program_name : "kernel.cu";
  char arch_buf[32];
  if (arch == NULL) {
    default_arch(arch_buf, sizeof arch_buf);
    arch = arch_buf;
  }
  int cubin = 0;
  if (!valid_arch(arch, &cubin))
    return gpu_set_error(GPU_ERR_INVALID, "rtc_compile: %s: invalid architecture '%s' (expected sm_XY or "
                         "compute_XY, e.g. sm_90, sm_90a)", name, arch);
  gpu_status st = nvrtc_open();
  if (st != GPU_OK) return st;

  /* The options NVRTC gets: the caller's, the target, the language level, the toolkit's headers. */
  char arch_option[64], include_option[1100];
  char cccl_option[1100];
  const char **all = malloc(((size_t)n_options + 4) * sizeof *all);
  if (all == NULL) return gpu_set_error(GPU_ERR_OOM, "rtc_compile: out of host memory");
  int n = 0;
  for (int i = 0; i < n_options; i++) all[n++] = options[i];
  snprintf(arch_option, sizeof arch_option, "--gpu-architecture=%s", arch);
  all[n++] = arch_option;
  if (!has_std_option(options, n_options)) all[n++] = "-std=c++17";
  const char *include_dir = cuda_include_dir();
  if (include_dir) {
    /* NVRTC has no built-in cuda_fp16.h / cuda_bf16.h / cuda_fp8.h: they come from the toolkit,
     * and CUDA 13 keeps libcu++ (<cuda/std/...>, <nv/target>) under include/cccl. */
    struct stat st_cccl;
    snprintf(include_option, sizeof include_option, "-I%s", include_dir);
    all[n++] = include_option;
    snprintf(cccl_option, sizeof cccl_option, "%s/cccl", include_dir);
    if (stat(cccl_option, &st_cccl) == 0 && S_ISDIR(st_cccl.st_mode)) {
      snprintf(cccl_option, sizeof cccl_option, "-I%s/cccl", include_dir);
      all[n++] = cccl_option;
    }
  }

  sha256 h;
  sha256_init(&h);
  sha256_field(&h, "tilebench-rtc-1", NULL, 0);
  sha256_field(&h, "source", source, strlen(source));
  sha256_field(&h, "name", name, strlen(name));
  for (int i = 0; i < n_headers; i++) {
    sha256_field(&h, "header-name", headers[i].name, strlen(headers[i].name));
    sha256_field(&h, "header-text", headers[i].source, strlen(headers[i].source));
  }
  for (int i = 0; i < n; i++) sha256_field(&h, "option", all[i], strlen(all[i]));
  int version[2] = {nvrtc_major, nvrtc_minor};
  sha256_field(&h, "nvrtc", version, sizeof version);
  sha256_field(&h, "arch", arch, strlen(arch));
  sha256_hex(&h, out->key);

  char path[1100];
  snprintf(path, sizeof path, "%s/%s.%s", rtc_cache_dir(), out->key, cubin ? "cubin" : "ptx");
  size_t size = 0;
  char *cached = read_whole_file(path, &size);
  if (cached && plausible_image(cached, size, cubin) && (out->log = copy_string("")) != NULL) {
    out->image = cached;
    out->size = cubin ? size : size + 1; /* PTX images count their NUL, as nvrtcGetPTXSize does */
    out->from_cache = 1;
    free(all);
    return GPU_OK;
  }
  free(cached);

  st = nvrtc_build(source, name, headers, n_headers, all, n, cubin, out);
  free(all);
  if (st != GPU_OK) {
    free(out->image);
    out->image = NULL;
    out->size = 0;
    return st;
  }
  cache_store(path, out->image, cubin ? out->size : out->size - 1);
  return GPU_OK;
}
