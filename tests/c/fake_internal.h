/* fake_internal.h: what the fake backend's files share (fake_backend.c, fake_timestamps.c). Tests
 * use fake_backend.h only. */
#ifndef TB_FAKE_INTERNAL_H
#define TB_FAKE_INTERNAL_H

#include "fake_backend.h"

void *fake_grow(void *arr, size_t *cap, size_t need, size_t elem); /* realloc to >= need, or abort */
fake_op *fake_log_op(fake_op_kind kind, gpu_stream s);             /* appends to fake.ops */

/* fake_timestamps.c */
extern const gpu_timestamps fake_timestamps_table;
uint64_t fake_ts_tag(void); /* the id pushed last (0: none) */
/* Records a kernel's execution (when the timestamps were started). */
void fake_ts_kernel(const char *name, uint64_t tag, uint64_t nth, double start_ns, double end_ns);
void fake_ts_reset(void); /* forgets records, ids and the clipped total */

#endif
