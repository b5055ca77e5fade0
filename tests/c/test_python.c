/* test_python.c: the embedded interpreter (host/python.c) without Lua and without a GPU: it starts
 * from python3 on PATH, reports what it opened, and the bridge hands a function a tensor
 * description (pointer, shape, strides, dtype) as __cuda_array_interface__ and returns its
 * result; a raising function comes back as data with its file in the traceback, a missing bridge
 * function as an error. Skips (77) where no python3 with a shared libpython exists. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "python.h"

static int failures;
#define CHECK(cond, ...)                                 \
  do {                                                   \
    if (!(cond)) {                                       \
      failures++;                                        \
      fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);    \
      fprintf(stderr, __VA_ARGS__);                      \
      fputc('\n', stderr);                               \
    }                                                    \
  } while (0)

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

  /* started once: a second start returns the first outcome */
  CHECK(python_start(&why) == 0, "second start: %s", why);
  if (failures) fprintf(stderr, "%d failures\n", failures);
  else printf("ok\n");
  return failures ? 1 : 0;
}
