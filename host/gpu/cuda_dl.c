/* cuda_dl.c: finds and opens the GPU libraries (libnvrtc, libcupti, libcublasLt) with dlopen, in the
 * order DESIGN.md gives, so one binary runs with or without a toolkit on the loader path. */
#define _GNU_SOURCE /* dlinfo */
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu.h"

/* Appends "text" to buf (bounded, always NUL-terminated). */
static void append(char *buf, size_t cap, size_t *len, const char *text) {
  if (*len >= cap) return;
  int n = snprintf(buf + *len, cap - *len, "%s", text);
  if (n > 0) *len += (size_t)n < cap - *len ? (size_t)n : cap - *len - 1;
}

/* Tries one candidate; on failure adds "  <where>: <dlerror>" to the report. */
static void *try_open(const char *path, char *report, size_t cap, size_t *len) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (h) return h;
  const char *why = dlerror();
  append(report, cap, len, "\n  ");
  append(report, cap, len, path);
  append(report, cap, len, ": ");
  append(report, cap, len, why ? why : "cannot be opened");
  return NULL;
}

/* Where the loader actually took the library from (the system loader resolves a bare name). */
static void loaded_path(void *h, const char *fallback, char *found_path, size_t found_len) {
  if (found_path == NULL || found_len == 0) return;
  snprintf(found_path, found_len, "%s", fallback);
  struct link_map *lm = NULL;
  if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && lm->l_name[0])
    snprintf(found_path, found_len, "%s", lm->l_name);
}

void *gpu_dlopen_first(const char *const *names, char *found_path, size_t found_len) {
  static char report[4096];
  size_t len = 0;
  report[0] = '\0';
  const char *env_dir = getenv("TILEBENCH_CUDA_LIB_DIR");
  const char *cuda_home = getenv("CUDA_HOME");
  const char *dirs_after[2] = {cuda_home && *cuda_home ? cuda_home : NULL, "/usr/local/cuda"};

  for (const char *const *name = names; name && *name; name++) {
    char path[1024];
    void *h;
    if (env_dir && *env_dir) {
      snprintf(path, sizeof path, "%s/%s", env_dir, *name);
      if ((h = try_open(path, report, sizeof report, &len))) {
        loaded_path(h, path, found_path, found_len);
        return h;
      }
    }
    if ((h = try_open(*name, report, sizeof report, &len))) {
      loaded_path(h, *name, found_path, found_len);
      return h;
    }
    for (int i = 0; i < 2; i++) {
      if (dirs_after[i] == NULL) continue;
      if (i == 1 && dirs_after[0] && strcmp(dirs_after[0], dirs_after[1]) == 0) continue;
      snprintf(path, sizeof path, "%s/lib64/%s", dirs_after[i], *name);
      if ((h = try_open(path, report, sizeof report, &len))) {
        loaded_path(h, path, found_path, found_len);
        return h;
      }
    }
  }
  char wanted[512];
  size_t wlen = 0;
  wanted[0] = '\0';
  for (const char *const *name = names; name && *name; name++) {
    if (wlen) append(wanted, sizeof wanted, &wlen, " or ");
    append(wanted, sizeof wanted, &wlen, *name);
  }
  gpu_set_error(GPU_ERR_NO_LIBRARY, "%s not found; searched:%s", wlen ? wanted : "(no library named)",
                report);
  return NULL;
}
