/* test_atomic_file.c: atomic_write keeps the old file on every failure, leaves no temp file,
 * never collides between concurrent writers, and orphan cleanup spares live writers. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "atomic_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static char dir[256];

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  static char buf[1 << 20];
  *len = fread(buf, 1, sizeof buf - 1, f);
  buf[*len] = '\0';
  fclose(f);
  return buf;
}

/* Files in dir whose name holds ".tmp-": what a failed or finished write must not leave. */
static int count_temps(const char *d) {
  DIR *h = opendir(d);
  int n = 0;
  struct dirent *e;
  while (h && (e = readdir(h)) != NULL) n += strstr(e->d_name, ".tmp-") != NULL;
  if (h) closedir(h);
  return n;
}

static void test_replace(void) {
  char path[300], err[512];
  snprintf(path, sizeof path, "%s/a.csv", dir);
  CHECK(atomic_write(path, "one\n", 4, err, sizeof err) == 0, "%s", err);
  CHECK(atomic_write(path, "two\n", 4, err, sizeof err) == 0, "%s", err);
  size_t len;
  char *s = slurp(path, &len);
  CHECK(s && len == 4 && memcmp(s, "two\n", 4) == 0, "content '%s'", s ? s : "(none)");
  CHECK(count_temps(dir) == 0, "temp files left: %d", count_temps(dir));
  CHECK(atomic_write(path, "", 0, err, sizeof err) == 0, "empty content: %s", err);
  s = slurp(path, &len);
  CHECK(s && len == 0, "empty file expected");
}

/* A disk that fills up half-way (RLIMIT_FSIZE gives EFBIG exactly as a full disk gives ENOSPC):
 * the write fails with the path and the reason, the old file is whole, no temp file is left. */
static void test_full_disk(void) {
  char path[300], err[512];
  snprintf(path, sizeof path, "%s/report.html", dir);
  static char old[8192], big[200000];
  memset(old, 'o', sizeof old);
  memset(big, 'n', sizeof big);
  CHECK(atomic_write(path, old, sizeof old, err, sizeof err) == 0, "%s", err);
  int pipefd[2];
  if (pipe(pipefd) != 0) abort();
  pid_t pid = fork();
  if (pid == 0) {
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = {100000, 100000};
    setrlimit(RLIMIT_FSIZE, &rl);
    int rc = atomic_write(path, big, sizeof big, err, sizeof err);
    if (write(pipefd[1], err, strlen(err) + 1) < 0) _exit(3);
    _exit(rc == 0 ? 0 : 1);
  }
  close(pipefd[1]);
  char msg[512] = "";
  ssize_t got = read(pipefd[0], msg, sizeof msg - 1);
  msg[got > 0 ? got : 0] = '\0';
  close(pipefd[0]);
  int st;
  waitpid(pid, &st, 0);
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1, "the write should fail (status %d)", st);
  CHECK(strstr(msg, path) != NULL && strstr(msg, "write:") != NULL && strstr(msg, strerror(EFBIG)) != NULL,
        "message '%s'", msg);
  size_t len;
  char *s = slurp(path, &len);
  CHECK(s && len == sizeof old && s[0] == 'o' && s[len - 1] == 'o', "old file damaged (len %zu)", len);
  CHECK(count_temps(dir) == 0, "temp file left after a failed write");
}

static void test_other_failures(void) {
  char path[300], err[512];
  /* a missing directory */
  snprintf(path, sizeof path, "%s/no/such/dir/x.csv", dir);
  CHECK(atomic_write(path, "x", 1, err, sizeof err) != 0 && errno == ENOENT, "missing dir accepted");
  CHECK(strstr(err, path) && strstr(err, strerror(ENOENT)), "message '%s'", err);
  /* the target is a directory: the rename fails, the directory stays */
  snprintf(path, sizeof path, "%s/sub", dir);
  mkdir(path, 0755);
  CHECK(atomic_write(path, "x", 1, err, sizeof err) != 0, "wrote over a directory");
  CHECK(strstr(err, "rename") != NULL, "message '%s'", err);
  struct stat st;
  CHECK(stat(path, &st) == 0 && S_ISDIR(st.st_mode), "directory replaced");
  CHECK(count_temps(dir) == 0, "temp file left after a failed rename");
  /* a path ending in '/' names no file */
  snprintf(path, sizeof path, "%s/", dir);
  CHECK(atomic_write(path, "x", 1, err, sizeof err) != 0, "wrote to a directory path");
}

/* Shards of one campaign write into one folder at once: no write may fail or be torn. */
static void test_concurrent(void) {
  enum { WRITERS = 8, ROUNDS = 150 };
  char path[300];
  snprintf(path, sizeof path, "%s/shared.csv", dir);
  pid_t pids[WRITERS];
  for (int w = 0; w < WRITERS; w++) {
    if ((pids[w] = fork()) == 0) {
      char content[4096], own[300], err[512];
      memset(content, 'A' + w, sizeof content);
      snprintf(own, sizeof own, "%s/own-%d.csv", dir, w);
      for (int r = 0; r < ROUNDS; r++) {
        if (atomic_write(path, content, sizeof content, err, sizeof err) != 0) _exit(1);
        if (atomic_write(own, content, (size_t)(r + 1), err, sizeof err) != 0) _exit(1);
      }
      _exit(0);
    }
  }
  int all_ok = 1;
  for (int w = 0; w < WRITERS; w++) {
    int st;
    waitpid(pids[w], &st, 0);
    all_ok &= WIFEXITED(st) && WEXITSTATUS(st) == 0;
  }
  CHECK(all_ok, "a concurrent writer failed");
  size_t len;
  char *s = slurp(path, &len);
  int whole = s && len == 4096;
  for (size_t i = 1; whole && i < len; i++) whole = s[i] == s[0];
  CHECK(whole, "the shared file is torn (len %zu)", len);
  CHECK(count_temps(dir) == 0, "temp files left: %d", count_temps(dir));
}

static void touch(const char *name, time_t age) {
  char path[2048];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) close(fd);
  struct timespec t[2] = {{time(NULL) - age, 0}, {time(NULL) - age, 0}};
  utimensat(AT_FDCWD, path, t, 0);
}

static int exists(const char *name) {
  char path[2048];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  return access(path, F_OK) == 0;
}

/* Orphans of killed writers go; a live writer's temp file (this host or another) stays. */
static void test_orphans(void) {
  char host[256] = "", me[64] = "", name[6][200];
  gethostname(host, sizeof host - 1);
  size_t j = 0;
  for (size_t i = 0; host[i] && j < 32; i++) {
    char c = host[i];
    me[j++] = ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) ? c : '_';
  }
  pid_t dead = fork();
  if (dead == 0) _exit(0);
  waitpid(dead, NULL, 0);
  pid_t alive = getppid();
  snprintf(name[0], sizeof name[0], ".x.csv.tmp-%s-%ld-0123456789abcdef", me, (long)dead);  /* gone */
  snprintf(name[1], sizeof name[1], ".x.csv.tmp-%s-%ld-0123456789abcdef", me, (long)alive); /* kept */
  snprintf(name[2], sizeof name[2], ".x.csv.tmp-otherhost-%ld-0123456789abcdef", (long)dead); /* kept: fresh */
  snprintf(name[3], sizeof name[3], ".y.csv.tmp-otherhost-7-00000000000000ff");               /* gone: old */
  snprintf(name[4], sizeof name[4], "x.csv.tmp-%s-%ld-0123456789abcdef", me, (long)dead);   /* not ours */
  snprintf(name[5], sizeof name[5], ".x.csv.tmp-%s-%ld-notrandom", me, (long)dead);         /* not ours */
  for (int i = 0; i < 6; i++) touch(name[i], i == 3 ? ATOMIC_ORPHAN_AGE_S + 60 : 5);
  CHECK(atomic_clean_orphans(dir) == 2, "removed count");
  CHECK(!exists(name[0]), "dead writer's temp kept");
  CHECK(exists(name[1]), "live writer's temp removed");
  CHECK(exists(name[2]), "another host's fresh temp removed");
  CHECK(!exists(name[3]), "an old orphan kept");
  CHECK(exists(name[4]) && exists(name[5]), "a file that is not a temp file removed");
  for (int i = 0; i < 6; i++) {
    char p[2048];
    snprintf(p, sizeof p, "%s/%s", dir, name[i]);
    unlink(p);
  }
  CHECK(atomic_clean_orphans("/nonexistent/dir") == -1, "unreadable dir");
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/tb_atomic_XXXXXX");
  if (!mkdtemp(dir)) return perror("mkdtemp"), 1;
  test_replace();
  test_full_disk();
  test_other_failures();
  test_concurrent();
  test_orphans();
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  if (failures) fprintf(stderr, "%d failures\n", failures);
  return failures ? 1 : 0;
}
