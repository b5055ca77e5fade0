/* test_host_kernels.c: every host/kernels/NAME.cu embedded in the binary compiles with NVRTC for
 * sm_90 with the embedded .cuh headers, as tb_host_kernel() compiles it on the GPU machine.
 * Needs no GPU; skips (77) without libnvrtc. */
#include <stdio.h>
#include <string.h>

#include "gpu/gpu.h"

struct tb_embedded_source {
  const char *name;
  const char *text;
  size_t size;
};
extern const struct tb_embedded_source tb_embedded_sources[];

static int is_header(const char *name) {
  size_t n = strlen(name);
  return n > 4 && strcmp(name + n - 4, ".cuh") == 0;
}

int main(void) {
  int major, minor;
  if (rtc_version(&major, &minor) != GPU_OK) {
    fprintf(stderr, "skipped: %s\n", gpu_last_error());
    return 77;
  }
  rtc_header headers[64];
  int n_headers = 0, n_sources = 0, failures = 0;
  for (const struct tb_embedded_source *s = tb_embedded_sources; s->name; s++) {
    if (strlen(s->text) != s->size) {
      fprintf(stderr, "%s: embedded size %zu, text length %zu\n", s->name, s->size, strlen(s->text));
      failures++;
    }
    if (is_header(s->name) && n_headers < 64) headers[n_headers++] = (rtc_header){s->name, s->text};
  }
  for (const struct tb_embedded_source *s = tb_embedded_sources; s->name; s++) {
    if (is_header(s->name)) continue;
    n_sources++;
    char program[160];
    snprintf(program, sizeof program, "host/kernels/%s", s->name);
    rtc_result r;
    gpu_status st = rtc_compile(s->text, program, headers, n_headers, NULL, 0, "sm_90", &r);
    if (st != GPU_OK) {
      fprintf(stderr, "%s\n", gpu_last_error());
      failures++;
    } else {
      printf("%s: %zu-byte cubin%s\n", program, r.size, r.from_cache ? " (cached)" : "");
    }
    rtc_result_free(&r);
  }
  printf("%d host kernel file(s), %d header(s)\n", n_sources, n_headers);
  return failures ? 1 : 0;
}
