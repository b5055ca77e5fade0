/* backend.c: which backend this process uses. Backends register by name (CUDA is built in; a C
 * unit test adds its fake); the choice is made at run time, by gpu_backend_select() or by
 * $TILEBENCH_BACKEND (main.c refuses an unknown name at start-up), and CUDA without either. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu.h"

#define MAX_BACKENDS 8

static const gpu_backend *backends[MAX_BACKENDS];
static int n_backends;
static const gpu_backend *selected;

static void register_builtin(void) {
  if (n_backends == 0) backends[n_backends++] = gpu_cuda_backend();
}

static const gpu_backend *find(const char *name) {
  register_builtin();
  for (int i = 0; i < n_backends; i++)
    if (strcmp(backends[i]->name, name) == 0) return backends[i];
  return NULL;
}

const char *gpu_backend_names(void) {
  static char names[256];
  size_t used = 0;
  register_builtin();
  names[0] = '\0';
  for (int i = 0; i < n_backends && used < sizeof names; i++)
    used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "", backends[i]->name);
  return names;
}

gpu_status gpu_backend_register(const gpu_backend *b) {
  if (b == NULL || b->name == NULL) return gpu_set_error(GPU_ERR_INVALID, "gpu_backend_register: no backend");
  if (find(b->name)) return gpu_set_error(GPU_ERR_INVALID, "gpu_backend_register: '%s' is taken", b->name);
  if (n_backends == MAX_BACKENDS) return gpu_set_error(GPU_ERR_INVALID, "gpu_backend_register: too many backends");
  backends[n_backends++] = b;
  return GPU_OK;
}

gpu_status gpu_backend_select(const char *name) {
  const gpu_backend *b = name ? find(name) : NULL;
  if (b == NULL)
    return gpu_set_error(GPU_ERR_INVALID, "unknown GPU backend '%s' (known: %s)", name ? name : "(null)",
                         gpu_backend_names());
  selected = b;
  return GPU_OK;
}

const gpu_backend *gpu_backend_get(void) {
  if (selected) return selected;
  const char *env = getenv("TILEBENCH_BACKEND");
  if (env == NULL || *env == '\0' || gpu_backend_select(env) != GPU_OK) selected = gpu_cuda_backend();
  return selected;
}
