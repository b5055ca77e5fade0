/* test_host_kernels.c: every host/kernels/NAME.cu embedded in the binary compiles with NVRTC for
 * sm_90 with the embedded .cuh headers it includes (host_kernel_headers), as host_kernel()
 * compiles it on the GPU machine; each kernel gets exactly the headers it includes. Needs no GPU
 * for the compiles; skips (77) without libnvrtc. */
#include <stdio.h>
#include <string.h>

#include "gpu/gpu.h"
#include "host_kernels.h"

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

/* The names host_kernel_headers gives source, joined by ','. */
static const char *header_names(const char *source) {
  static char out[256];
  rtc_header h[8];
  int n = host_kernel_headers(source, h, 8);
  out[0] = '\0';
  for (int i = 0; i < n; i++) {
    if (i) strncat(out, ",", sizeof out - strlen(out) - 1);
    strncat(out, h[i].name, sizeof out - strlen(out) - 1);
  }
  return out;
}

static int expect_headers(const char *what, const char *source, const char *want) {
  const char *got = header_names(source);
  if (strcmp(got, want) == 0) return 0;
  fprintf(stderr, "%s: headers '%s', want '%s'\n", what, got, want);
  return 1;
}

int main(void) {
  /* Which headers a host kernel is handed (and so hashed into its cache key): those it includes. */
  int failures = 0;
  failures += expect_headers("tensor.cu", host_kernel_source("tensor.cu", NULL), "tb_host.cuh");
  failures += expect_headers("verify.cu", host_kernel_source("verify.cu", NULL), "tb_host.cuh");
  failures += expect_headers("clock_probe.cu", host_kernel_source("clock_probe.cu", NULL), "");
  failures += expect_headers("evict.cu", host_kernel_source("evict.cu", NULL), "");
  failures += expect_headers("peaks.cu", host_kernel_source("peaks.cu", NULL), "");
  failures += expect_headers("spaced", "int a;\n  #  include   \"tb_host.cuh\" // why\n", "tb_host.cuh");
  failures += expect_headers("under #if 0", "#if 0\n#include \"tb_host.cuh\"\n#endif\n", "tb_host.cuh");
  failures += expect_headers("other names", "#include <tb_host.cuh>\n#include \"tb_host.cuhx\"\n"
                             "// #include \"tb_host.cuh\"\nx #include \"tb_host.cuh\"\n", "");
  failures += expect_headers("last line", "#include \"tb_host.cuh\"", "tb_host.cuh");

  int major, minor;
  if (rtc_version(&major, &minor) != GPU_OK) {
    fprintf(stderr, "compiles skipped: %s\n", gpu_last_error());
    return failures ? 1 : 77;
  }
  int n_headers = 0, n_sources = 0;
  for (const struct tb_embedded_source *s = tb_embedded_sources; s->name; s++) {
    if (strlen(s->text) != s->size) {
      fprintf(stderr, "%s: embedded size %zu, text length %zu\n", s->name, s->size, strlen(s->text));
      failures++;
    }
    if (is_header(s->name)) n_headers++;
  }
  for (const struct tb_embedded_source *s = tb_embedded_sources; s->name; s++) {
    if (is_header(s->name)) continue;
    n_sources++;
    char program[160];
    snprintf(program, sizeof program, "host/kernels/%s", s->name);
    rtc_header headers[32];
    int n = host_kernel_headers(s->text, headers, 32);
    rtc_result r;
    gpu_status st = rtc_compile(s->text, program, headers, n, NULL, 0, "sm_90", &r);
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
