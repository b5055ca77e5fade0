/* rtc.c: run-time compilation through the backend's compiler table, and the on-disk cache that
 * makes the second compile of the same source, headers, options and compiler a file read.
 *
 * The cache key is a SHA-256 over every input that can change the binary. An entry is two files:
 * <key>.<ext> holds the image exactly as the compiler produced it (so the driver can load it by
 * path), <key>.<ext>.sum its size and SHA-256. Both are written atomically (atomic_file.c), the
 * sum first, so a reader that finds the image finds its sum; a read
 * checks both, and a damaged entry (a truncated cubin keeps its ELF header) is a miss that is
 * recompiled and replaced, with a warning. A cache that cannot hold what was compiled is an
 * error: `tilebench compile` exists to fill it, and must not report success with nothing kept. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../atomic_file.h"
#include "gpu.h"
#include "sha256.h"

#define KEY_VERSION "tilebench-rtc-2" /* 2: entries carry a .sum; older ones are never read */
#define SUM_MAGIC "tilebench-rtc-entry 1"

static const gpu_compiler *compiler_or_error(gpu_status *st) {
  const gpu_backend *b = gpu_backend_get();
  if (b->compiler == NULL) {
    *st = gpu_set_error(GPU_ERR_NO_LIBRARY, "rtc_compile: the %s backend has no run-time compiler", b->name);
    return NULL;
  }
  *st = GPU_OK;
  return b->compiler;
}

gpu_status rtc_version(int *major, int *minor) {
  gpu_status st;
  const gpu_compiler *c = compiler_or_error(&st);
  return c ? c->version(major, minor) : st;
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

/* mkdir -p, then a directory we can write into; otherwise an error naming it and why. */
static gpu_status usable_cache_dir(const char *dir) {
  char p[1024];
  if (snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p)
    return gpu_set_error(GPU_ERR_OTHER, "compile cache %s: path too long", dir);
  for (char *s = p + 1; *s; s++) {
    if (*s != '/') continue;
    *s = '\0';
    (void)mkdir(p, 0755); /* a failure shows in the checks below */
    *s = '/';
  }
  int made = mkdir(p, 0755) == 0 || errno == EEXIST;
  int err = errno;
  struct stat st;
  if (!made || stat(p, &st) != 0) err = made ? errno : err;
  else if (!S_ISDIR(st.st_mode)) err = ENOTDIR;
  else if (access(p, W_OK | X_OK) != 0) err = errno;
  else return GPU_OK;
  return gpu_set_error(GPU_ERR_OTHER, "compile cache %s is unusable: %s (set TILEBENCH_CACHE_DIR to a writable "
                       "directory)", dir, strerror(err));
}

static void *read_whole_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) return NULL;
  char *buf = NULL;
  long len = -1;
  if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
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

static void checksum(const void *image, size_t size, char hex[65]) {
  sha256 h;
  sha256_init(&h);
  sha256_update(&h, image, size);
  sha256_hex(&h, hex);
}

/* The image at path if its .sum agrees (size and SHA-256); NULL for a miss. A present image
 * that disagrees is reported on stderr, since it means a cut write or a damaged disk. */
static char *cache_lookup(const char *path, size_t *size) {
  char *image = read_whole_file(path, size);
  if (image == NULL) return NULL;
  char sum_path[1120], expected[65] = "", actual[65];
  unsigned long long expected_size = 0;
  snprintf(sum_path, sizeof sum_path, "%s.sum", path);
  size_t sum_len = 0;
  char *sum = read_whole_file(sum_path, &sum_len);
  int parsed = sum && sscanf(sum, SUM_MAGIC "\nsize %llu\nsha256 %64[0-9a-f]", &expected_size, expected) == 2;
  free(sum);
  const char *why = NULL;
  char detail[160];
  if (!parsed) {
    why = "its checksum file is missing or unreadable";
  } else if (expected_size != *size) {
    snprintf(detail, sizeof detail, "%zu bytes where %llu were written", *size, expected_size);
    why = detail;
  } else {
    checksum(image, *size, actual);
    if (strcmp(actual, expected) != 0) why = "its checksum does not match";
  }
  if (why == NULL) return image;
  fprintf(stderr, "tilebench: warning: compile cache entry %s is damaged (%s); recompiling\n", path, why);
  free(image);
  return NULL;
}

/* Every file the tool replaces goes through atomic_file.c: a reader never sees half a file. */
static gpu_status write_atomically(const char *path, const void *data, size_t size) {
  char err[1300];
  if (atomic_write(path, data, size, err, sizeof err) == 0) return GPU_OK;
  return gpu_set_error(GPU_ERR_OTHER, "compile cache: %s", err);
}

static gpu_status cache_store(const char *path, const void *image, size_t size) {
  char sum_path[1120], hex[65], sum[160];
  snprintf(sum_path, sizeof sum_path, "%s.sum", path);
  checksum(image, size, hex);
  int n = snprintf(sum, sizeof sum, SUM_MAGIC "\nsize %zu\nsha256 %s\n", size, hex);
  gpu_status st = write_atomically(sum_path, sum, (size_t)n);
  return st == GPU_OK ? write_atomically(path, image, size) : st;
}

/* ---- entries another compiler fills (Triton's cubins and their descriptions) ---------------- */

/* An entry name is a file name in the cache directory: "<64 hex key>.<ext>", nothing else, so a
 * caller's name can never reach outside the directory. */
static gpu_status entry_path(const char *name, char *path, size_t len) {
  size_t n = name ? strlen(name) : 0;
  int ok = n > 65 && n < 96 && name[64] == '.';
  for (size_t i = 0; ok && i < n; i++) {
    char c = name[i];
    if (i < 64) ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
    else if (i > 64) ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
  }
  if (!ok) return gpu_set_error(GPU_ERR_INVALID, "compile cache: bad entry name '%.100s' (want <sha256 hex>.<ext>)",
                                name ? name : "(null)");
  snprintf(path, len, "%s/%s", rtc_cache_dir(), name);
  return GPU_OK;
}

gpu_status rtc_cache_read(const char *name, char **data, size_t *size) {
  char path[1100];
  *data = NULL;
  *size = 0;
  gpu_status st = entry_path(name, path, sizeof path);
  if (st == GPU_OK) *data = cache_lookup(path, size);
  return st;
}

gpu_status rtc_cache_write(const char *name, const void *data, size_t size) {
  char path[1100];
  gpu_status st = entry_path(name, path, sizeof path);
  if (st == GPU_OK) st = usable_cache_dir(rtc_cache_dir());
  return st == GPU_OK ? cache_store(path, data, size) : st;
}

/* ---- compiling ------------------------------------------------------------------------------ */

static void default_arch(const gpu_compiler *c, char *arch, size_t len) {
  const gpu_backend *b = gpu_backend_get();
  gpu_device_props props;
  int dev = 0, count = 0;
  snprintf(arch, len, "%s", c->default_arch);
  if (b->init() != GPU_OK) return;
  if (b->current_device(&dev) != GPU_OK) {
    if (b->device_count(&count) != GPU_OK || count == 0) return;
    dev = 0;
  }
  if (b->device_props(dev, &props) == GPU_OK) snprintf(arch, len, "%s", props.arch);
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

static void compute_key(const gpu_compiler *c, const char *source, const char *name, const rtc_header *headers,
                        int n_headers, const char *const *all, int n, const char *arch, char key[65]) {
  int major = 0, minor = 0;
  (void)c->version(&major, &minor); /* opened by the caller already */
  sha256 h;
  sha256_init(&h);
  sha256_field(&h, KEY_VERSION, NULL, 0);
  sha256_field(&h, "source", source, strlen(source));
  sha256_field(&h, "name", name, strlen(name));
  for (int i = 0; i < n_headers; i++) {
    sha256_field(&h, "header-name", headers[i].name, strlen(headers[i].name));
    sha256_field(&h, "header-text", headers[i].source, strlen(headers[i].source));
  }
  for (int i = 0; i < n; i++) sha256_field(&h, "option", all[i], strlen(all[i]));
  int version[2] = {major, minor};
  sha256_field(&h, c->name, version, sizeof version);
  sha256_field(&h, "arch", arch, strlen(arch));
  sha256_hex(&h, key);
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
  gpu_status st;
  const gpu_compiler *c = compiler_or_error(&st);
  if (c == NULL) return st;
  const char *name = program_name && *program_name ? program_name : "kernel.cu";
  char arch_buf[32];
  if (arch == NULL) {
    default_arch(c, arch_buf, sizeof arch_buf);
    arch = arch_buf;
  }
  rtc_target target;
  if ((st = c->target(name, arch, &target)) != GPU_OK) return st;
  int major, minor;
  if ((st = c->version(&major, &minor)) != GPU_OK) return st;

  /* The options the compiler gets: the caller's, then its own (target, language, headers). */
  const char **all = malloc(((size_t)n_options + RTC_IMPLICIT_OPTIONS) * sizeof *all);
  char implicit[4096];
  if (all == NULL) return gpu_set_error(GPU_ERR_OOM, "rtc_compile: out of host memory");
  for (int i = 0; i < n_options; i++) all[i] = options[i];
  int n = c->implicit_options(arch, all, n_options, implicit, sizeof implicit);
  compute_key(c, source, name, headers, n_headers, all, n, arch, out->key);

  const char *dir = rtc_cache_dir();
  char path[1100];
  snprintf(path, sizeof path, "%s/%s.%s", dir, out->key, target.extension);
  size_t size = 0;
  char *cached = cache_lookup(path, &size);
  if (cached && size > 0 && (out->log = copy_string("")) != NULL) {
    out->image = cached;
    out->size = target.text_image ? size + 1 : size; /* text images count their NUL */
    out->from_cache = 1;
    free(all);
    return GPU_OK;
  }
  free(cached);

  /* A miss: refuse an unusable directory before paying for the compile. */
  if ((st = usable_cache_dir(dir)) == GPU_OK) st = c->build(source, name, headers, n_headers, all, n, &target, out);
  free(all);
  if (st == GPU_OK) st = cache_store(path, out->image, target.text_image ? out->size - 1 : out->size);
  if (st != GPU_OK) {
    free(out->image);
    out->image = NULL;
    out->size = 0;
  }
  return st;
}
