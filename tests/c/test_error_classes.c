/* test_error_classes.c: the classification of GPU failures, without a GPU. The CUDA backend
 * turns a driver error into a gpu_status (one sticky list, cuda.c); each status has one class
 * (host/gpu/error.c) that Lua receives on a structured error (tb.error) and the campaign maps to
 * a row status (runner.lua; tests/lua/runner_spec.lua checks that side). */
#include <cuda.h>
#include <stdio.h>
#include <string.h>

#include "gpu/cuda_errors.h"
#include "gpu/gpu.h"

#include "check.h"

#define CU(name) name, #name
static const struct {
  CUresult r;
  const char *name;
  gpu_status want;
} cases[] = {
  {CU(CUDA_ERROR_OUT_OF_MEMORY), GPU_ERR_OOM},
  {CU(CUDA_ERROR_ILLEGAL_ADDRESS), GPU_ERR_FAULT},
  {CU(CUDA_ERROR_ILLEGAL_INSTRUCTION), GPU_ERR_FAULT},
  {CU(CUDA_ERROR_MISALIGNED_ADDRESS), GPU_ERR_FAULT},
  {CU(CUDA_ERROR_INVALID_ADDRESS_SPACE), GPU_ERR_FAULT}, /* sticky before the INVALID_ prefix */
  {CU(CUDA_ERROR_INVALID_PC), GPU_ERR_FAULT},
  {CU(CUDA_ERROR_LAUNCH_FAILED), GPU_ERR_FAULT},
  {CU(CUDA_ERROR_HARDWARE_STACK_ERROR), GPU_ERR_FAULT},
  {CU(CUDA_ERROR_ASSERT), GPU_ERR_FAULT},
  {CU(CUDA_ERROR_LAUNCH_TIMEOUT), GPU_ERR_FAULT},
  {CU(CUDA_ERROR_ECC_UNCORRECTABLE), GPU_ERR_FAULT},
  {CU(CUDA_ERROR_CONTEXT_IS_DESTROYED), GPU_ERR_FAULT}, /* runner.lua had it, cuda.c had not */
  {CU(CUDA_ERROR_INVALID_VALUE), GPU_ERR_INVALID},
  {CU(CUDA_ERROR_INVALID_IMAGE), GPU_ERR_INVALID},
  {CU(CUDA_ERROR_NOT_FOUND), GPU_ERR_INVALID},
  {CU(CUDA_ERROR_NO_BINARY_FOR_GPU), GPU_ERR_INVALID},
  {CU(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES), GPU_ERR_INVALID},
  {CU(CUDA_ERROR_NOT_READY), GPU_ERR_OTHER},
  {CU(CUDA_ERROR_UNKNOWN), GPU_ERR_OTHER},
};

static void test_cuda_classification(void) {
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    gpu_status st = cuda_error_status((int)cases[i].r, cases[i].name);
    CHECK(st == cases[i].want, "%s -> %d, want %d", cases[i].name, (int)st, (int)cases[i].want);
  }
  /* a driver that cannot name its error: out of memory is still known by its code */
  CHECK(cuda_error_status(CUDA_ERROR_OUT_OF_MEMORY, NULL) == GPU_ERR_OOM, "unnamed oom");
  CHECK(cuda_error_status(999, "CUDA error 999") == GPU_ERR_OTHER, "unknown code");
}

static void test_classes(void) {
  /* every status but GPU_OK has exactly one class, with a unique name */
  int seen = 0;
  for (int st = GPU_ERR_NO_DRIVER; st <= GPU_ERR_OTHER; st++) {
    const gpu_error_class *c = gpu_status_class((gpu_status)st);
    CHECK(c != NULL && c->status == (gpu_status)st, "status %d has its own class", st);
    seen++;
  }
  int n = 0;
  for (const gpu_error_class *c = gpu_error_classes; c->name; c++, n++)
    for (const gpu_error_class *d = c + 1; d->name; d++) CHECK(strcmp(c->name, d->name) != 0, "duplicate %s", c->name);
  CHECK(n == seen, "%d classes for %d statuses", n, seen);
  CHECK(gpu_status_class(GPU_OK) == NULL, "GPU_OK has no class");
  CHECK(strcmp(gpu_status_class((gpu_status)1234)->name, "other") == 0, "an unknown status is 'other'");

  static const struct { gpu_status st; const char *name; int lost; } want[] = {
    {GPU_ERR_NO_DRIVER, "no_driver", 0}, {GPU_ERR_OOM, "oom", 0}, {GPU_ERR_INVALID, "launch", 0},
    {GPU_ERR_COMPILE, "compile", 0}, {GPU_ERR_FAULT, "fault", 1}, {GPU_ERR_TIMEOUT, "timeout", 1},
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    const gpu_error_class *c = gpu_status_class(want[i].st);
    CHECK(strcmp(c->name, want[i].name) == 0, "status %d is '%s', want '%s'", (int)want[i].st, c->name, want[i].name);
    CHECK(c->context_lost == want[i].lost, "%s: context_lost %d", c->name, c->context_lost);
  }
  /* only a sticky fault and a hung kernel lose the context */
  for (const gpu_error_class *c = gpu_error_classes; c->name; c++)
    CHECK(c->context_lost == (c->status == GPU_ERR_FAULT || c->status == GPU_ERR_TIMEOUT), "%s", c->name);
}

static void test_api(void) {
  gpu_set_api_error(GPU_ERR_FAULT, "cuLaunchKernel", "cuLaunchKernel: %s", "CUDA_ERROR_ILLEGAL_ADDRESS (x)");
  CHECK(strcmp(gpu_last_error_api(), "cuLaunchKernel") == 0, "api %s", gpu_last_error_api());
  CHECK(strcmp(gpu_last_error(), "cuLaunchKernel: CUDA_ERROR_ILLEGAL_ADDRESS (x)") == 0, "%s", gpu_last_error());
  /* wrapping keeps the api (tb_plan_run does this) */
  gpu_set_api_error(GPU_ERR_FAULT, gpu_last_error_api(), "plan step 1 ('k'): %s", "...");
  CHECK(strcmp(gpu_last_error_api(), "cuLaunchKernel") == 0, "wrapped api %s", gpu_last_error_api());
  gpu_set_error(GPU_ERR_INVALID, "no api here");
  CHECK(gpu_last_error_api()[0] == '\0', "gpu_set_error clears the api: %s", gpu_last_error_api());
}

int main(void) {
  test_cuda_classification();
  test_classes();
  test_api();
  if (failures) fprintf(stderr, "%d failure(s)\n", failures);
  else printf("ok\n");
  return failures ? 1 : 0;
}
