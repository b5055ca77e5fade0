/* sha256.h: SHA-256 (FIPS 180-4) for the compile cache: its keys and the checksums that verify
 * its entries on read. Internal to host/gpu/. */
#ifndef TB_GPU_SHA256_H
#define TB_GPU_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct sha256 {
  uint32_t h[8];
  uint64_t bytes;
  unsigned char block[64];
  size_t fill;
} sha256;

void sha256_init(sha256 *s);
void sha256_update(sha256 *s, const void *data, size_t len);
/* Finishes the hash into 64 hex digits and a NUL; s is spent afterwards. */
void sha256_hex(sha256 *s, char out[65]);
/* One tagged, length-prefixed field, so that ("ab","c") and ("a","bc") hash differently. */
void sha256_field(sha256 *s, const char *tag, const void *data, size_t len);

#endif
