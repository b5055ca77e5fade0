/* test_rtc.c: NVRTC compilation and its on-disk cache, without a GPU: a second compile is a cache
 * hit with the same bytes; the key follows every input; a broken source returns its log; a damaged
 * entry (garbage, truncated, a flipped byte, no checksum) is recompiled and replaced; a cache
 * directory that cannot be used fails the compile loudly. Skips (77) without libnvrtc. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpu/gpu.h"

#include "check.h"

static const char *kernel =
  "extern \"C\" __global__ void scale(float *x, float a, long n) {\n"
  "  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;\n"
  "  if (i < n) x[i] *= a * SCALE_BIAS;\n"
  "}\n";

static char cache_dir[256];

/* Compiles kernel with one option and one header; returns the status, fills r. */
static gpu_status build(const char *option, const char *header_name, const char *header_text, const char *arch,
                        rtc_result *r) {
  rtc_header h = {header_name, header_text};
  const char *opts[] = {option};
  return rtc_compile(kernel, "scale.cu", &h, 1, opts, 1, arch, r);
}

static void key_of(const char *option, const char *hname, const char *htext, const char *arch, char key[65]) {
  rtc_result r;
  gpu_status st = build(option, hname, htext, arch, &r);
  CHECK(st == GPU_OK, "%s", gpu_last_error());
  snprintf(key, 65, "%s", r.key);
  rtc_result_free(&r);
}

static void compile_then_cache_hit(void) {
  rtc_result a, b;
  CHECK(build("-DSCALE_BIAS=1.0f", "unused.cuh", "#pragma once\n", "sm_90", &a) == GPU_OK, "%s", gpu_last_error());
  CHECK(a.from_cache == 0, "first compile came from the cache");
  CHECK(a.size > 64 && memcmp(a.image, "\x7f" "ELF", 4) == 0, "not a cubin (%zu bytes)", a.size);
  CHECK(strlen(a.key) == 64 && strspn(a.key, "0123456789abcdef") == 64, "key '%s'", a.key);
  char path[512];
  snprintf(path, sizeof path, "%s/%s.cubin", cache_dir, a.key);
  struct stat st;
  CHECK(stat(path, &st) == 0 && (size_t)st.st_size == a.size, "cache file %s", path);

  CHECK(build("-DSCALE_BIAS=1.0f", "unused.cuh", "#pragma once\n", "sm_90", &b) == GPU_OK, "%s", gpu_last_error());
  CHECK(b.from_cache == 1, "second compile was not a cache hit");
  CHECK(strcmp(a.key, b.key) == 0, "keys differ: %s %s", a.key, b.key);
  CHECK(a.size == b.size && memcmp(a.image, b.image, a.size) == 0, "cached image differs");
  CHECK(b.log != NULL, "log is NULL on a cache hit");
  rtc_result_free(&a);
  rtc_result_free(&b);
  rtc_result_free(&b); /* twice is harmless */
}

static void key_follows_every_input(void) {
  char base[65], k[65];
  key_of("-DSCALE_BIAS=1.0f", "h.cuh", "#define H 1\n", "sm_90", base);
  key_of("-DSCALE_BIAS=1.0f", "h.cuh", "#define H 1\n", "sm_90", k);
  CHECK(strcmp(base, k) == 0, "same inputs, different keys");
  key_of("-DSCALE_BIAS=2.0f", "h.cuh", "#define H 1\n", "sm_90", k);
  CHECK(strcmp(base, k) != 0, "option change kept the key");
  key_of("-DSCALE_BIAS=1.0f", "h.cuh", "#define H 2\n", "sm_90", k);
  CHECK(strcmp(base, k) != 0, "header text change kept the key");
  key_of("-DSCALE_BIAS=1.0f", "g.cuh", "#define H 1\n", "sm_90", k);
  CHECK(strcmp(base, k) != 0, "header name change kept the key");
  key_of("-DSCALE_BIAS=1.0f", "h.cuh", "#define H 1\n", "sm_80", k);
  CHECK(strcmp(base, k) != 0, "arch change kept the key");
}

static void broken_source_returns_log(void) {
  const char *src = "extern \"C\" __global__ void broken(float *x) {\n"
                    "  x[0] = 1.0f;\n"
                    "  x[1] = undeclared_name_42;\n"
                    "}\n";
  rtc_result r;
  gpu_status st = rtc_compile(src, "broken.cu", NULL, 0, NULL, 0, "sm_90", &r);
  const char *msg = gpu_last_error();
  CHECK(st == GPU_ERR_COMPILE, "status %d", st);
  const char *head = "nvrtcCompileProgram: broken.cu: NVRTC_ERROR_COMPILATION\n";
  CHECK(strncmp(msg, head, strlen(head)) == 0, "message: %s", msg);
  CHECK(strstr(msg, "broken.cu(3)") != NULL && strstr(msg, "undeclared_name_42") != NULL, "no error line: %s", msg);
  CHECK(r.log != NULL && strstr(r.log, "undeclared_name_42") != NULL, "result log");
  CHECK(r.image == NULL && r.size == 0, "an image for a broken source");
  rtc_result_free(&r);
}

static void ptx_and_half_types(void) {
  const char *src = "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n#include <cuda_fp8.h>\n"
                    "extern \"C\" __global__ void convert(__half *h, __nv_bfloat16 *b, __nv_fp8_e4m3 *f) {\n"
                    "  float v = __half2float(h[threadIdx.x]);\n"
                    "  b[threadIdx.x] = __float2bfloat16(v);\n"
                    "  f[threadIdx.x] = __nv_fp8_e4m3(v);\n"
                    "}\n";
  rtc_result r;
  gpu_status st = rtc_compile(src, "convert.cu", NULL, 0, NULL, 0, "sm_90", &r);
  CHECK(st == GPU_OK, "fp16/bf16/fp8 headers: %s", gpu_last_error());
  rtc_result_free(&r);
  st = rtc_compile(src, "convert.cu", NULL, 0, NULL, 0, "compute_90", &r);
  CHECK(st == GPU_OK, "PTX: %s", gpu_last_error());
  CHECK(st != GPU_OK || (r.image && strstr(r.image, ".version") && strstr(r.image, ".target sm_90")), "not PTX");
  CHECK(st != GPU_OK || ((const char *)r.image)[r.size - 1] == '\0', "PTX size must count its NUL");
  rtc_result_free(&r);
  st = rtc_compile(src, "convert.cu", NULL, 0, NULL, 0, "compute_90", &r);
  CHECK(st == GPU_OK && r.from_cache && strstr(r.image, ".version"), "PTX from cache: %s", gpu_last_error());
  CHECK(st != GPU_OK || ((const char *)r.image)[r.size - 1] == '\0', "cached PTX size must count its NUL");
  rtc_result_free(&r);
}

static void bad_arguments(void) {
  rtc_result r;
  CHECK(rtc_compile(kernel, "scale.cu", NULL, 0, NULL, 0, "sm_9", &r) == GPU_ERR_INVALID, "arch sm_9");
  CHECK(strstr(gpu_last_error(), "invalid architecture 'sm_9'") != NULL, "%s", gpu_last_error());
  CHECK(rtc_compile(kernel, "scale.cu", NULL, 0, NULL, 0, "gfx942", &r) == GPU_ERR_INVALID, "arch gfx942");
  CHECK(rtc_compile(NULL, "x.cu", NULL, 0, NULL, 0, "sm_90", &r) == GPU_ERR_INVALID, "NULL source");
  const char *bogus[] = {"--no-such-nvrtc-option"};
  CHECK(rtc_compile(kernel, "scale.cu", NULL, 0, bogus, 1, "sm_90", &r) == GPU_ERR_COMPILE, "bad option");
  CHECK(strstr(gpu_last_error(), "NVRTC_ERROR_INVALID_OPTION") != NULL, "%s", gpu_last_error());
  rtc_result_free(&r);
}

/* Overwrites path with text (length n). */
static void write_file(const char *path, const void *text, size_t n) {
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL, "open %s", path);
  if (f) {
    CHECK(fwrite(text, 1, n, f) == n, "write %s", path);
    fclose(f);
  }
}

/* A damaged entry is a miss (with a warning), recompiled and replaced: garbage, an image without
 * its checksum file, and a truncated cubin that keeps its ELF header. */
static void damaged_entries_are_recompiled(void) {
  rtc_result r, good;
  CHECK(build("-DSCALE_BIAS=3.0f", "h.cuh", "", "sm_90", &good) == GPU_OK, "%s", gpu_last_error());
  char path[512], sum_path[600];
  snprintf(path, sizeof path, "%s/%s.cubin", cache_dir, good.key);
  snprintf(sum_path, sizeof sum_path, "%s.sum", path);
  struct stat st;
  CHECK(stat(sum_path, &st) == 0 && st.st_size > 0, "no checksum file %s", sum_path);

  write_file(path, "garbage, not an ELF image", 25);
  CHECK(build("-DSCALE_BIAS=3.0f", "h.cuh", "", "sm_90", &r) == GPU_OK && r.from_cache == 0, "garbage entry used");
  rtc_result_free(&r);
  CHECK(build("-DSCALE_BIAS=3.0f", "h.cuh", "", "sm_90", &r) == GPU_OK && r.from_cache == 1, "entry not repaired");
  CHECK(r.size == good.size && memcmp(r.image, good.image, good.size) == 0, "repaired entry differs");
  rtc_result_free(&r);

  /* What a cut write leaves: the first half of the cubin, its ELF header intact. */
  write_file(path, good.image, good.size / 2);
  CHECK(build("-DSCALE_BIAS=3.0f", "h.cuh", "", "sm_90", &r) == GPU_OK && r.from_cache == 0,
        "truncated cubin was a cache hit");
  CHECK(r.size == good.size, "truncated cubin: %zu bytes, expected %zu", r.size, good.size);
  rtc_result_free(&r);
  CHECK(build("-DSCALE_BIAS=3.0f", "h.cuh", "", "sm_90", &r) == GPU_OK && r.from_cache == 1, "not re-cached");
  rtc_result_free(&r);

  /* Same size, one byte flipped: only the checksum can tell. */
  unsigned char *flipped = malloc(good.size);
  memcpy(flipped, good.image, good.size);
  flipped[good.size - 1] ^= 0x5a;
  write_file(path, flipped, good.size);
  free(flipped);
  CHECK(build("-DSCALE_BIAS=3.0f", "h.cuh", "", "sm_90", &r) == GPU_OK && r.from_cache == 0, "flipped byte used");
  CHECK(r.size == good.size && memcmp(r.image, good.image, good.size) == 0, "recompiled image differs");
  rtc_result_free(&r);

  remove(sum_path); /* an image without its sum */
  CHECK(build("-DSCALE_BIAS=3.0f", "h.cuh", "", "sm_90", &r) == GPU_OK && r.from_cache == 0, "image without sum");
  rtc_result_free(&r);
  CHECK(stat(sum_path, &st) == 0, "sum not rewritten");
  rtc_result_free(&good);
}

/* A cache directory that cannot be created or written fails the compile, naming it. */
static void unusable_cache_fails_loudly(void) {
  rtc_result r;
  char blocked[512];
  snprintf(blocked, sizeof blocked, "%s/a-file", cache_dir);
  write_file(blocked, "x", 1);
  char unusable[600];
  snprintf(unusable, sizeof unusable, "%s/sub/dir", blocked); /* below a regular file */
  setenv("TILEBENCH_CACHE_DIR", unusable, 1);
  for (int i = 0; i < 2; i++) {
    gpu_status st = build("-DSCALE_BIAS=4.0f", "h.cuh", "", "sm_90", &r);
    CHECK(st != GPU_OK && st != GPU_ERR_COMPILE, "unusable cache: status %d", st);
    CHECK(strstr(gpu_last_error(), "compile cache") && strstr(gpu_last_error(), unusable) &&
          strstr(gpu_last_error(), "Not a directory"), "message: %s", gpu_last_error());
    CHECK(r.image == NULL && r.size == 0, "an image with a failed cache");
    rtc_result_free(&r);
  }
  setenv("TILEBENCH_CACHE_DIR", blocked, 1); /* the directory is a regular file */
  CHECK(build("-DSCALE_BIAS=4.0f", "h.cuh", "", "sm_90", &r) != GPU_OK, "a file as cache directory");
  rtc_result_free(&r);
  if (geteuid() != 0) { /* root writes anywhere */
    char readonly[600];
    snprintf(readonly, sizeof readonly, "%s/readonly", cache_dir);
    mkdir(readonly, 0555);
    setenv("TILEBENCH_CACHE_DIR", readonly, 1);
    CHECK(build("-DSCALE_BIAS=4.0f", "h.cuh", "", "sm_90", &r) != GPU_OK, "read-only cache directory");
    CHECK(strstr(gpu_last_error(), "Permission denied") != NULL, "message: %s", gpu_last_error());
    rtc_result_free(&r);
    chmod(readonly, 0755);
  }
  setenv("TILEBENCH_CACHE_DIR", cache_dir, 1);
}

static void cache_dir_precedence(void) {
  setenv("TILEBENCH_CACHE_DIR", "/a/b", 1);
  CHECK(strcmp(rtc_cache_dir(), "/a/b") == 0, "%s", rtc_cache_dir());
  unsetenv("TILEBENCH_CACHE_DIR");
  setenv("XDG_CACHE_HOME", "/xdg", 1);
  CHECK(strcmp(rtc_cache_dir(), "/xdg/tilebench/rtc") == 0, "%s", rtc_cache_dir());
  unsetenv("XDG_CACHE_HOME");
  setenv("HOME", "/home/someone", 1);
  CHECK(strcmp(rtc_cache_dir(), "/home/someone/.cache/tilebench/rtc") == 0, "%s", rtc_cache_dir());
  setenv("TILEBENCH_CACHE_DIR", cache_dir, 1);
}

int main(void) {
  int major = 0, minor = 0;
  if (rtc_version(&major, &minor) != GPU_OK) {
    fprintf(stderr, "skipped: %s\n", gpu_last_error());
    return 77;
  }
  CHECK(major >= 11, "NVRTC %d.%d", major, minor);
  /* A fresh directory that does not exist yet: the cache must create it. */
  char base[] = "/tmp/tb-test-rtc-XXXXXX";
  if (mkdtemp(base) == NULL) return 1;
  snprintf(cache_dir, sizeof cache_dir, "%s/nested/cache", base);
  setenv("TILEBENCH_CACHE_DIR", cache_dir, 1);

  compile_then_cache_hit();
  key_follows_every_input();
  broken_source_returns_log();
  ptx_and_half_types();
  bad_arguments();
  damaged_entries_are_recompiled();
  unusable_cache_fails_loudly();
  cache_dir_precedence();

  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
  if (system(cmd) != 0) fprintf(stderr, "note: could not remove %s\n", base);
  if (failures) fprintf(stderr, "%d check(s) failed\n", failures);
  return failures ? 1 : 0;
}
