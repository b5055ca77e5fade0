/* atomic_file.c: replace a file so that a reader sees the old content or the new, never a part,
 * and a failure (full disk, quota, I/O error, kill) leaves the old file and says why.
 *
 * Temp names carry host, pid and 64 random bits: shards of one campaign on several hosts and
 * processes of one host write into one results folder at once (the cluster pattern), and
 * seconds plus a counter collided there. The same fields tell an orphan from a live write. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "atomic_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TMP_TAG ".tmp-"

/* The host name as it goes into a temp name: [A-Za-z0-9] kept, anything else '_', 32 at most. */
static void host_tag(char *out, size_t n) {
  char host[256] = "host";
  if (gethostname(host, sizeof host - 1) != 0) strcpy(host, "host");
  host[sizeof host - 1] = '\0';
  size_t j = 0;
  for (size_t i = 0; host[i] && j + 1 < n && j < 32; i++) {
    char c = host[i];
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    out[j++] = ok ? c : '_';
  }
  out[j] = '\0';
}

static uint64_t random64(void) {
  uint64_t r;
  if (getrandom(&r, sizeof r, GRND_NONBLOCK) == (ssize_t)sizeof r) return r;
  /* no entropy yet (early boot): pid, clock and a counter still make the name unique here */
  static uint64_t counter;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  r = ((uint64_t)getpid() << 40) ^ ((uint64_t)ts.tv_sec << 20) ^ (uint64_t)ts.tv_nsec ^ ++counter;
  return r * 0x9E3779B97F4A7C15ull;
}

static void split_path(const char *path, char *dir, size_t dn, const char **base) {
  const char *slash = strrchr(path, '/');
  if (slash == NULL) snprintf(dir, dn, "."), *base = path;
  else if (slash == path) snprintf(dir, dn, "/"), *base = slash + 1;
  else snprintf(dir, dn, "%.*s", (int)(slash - path), path), *base = slash + 1;
}

static int fail(char *err, size_t cap, const char *path, const char *step, int e) {
  if (err && cap) snprintf(err, cap, "write %s: %s: %s", path, step, strerror(e));
  errno = e;
  return -1;
}

/* Whether this process has not yet swept dir for orphans (and now will): a sweep reads the whole
 * directory, and the compile cache holds thousands of entries written one after another, so a
 * sweep per write would cost a directory scan per kernel. Orphans appear only when a writer is
 * killed, so once per directory per process is enough; a later process sweeps again. Remembers
 * the last 32 directories by hash (single-threaded callers). */
static int first_sweep(const char *dir) {
  static uint64_t seen[32];
  static unsigned next;
  uint64_t h = 1469598103934665603ull;
  for (const char *c = dir; *c; c++) h = (h ^ (unsigned char)*c) * 1099511628211ull;
  h |= 1; /* never 0, the empty slot */
  for (unsigned i = 0; i < sizeof seen / sizeof seen[0]; i++)
    if (seen[i] == h) return 0;
  seen[next++ % (sizeof seen / sizeof seen[0])] = h;
  return 1;
}

int atomic_write(const char *path, const void *data, size_t len, char *err, size_t errcap) {
  char dir[PATH_MAX], host[40], tmp[PATH_MAX + 128];
  const char *base;
  split_path(path, dir, sizeof dir, &base);
  if (*base == '\0') return fail(err, errcap, path, "name", EISDIR);
  host_tag(host, sizeof host);
  int n = snprintf(tmp, sizeof tmp, "%s/.%s" TMP_TAG "%s-%ld-%016llx", dir, base, host, (long)getpid(),
                   (unsigned long long)random64());
  if (n < 0 || (size_t)n >= sizeof tmp) return fail(err, errcap, path, "temp name", ENAMETOOLONG);
  if (first_sweep(dir)) atomic_clean_orphans(dir);

  const char *step = "create temp file";
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) return fail(err, errcap, path, step, errno);
  const char *p = data;
  size_t off = 0;
  while (off < len) {
    ssize_t w = write(fd, p + off, len - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) { step = "write"; goto fail_fd; }
    off += (size_t)w;
  }
  if (fsync(fd) < 0) { step = "fsync"; goto fail_fd; }
  if (close(fd) < 0) { fd = -1; step = "close"; goto fail_fd; }
  fd = -1;
  if (rename(tmp, path) < 0) { step = "rename"; goto fail_fd; }
  /* the rename is durable only once the directory is; a file system that cannot fsync a
   * directory (EINVAL) has nothing more to make durable */
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return fail(err, errcap, path, "open directory", errno);
  if (fsync(dfd) < 0 && errno != EINVAL && errno != ENOTSUP) {
    int e = errno;
    close(dfd);
    return fail(err, errcap, path, "fsync directory", e);
  }
  close(dfd);
  return 0;

fail_fd: {
    int e = errno ? errno : EIO; /* write() returning 0 sets nothing */
    if (fd >= 0) close(fd);
    unlink(tmp);
    return fail(err, errcap, path, step, e);
  }
}

/* ".NAME.tmp-HOST-PID-RANDOM": host and pid, or 0 when name is not one of our temp files. */
static int parse_temp_name(const char *name, char *host, size_t hn, long *pid) {
  if (name[0] != '.') return 0;
  const char *tag = NULL;
  for (const char *s = strstr(name, TMP_TAG); s; s = strstr(s + 1, TMP_TAG)) tag = s;
  if (tag == NULL) return 0;
  const char *rnd = strrchr(name, '-');
  if (rnd == NULL || strlen(rnd + 1) != 16 || strspn(rnd + 1, "0123456789abcdef") != 16) return 0;
  const char *pid_start = rnd;
  while (pid_start > tag && pid_start[-1] != '-') pid_start--;
  if (pid_start == rnd || pid_start - 1 <= tag + strlen(TMP_TAG) - 1) return 0;
  if (strspn(pid_start, "0123456789") != (size_t)(rnd - pid_start)) return 0;
  *pid = strtol(pid_start, NULL, 10);
  const char *h = tag + strlen(TMP_TAG);
  size_t len = (size_t)(pid_start - 1 - h);
  if (len == 0 || len >= hn) return 0;
  memcpy(host, h, len);
  host[len] = '\0';
  return 1;
}

int atomic_clean_orphans(const char *dir) {
  DIR *d = opendir(dir);
  if (d == NULL) return -1;
  char me[40], host[64];
  host_tag(me, sizeof me);
  time_t now = time(NULL);
  int removed = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    long pid;
    if (!parse_temp_name(e->d_name, host, sizeof host, &pid)) continue;
    struct stat st;
    if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
    int dead_here = strcmp(host, me) == 0 && pid > 0 && pid != (long)getpid() && kill((pid_t)pid, 0) != 0 &&
                    errno == ESRCH;
    int old = now - st.st_mtime > ATOMIC_ORPHAN_AGE_S;
    if ((dead_here || old) && unlinkat(dirfd(d), e->d_name, 0) == 0) removed++;
  }
  closedir(d);
  return removed;
}
