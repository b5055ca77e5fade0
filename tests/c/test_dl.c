/* test_dl.c: library lookup and the CUDA backend's answers when no usable driver is there: the
 * messages name the library and every place searched, and nothing is called before init(). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpu/gpu.h"

#include "check.h"

static void missing_library_names_every_place(void) {
  setenv("TILEBENCH_CUDA_LIB_DIR", "/nonexistent/tb-explicit", 1);
  setenv("CUDA_HOME", "/nonexistent/tb-cuda-home", 1);
  const char *names[] = {"libtb-missing.so.7", "libtb-missing.so", NULL};
  char found[256] = "untouched";
  void *h = gpu_dlopen_first(names, found, sizeof found);
  const char *msg = gpu_last_error();
  CHECK(h == NULL, "a missing library was opened");
  CHECK(strncmp(msg, "libtb-missing.so.7 or libtb-missing.so not found; searched:", 58) == 0, "%s", msg);
  const char *places[] = {"/nonexistent/tb-explicit/libtb-missing.so.7", "\n  libtb-missing.so.7: ",
                          "/nonexistent/tb-cuda-home/lib64/libtb-missing.so.7",
                          "/usr/local/cuda/lib64/libtb-missing.so.7",
                          "/nonexistent/tb-explicit/libtb-missing.so", "/usr/local/cuda/lib64/libtb-missing.so:"};
  for (size_t i = 0; i < sizeof places / sizeof places[0]; i++)
    CHECK(strstr(msg, places[i]) != NULL, "'%s' not in: %s", places[i], msg);
  CHECK(strcmp(found, "untouched") == 0, "found_path written on failure: %s", found);
}

/* The explicit directory wins, and found_path says where the library came from. */
static void explicit_directory_first(void) {
  const char *dir = "/usr/local/cuda/lib64";
  char probe[512];
  snprintf(probe, sizeof probe, "%s/libnvrtc.so.13", dir);
  if (access(probe, R_OK) != 0) {
    fprintf(stderr, "note: %s absent, explicit-directory check skipped\n", probe);
    return;
  }
  setenv("TILEBENCH_CUDA_LIB_DIR", dir, 1);
  const char *names[] = {"libnvrtc.so.13", NULL};
  char found[512] = "";
  void *h = gpu_dlopen_first(names, found, sizeof found);
  CHECK(h != NULL, "%s", gpu_last_error());
  CHECK(strcmp(found, probe) == 0, "found '%s', expected '%s'", found, probe);
  /* h stays open: NVRTC carries its own C++ runtime, whose start-up allocation LeakSanitizer
   * reports as a leak once the library is unloaded (the sanitizer build in CI) */
}

static void backend_without_driver(void) {
  const gpu_backend *b = gpu_backend_get();
  CHECK(b != NULL && b == gpu_cuda_backend() && strcmp(b->name, "cuda") == 0, "backend");
  int n = 42;
  /* Before init(): an error, never a call through an unresolved pointer. */
  CHECK(b->device_count(&n) == GPU_ERR_NO_DRIVER, "device_count before init");
  CHECK(strstr(gpu_last_error(), "before init") != NULL, "%s", gpu_last_error());

  void *system = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (system) {
    fprintf(stderr, "note: libcuda.so.1 is loadable here; the no-driver message is not checked\n");
    dlclose(system);
    return;
  }
  setenv("TILEBENCH_CUDA_LIB_DIR", "/nonexistent/tb-explicit", 1);
  gpu_status st = b->init();
  CHECK(st == GPU_ERR_NO_DRIVER, "init: %d", st);
  const char *prefix = "no CUDA driver found (libcuda.so.1: ";
  CHECK(strncmp(gpu_last_error(), prefix, strlen(prefix)) == 0, "%s", gpu_last_error());
  CHECK(gpu_last_error()[strlen(gpu_last_error()) - 1] == ')', "%s", gpu_last_error());
  char first[1024];
  snprintf(first, sizeof first, "%s", gpu_last_error());
  gpu_set_error(GPU_ERR_OTHER, "something else");
  /* A second init() answers the same, and calls after it repeat why. */
  CHECK(b->init() == GPU_ERR_NO_DRIVER && strcmp(gpu_last_error(), first) == 0, "%s", gpu_last_error());
  gpu_ptr p;
  CHECK(b->mem_alloc(&p, 16) == GPU_ERR_NO_DRIVER && strcmp(gpu_last_error(), first) == 0, "%s",
        gpu_last_error());
}

/* The toolkit's stub libcuda (what a misconfigured loader path finds) fails cuInit; the message
 * must still name the error, though the stub cannot describe it. Run in a child: init() is once. */
static void stub_driver_named(void) {
  const char *stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  if (access(stub, R_OK) != 0) {
    fprintf(stderr, "note: %s absent, stub check skipped\n", stub);
    return;
  }
  char dir[] = "/tmp/tb-test-dl-XXXXXX";
  CHECK(mkdtemp(dir) != NULL, "mkdtemp");
  char link[256];
  snprintf(link, sizeof link, "%s/libcuda.so.1", dir);
  CHECK(symlink(stub, link) == 0, "symlink");
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    setenv("TILEBENCH_CUDA_LIB_DIR", dir, 1);
    gpu_status st = gpu_backend_get()->init();
    const char *want = "cuInit: CUDA_ERROR_STUB_LIBRARY (";
    if (st != GPU_ERR_NO_DRIVER || strncmp(gpu_last_error(), want, strlen(want)) != 0) {
      fprintf(stderr, "stub driver: status %d, message: %s\n", st, gpu_last_error());
      _exit(1);
    }
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "stub driver check failed in the child");
  unlink(link);
  rmdir(dir);
}

int main(void) {
  missing_library_names_every_place();
  explicit_directory_first();
  stub_driver_named();
  backend_without_driver();
  if (failures) fprintf(stderr, "%d check(s) failed\n", failures);
  return failures ? 1 : 0;
}
