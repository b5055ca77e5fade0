/* test_cache_entry.c: cache entries another compiler fills (rtc_cache_read/write, used for Triton's
 * cubins and descriptions): a written entry reads back byte for byte (binary, with NULs); a
 * missing one is a miss; a damaged one (flipped byte, cut, no .sum) is a miss; names that are not
 * "<sha256 hex>.<ext>" are refused, so nothing is written outside the directory. No GPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu/gpu.h"

#include "check.h"

#define KEY "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static void overwrite(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  if (f == NULL || fwrite(data, 1, n, f) != n) failures++;
  if (f) fclose(f);
}

int main(void) {
  char base[] = "/tmp/tb-test-entry-XXXXXX";
  if (mkdtemp(base) == NULL) return 1;
  char dir[300], path[400], sum[420];
  snprintf(dir, sizeof dir, "%s/fresh/cache", base);
  setenv("TILEBENCH_CACHE_DIR", dir, 1);
  const char image[] = "\x7f" "ELF\0binary\0with NULs";
  char *data = NULL;
  size_t size = 99;

  CHECK(rtc_cache_read(KEY ".cubin", &data, &size) == GPU_OK && data == NULL && size == 0, "miss: %p", (void *)data);
  CHECK(rtc_cache_write(KEY ".cubin", image, sizeof image) == GPU_OK, "%s", gpu_last_error());
  CHECK(rtc_cache_read(KEY ".cubin", &data, &size) == GPU_OK && data != NULL, "%s", gpu_last_error());
  CHECK(data && size == sizeof image && memcmp(data, image, size) == 0, "read back %zu bytes", size);
  free(data);

  /* a flipped byte, then a cut file, then no checksum: each a miss */
  snprintf(path, sizeof path, "%s/" KEY ".cubin", dir);
  snprintf(sum, sizeof sum, "%s.sum", path);
  char flipped[sizeof image];
  memcpy(flipped, image, sizeof image);
  flipped[7] ^= 1;
  overwrite(path, flipped, sizeof flipped);
  CHECK(rtc_cache_read(KEY ".cubin", &data, &size) == GPU_OK && data == NULL, "flipped byte was a hit");
  overwrite(path, image, 5);
  CHECK(rtc_cache_read(KEY ".cubin", &data, &size) == GPU_OK && data == NULL, "cut file was a hit");
  CHECK(rtc_cache_write(KEY ".cubin", image, sizeof image) == GPU_OK, "%s", gpu_last_error());
  unlink(sum);
  CHECK(rtc_cache_read(KEY ".cubin", &data, &size) == GPU_OK && data == NULL, "entry without .sum was a hit");

  const char *bad[] = {"../" KEY ".cubin", KEY, KEY ".", KEY "./x", "0123.cubin",
                       "0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef.cubin", NULL};
  for (int i = 0; bad[i]; i++) {
    CHECK(rtc_cache_write(bad[i], image, sizeof image) == GPU_ERR_INVALID, "'%s' accepted", bad[i]);
    CHECK(strstr(gpu_last_error(), "bad entry name") != NULL, "%s", gpu_last_error());
    CHECK(rtc_cache_read(bad[i], &data, &size) == GPU_ERR_INVALID, "'%s' read", bad[i]);
  }

  /* an unusable directory is an error naming it */
  setenv("TILEBENCH_CACHE_DIR", "/proc/tb-no-such/cache", 1);
  CHECK(rtc_cache_write(KEY ".json", "{}", 2) != GPU_OK, "wrote into /proc");
  CHECK(strstr(gpu_last_error(), "/proc/tb-no-such/cache") != NULL, "%s", gpu_last_error());

  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
  if (system(cmd) != 0) fprintf(stderr, "note: could not remove %s\n", base);
  if (failures) fprintf(stderr, "%d check(s) failed\n", failures);
  return failures ? 1 : 0;
}
