/* test_python.c: the embedded interpreter (host/python.c) without Lua and without a GPU: it starts
 * from python3 on PATH, reports what it opened, and the bridge hands a function a tensor
 * description (pointer, shape, strides, dtype) as __cuda_array_interface__ and returns its
 * result; a raising function comes back as data with its file in the traceback, a missing bridge
 * function as an error. A bridge step (kind "plain": no torch) runs as a launch-plan step on the
 * fake backend, with the native handle of the plan's stream, as the torch step does on CUDA; a
 * step that raises stops the plan with the exception. Skips (77) where no python3 with a shared
 * libpython exists. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_backend.h"
#include "launch_plan.h"
#include "python.h"

#include "check.h"

int main(void) {
  const char *why;
  if (python_start(&why) != 0) {
    printf("skipped: %s\n", why);
    return 77;
  }
  CHECK(strncmp(python_version(), "3.", 2) == 0, "version '%s'", python_version());
  CHECK(strstr(python_library(), "libpython3") != NULL, "library '%s'", python_library());
  const char *home = getenv("TILEBENCH_HOME");
  if (!home) home = TB_SOURCE_DIR;

  char desc[2048], *out = NULL;
  snprintf(desc, sizeof desc,
           "{\"file\": \"%s/tests/fixtures/python/describe_torch.py\", \"function\": \"forward\", "
           "\"inputs\": [{\"name\": \"x\", \"ptr\": 1048576, \"shape\": [4, 8], \"strides\": [8, 1], "
           "\"dtype\": \"fp32\"}], \"params\": {\"n\": 32, \"dtype\": \"fp32\"}}", home);
  CHECK(python_call("call", desc, 0, &out) == 0, "call failed: %s", out ? out : "");
  CHECK(out && strstr(out, "\"typestr\": \"<f4\""), "result %s", out ? out : "");
  CHECK(out && strstr(out, "\"ptr\": 1048576"), "result %s", out ? out : "");
  CHECK(out && strstr(out, "\"strides\": [32, 4]"), "strides in bytes: %s", out ? out : "");
  CHECK(out && strstr(out, "\"n\": 32"), "params: %s", out ? out : "");
  free(out);

  char *b = strstr(desc, "\"forward\"");
  memcpy(b, "\"broken\" ", 9); /* same length: the function that raises */
  out = NULL;
  CHECK(python_call("call", desc, 0, &out) == 0, "call failed: %s", out ? out : "");
  CHECK(out && strstr(out, "describe_torch.py") && strstr(out, "ValueError: broken on purpose"),
        "traceback %s", out ? out : "");
  free(out);

  out = NULL;
  CHECK(python_call("no_such_bridge_function", "", 0, &out) == -1, "a missing bridge function succeeded");
  CHECK(out && strstr(out, "no function"), "message %s", out ? out : "");
  free(out);

  /* The plan-step seam: a bridge step replayed by launch_plan_run on the fake backend. */
  CHECK(gpu_backend_register(fake_backend()) == GPU_OK && gpu_backend_select("fake") == GPU_OK, "%s",
        gpu_last_error());
  const gpu_backend *B = gpu_backend_get();
  gpu_stream S = NULL;
  CHECK(B->init() == GPU_OK && B->stream_create(&S) == GPU_OK, "%s", gpu_last_error());
  long long handle = (long long)(uintptr_t)B->native_stream(S);
  for (int broken = 0; broken < 2; broken++) {
    char *was_broken = strstr(desc, "\"broken\" ");
    if (was_broken) memcpy(was_broken, "\"forward\"", 9); /* the section above left it broken */
    char plain[2200];
    snprintf(plain, sizeof plain, "{\"kind\": \"plain\", %s", desc + 1);
    if (broken) memcpy(strstr(plain, "\"forward\""), "\"broken\" ", 9);
    out = NULL;
    CHECK(python_call("make_step", plain, 0, &out) == 0, "make_step: %s", out ? out : "");
    python_step step = {0, "describe_torch.py"};
    const char *idp = out ? strstr(out, "\"id\": ") : NULL;
    if (idp) step.id = atoll(idp + 6);
    CHECK(step.id > 0, "no step id in %s", out ? out : "");
    free(out);
    launch_plan *p = launch_plan_new(1);
    CHECK(p && launch_plan_add_call(p, python_step_run, &step, "describe_torch.py") == GPU_OK, "%s", gpu_last_error());
    if (!broken) {
      for (int i = 0; i < 3; i++) CHECK(launch_plan_run(p, B, S) == GPU_OK, "run: %s", gpu_last_error());
      char id[32];
      snprintf(id, sizeof id, "%lld", step.id);
      out = NULL;
      CHECK(python_call("finish", id, 0, &out) == 0, "finish: %s", out ? out : "");
      char want[64];
      snprintf(want, sizeof want, "\"streams\": [%lld]", handle);
      CHECK(out && strstr(out, "\"calls\": 3") && strstr(out, want), "finish %s (want %s)", out ? out : "", want);
      CHECK(out && strstr(out, "\"typestr\": \"<f4\""), "result %s", out ? out : "");
      free(out);
    } else {
      gpu_status st = launch_plan_run(p, B, S);
      CHECK(st == GPU_ERR_OTHER, "a raising step gave %d", (int)st);
      CHECK(strstr(gpu_last_error(), "describe_torch.py raised ValueError: broken on purpose") != NULL,
            "message %s", gpu_last_error());
    }
    launch_plan_free(p);
  }
  python_step closed = {0, "x"};
  CHECK(python_step_run(&closed, S) == GPU_ERR_INVALID, "a closed step ran");

  /* started once: a second start returns the first outcome */
  CHECK(python_start(&why) == 0, "second start: %s", why);
  if (failures) fprintf(stderr, "%d failures\n", failures);
  else printf("ok\n");
  return failures ? 1 : 0;
}
