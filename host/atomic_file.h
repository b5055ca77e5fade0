/* atomic_file.h: the one way tilebench replaces a file: checked, atomic and durable.
 * Plain C (no Lua, no GPU), so tb_sys.c and the GPU layer's compile cache share it. */
#ifndef TB_ATOMIC_FILE_H
#define TB_ATOMIC_FILE_H

#include <stddef.h>

/* Temp files older than this are orphans whoever wrote them (a writer on another host of a
 * shared file system cannot be asked whether it is alive). */
#define ATOMIC_ORPHAN_AGE_S (15 * 60)

/* Replaces path with data[0..len): writes "<dir>/.<name>.tmp-<host>-<pid>-<random>", fsyncs it,
 * renames it over path and fsyncs the directory. On any failure the temp file is removed, the
 * old file (if any) is untouched, and err holds "write PATH: STEP: strerror" (returns -1, errno
 * set). Before its first write into a directory, a process removes the orphan temp files there
 * (atomic_clean_orphans). */
int atomic_write(const char *path, const void *data, size_t len, char *err, size_t errcap);

/* Removes temp files left in dir by killed writers: those of this host whose pid is gone, and
 * any older than ATOMIC_ORPHAN_AGE_S. A live writer's file is never touched. Returns how many
 * were removed (-1 if dir cannot be read). */
int atomic_clean_orphans(const char *dir);

#endif
