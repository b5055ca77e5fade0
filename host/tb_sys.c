/* tb_sys.c: the operating-system services a campaign needs and Lua lacks: child processes with
 * pipes and time-limited reads (worker isolation), signals, clocks, fsync and host facts.
 * Nothing here touches a GPU: the campaign parent never initialises one.
 *
 * Lua API (require "tb.sys"):
 *   sys.spawn(argv [, opts]) -> proc        argv = {"prog", "arg", ...}; the program is searched
 *       on PATH. opts.env = {NAME = value|false} changes the child's environment (false unsets);
 *       opts.stderr = "pipe" (default: captured, see proc:stderr_tail) | "inherit" | "null".
 *       The child gets stdin and stdout as pipes, runs in its own process group (a terminal's
 *       Ctrl-C reaches only the parent) and is killed when the parent dies (PR_SET_PDEATHSIG).
 *       A program that cannot be executed raises "spawn 'x': No such file or directory".
 *   proc:write(s) -> true | nil, message              (a dead child gives nil, "broken pipe")
 *   proc:close_stdin()
 *   proc:read_line([timeout_s]) -> line | nil, "timeout" | nil, "eof"
 *       The next line of the child's stdout without its newline; waits at most timeout_s
 *       seconds (nil: forever). Captured stderr is drained meanwhile so the child never blocks.
 *   sys.poll({proc, ...}, timeout_s) -> true | false   waits until one of the children has a
 *       line for read_line (or its stdout ended), or timeout_s passed (false); one parent
 *       waiting on several workers at once (one per GPU, tilebench.pools).
 *   proc:stderr_tail([nlines]) -> string   the last lines the child wrote to stderr (default 20)
 *   proc:take_stderr() -> string          stderr captured since the last call (for logs)
 *   proc:kill([signal]) -> true | nil, message    signal: "KILL" (default), "TERM", "INT", number
 *   proc:wait([timeout_s]) -> "exit", code | "signal", "SIGSEGV" | nil, "timeout"
 *   proc:pid() -> integer
 *   proc:close()  (also __gc and __close): kills a still-running child, reaps it, closes pipes.
 *   sys.catch_interrupts()   SIGINT/SIGTERM set a flag; a second one kills the children and
 *                            ends the process at once.
 *   sys.interrupted() -> "SIGINT" | "SIGTERM" | nil
 *   sys.release_interrupts() restores the previous handlers.
 *   sys.monotonic() -> seconds (float)          sys.time() -> seconds since the epoch (float)
 *   sys.iso_time([t]) -> "2025-01-31T12:34:56.789Z" (UTC)
 *   sys.sleep(seconds)
 *   sys.isatty(fd) -> boolean                   sys.term_width([fd]) -> columns | nil
 *   sys.fsync(file_or_path) -> true | nil, message  (a Lua file handle is flushed first)
 *   sys.fsync_dir(path) -> true | nil, message
 *   sys.rename(from, to) -> true | nil, message (atomic within a file system)
 *   sys.write_atomic(path, data) -> true | nil, message   the one way a file is replaced: a unique
 *       temp file (host, pid, random) in the same directory, fsync, rename, fsync of the directory;
 *       on failure the old file is untouched and message is "write PATH: STEP: strerror".
 *   sys.clean_orphans(dir) -> count | nil, message   removes temp files of killed writers
 *       (atomic_file.c says which are orphans); write_atomic does it for its own directory.
 *   sys.getpid() -> integer   sys.hostname() -> string   sys.exe() -> path of this binary
 *   sys.uname() -> {sysname, nodename, release, version, machine}
 *   sys.getenv(name) -> string | nil   sys.environ() -> {NAME = value}
 *   sys.random_hex(nbytes) -> hex string from /dev/urandom
 *   sys.claim_stdout() -> file   moves the process's stdout to a new descriptor returned as a Lua
 *       file, and points descriptor 1 at stderr: a worker's protocol channel stays clean of
 *       whatever print(), a library or a driver writes.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pipe2, execvpe */
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "atomic_file.h"
#include "lauxlib.h"
#include "lua.h"
#include "lualib.h"

extern char **environ;

#define PROC_MT "tb.sys.proc"
#define STDERR_TAIL_MAX (16 * 1024)
#define STDERR_PENDING_MAX (256 * 1024)

/* ---- growable byte buffer --------------------------------------------------------------------- */
typedef struct bytes {
  char *data;
  size_t len, cap;
} bytes;

static int bytes_append(bytes *b, const char *s, size_t n) {
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + n + 1) cap *= 2;
    char *p = realloc(b->data, cap);
    if (p == NULL) return -1;
    b->data = p;
    b->cap = cap;
  }
  memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = '\0';
  return 0;
}

static void bytes_consume(bytes *b, size_t n) {
  memmove(b->data, b->data + n, b->len - n);
  b->len -= n;
  if (b->data) b->data[b->len] = '\0';
}

/* Keeps only the last max bytes, cut at a line start where possible. */
static void bytes_keep_tail(bytes *b, size_t max) {
  if (b->len <= max) return;
  size_t cut = b->len - max;
  char *nl = memchr(b->data + cut, '\n', b->len - cut);
  if (nl != NULL && (size_t)(nl - b->data) + 1 < b->len) cut = (size_t)(nl - b->data) + 1;
  bytes_consume(b, cut);
}

static void bytes_free(bytes *b) {
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}

/* ---- children alive, for the second Ctrl-C (read inside a signal handler) --------------------- */
#define MAX_CHILDREN 64
static volatile sig_atomic_t live_children[MAX_CHILDREN];

static void remember_child(pid_t pid) {
  for (int i = 0; i < MAX_CHILDREN; i++)
    if (live_children[i] == 0) { live_children[i] = pid; return; }
}

static void forget_child(pid_t pid) {
  for (int i = 0; i < MAX_CHILDREN; i++)
    if (live_children[i] == pid) live_children[i] = 0;
}

/* ---- the process userdata --------------------------------------------------------------------- */
typedef struct proc {
  pid_t pid;          /* 0 once reaped */
  int in_fd, out_fd, err_fd; /* -1 when closed */
  int reaped;
  int wstatus;        /* waitpid status once reaped */
  bytes out;          /* stdout read but not yet returned as lines */
  bytes err_tail;     /* last STDERR_TAIL_MAX bytes of stderr */
  bytes err_pending;  /* stderr since the last take_stderr */
  int closed;
} proc;

static proc *check_proc(lua_State *L, int idx) {
  proc *p = luaL_checkudata(L, idx, PROC_MT);
  if (p->closed) luaL_error(L, "process is closed");
  return p;
}

static void close_fd(int *fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

static void note_reaped(proc *p, int wstatus) {
  p->reaped = 1;
  p->wstatus = wstatus;
  forget_child(p->pid);
}

/* Idempotent: kills a running child, reaps it, closes the pipes, frees the buffers. */
static void proc_release(proc *p) {
  if (p->closed) return;
  p->closed = 1;
  close_fd(&p->in_fd);
  close_fd(&p->out_fd);
  close_fd(&p->err_fd);
  if (p->pid > 0 && !p->reaped) {
    int st;
    kill(p->pid, SIGKILL);
    while (waitpid(p->pid, &st, 0) < 0 && errno == EINTR) {}
    note_reaped(p, st);
  }
  bytes_free(&p->out);
  bytes_free(&p->err_tail);
  bytes_free(&p->err_pending);
}

static int proc_gc(lua_State *L) {
  proc_release(luaL_checkudata(L, 1, PROC_MT));
  return 0;
}

static int push_errno(lua_State *L, const char *what) {
  int e = errno;
  luaL_pushfail(L);
  if (what) lua_pushfstring(L, "%s: %s", what, strerror(e));
  else lua_pushstring(L, strerror(e));
  return 2;
}

static void set_cloexec_nonblock(int fd, int nonblock) {
  int fl = fcntl(fd, F_GETFD);
  if (fl >= 0) fcntl(fd, F_SETFD, fl | FD_CLOEXEC);
  if (nonblock) {
    fl = fcntl(fd, F_GETFL);
    if (fl >= 0) fcntl(fd, F_SETFL, fl | O_NONBLOCK);
  }
}

/* The child side between fork and exec: only async-signal-safe calls. */
static void child_exec(char *const argv[], char *const envp[], int in_r, int out_w, int err_w,
                       int err_mode, int report_w, pid_t parent) {
  int e;
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127); /* the parent died before prctl took hold */
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigaction(SIGPIPE, &dfl, NULL);
  sigaction(SIGINT, &dfl, NULL);
  sigaction(SIGTERM, &dfl, NULL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  if (dup2(in_r, 0) < 0 || dup2(out_w, 1) < 0) goto fail;
  if (err_mode == 1) { /* pipe */
    if (dup2(err_w, 2) < 0) goto fail;
  } else if (err_mode == 2) { /* null */
    int nul = open("/dev/null", O_WRONLY);
    if (nul < 0 || dup2(nul, 2) < 0) goto fail;
  }
  if (envp) execvpe(argv[0], argv, envp);
  else execvp(argv[0], argv);
fail:
  e = errno;
  if (write(report_w, &e, sizeof e) < 0) {}
  _exit(127);
}

/* Builds the child's environment: the parent's with opts.env applied (false unsets a name).
 * The strings and the array are left on the Lua stack, which keeps them alive until exec. */
static char **build_env(lua_State *L, int opts) {
  if (lua_getfield(L, opts, "env") != LUA_TTABLE) {
    lua_pop(L, 1);
    return NULL;
  }
  int envt = lua_gettop(L);
  lua_newtable(L); /* NAME -> "NAME=value" */
  int merged = lua_gettop(L);
  for (char **e = environ; *e; e++) {
    const char *eq = strchr(*e, '=');
    if (!eq) continue;
    lua_pushlstring(L, *e, (size_t)(eq - *e));
    lua_pushstring(L, *e);
    lua_settable(L, merged);
  }
  lua_pushnil(L);
  while (lua_next(L, envt)) {
    if (lua_type(L, -2) != LUA_TSTRING) luaL_error(L, "bad argument #2 to 'spawn' (env keys must be strings)");
    const char *k = lua_tostring(L, -2);
    if (!lua_toboolean(L, -1)) {
      lua_pushvalue(L, -2);
      lua_pushnil(L);
    } else {
      if (lua_type(L, -1) != LUA_TSTRING)
        luaL_error(L, "bad argument #2 to 'spawn' (env value of '%s' must be a string or false)", k);
      lua_pushvalue(L, -2);
      lua_pushfstring(L, "%s=%s", k, lua_tostring(L, -2));
    }
    lua_settable(L, merged);
    lua_pop(L, 1);
  }
  size_t n = 0;
  lua_pushnil(L);
  while (lua_next(L, merged)) { n++; lua_pop(L, 1); }
  char **envp = lua_newuserdatauv(L, (n + 1) * sizeof(char *), 0);
  size_t i = 0;
  lua_pushnil(L);
  while (lua_next(L, merged)) {
    envp[i++] = (char *)lua_tostring(L, -1);
    lua_pop(L, 1);
  }
  envp[i] = NULL;
  return envp; /* stack: env table, merged, envp */
}

static int sys_spawn(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  int has_opts = !lua_isnoneornil(L, 2);
  if (has_opts) luaL_checktype(L, 2, LUA_TTABLE);
  lua_settop(L, 2);
  lua_Integer argc = luaL_len(L, 1);
  luaL_argcheck(L, argc >= 1, 1, "argv must hold the program name");
  char **argv = lua_newuserdatauv(L, (size_t)(argc + 1) * sizeof(char *), 0);
  for (lua_Integer i = 1; i <= argc; i++) {
    if (lua_geti(L, 1, i) != LUA_TSTRING)
      luaL_error(L, "bad argument #1 to 'spawn' (argv[%d] is not a string)", (int)i);
    argv[i - 1] = (char *)lua_tostring(L, -1); /* kept alive by the argv table */
    lua_pop(L, 1);
  }
  argv[argc] = NULL;
  int err_mode = 1;
  char **envp = NULL;
  if (has_opts) {
    static const char *const modes[] = {"inherit", "pipe", "null", NULL};
    lua_getfield(L, 2, "stderr");
    if (!lua_isnil(L, -1)) {
      const char *m = lua_tostring(L, -1);
      int found = -1;
      for (int i = 0; m && modes[i]; i++)
        if (strcmp(m, modes[i]) == 0) found = i;
      if (found < 0) luaL_error(L, "bad argument #2 to 'spawn' (invalid stderr mode '%s')", m ? m : "?");
      err_mode = found;
    }
    lua_pop(L, 1);
    envp = build_env(L, 2);
  }

  /* A dead worker must not kill the parent through SIGPIPE: writes then fail with EPIPE. */
  signal(SIGPIPE, SIG_IGN);

  proc *p = lua_newuserdatauv(L, sizeof *p, 0);
  memset(p, 0, sizeof *p);
  p->in_fd = p->out_fd = p->err_fd = -1;
  p->closed = 1; /* until the child exists */
  luaL_setmetatable(L, PROC_MT);

  int in_p[2] = {-1, -1}, out_p[2] = {-1, -1}, err_p[2] = {-1, -1}, rep[2] = {-1, -1};
  if (pipe2(in_p, O_CLOEXEC) < 0 || pipe2(out_p, O_CLOEXEC) < 0 ||
      (err_mode == 1 && pipe2(err_p, O_CLOEXEC) < 0) || pipe2(rep, O_CLOEXEC) < 0) {
    int e = errno;
    int all[8] = {in_p[0], in_p[1], out_p[0], out_p[1], err_p[0], err_p[1], rep[0], rep[1]};
    for (int i = 0; i < 8; i++) if (all[i] >= 0) close(all[i]);
    return luaL_error(L, "spawn '%s': pipe: %s", argv[0], strerror(e));
  }
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    int all[8] = {in_p[0], in_p[1], out_p[0], out_p[1], err_p[0], err_p[1], rep[0], rep[1]};
    for (int i = 0; i < 8; i++) if (all[i] >= 0) close(all[i]);
    return luaL_error(L, "spawn '%s': fork: %s", argv[0], strerror(e));
  }
  if (pid == 0) child_exec(argv, envp, in_p[0], out_p[1], err_p[1], err_mode, rep[1], parent);
  setpgid(pid, pid); /* also from the parent, so the group exists before any signal is sent */
  close(in_p[0]);
  close(out_p[1]);
  if (err_p[1] >= 0) close(err_p[1]);
  close(rep[1]);
  int child_errno = 0;
  ssize_t n;
  while ((n = read(rep[0], &child_errno, sizeof child_errno)) < 0 && errno == EINTR) {}
  close(rep[0]);
  if (n == (ssize_t)sizeof child_errno) {
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    close(in_p[1]);
    close(out_p[0]);
    if (err_p[0] >= 0) close(err_p[0]);
    return luaL_error(L, "spawn '%s': %s", argv[0], strerror(child_errno));
  }
  p->pid = pid;
  p->in_fd = in_p[1];
  p->out_fd = out_p[0];
  p->err_fd = err_p[0];
  set_cloexec_nonblock(p->out_fd, 1);
  if (p->err_fd >= 0) set_cloexec_nonblock(p->err_fd, 1);
  p->closed = 0;
  remember_child(pid);
  return 1;
}

static int proc_write(lua_State *L) {
  proc *p = check_proc(L, 1);
  size_t len;
  const char *s = luaL_checklstring(L, 2, &len);
  if (p->in_fd < 0) {
    luaL_pushfail(L);
    lua_pushliteral(L, "stdin is closed");
    return 2;
  }
  size_t off = 0;
  while (off < len) {
    ssize_t w = write(p->in_fd, s + off, len - off);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == EPIPE) {
        luaL_pushfail(L);
        lua_pushliteral(L, "broken pipe");
        return 2;
      }
      return push_errno(L, "write");
    }
    off += (size_t)w;
  }
  lua_pushboolean(L, 1);
  return 1;
}

static int proc_close_stdin(lua_State *L) {
  proc *p = check_proc(L, 1);
  close_fd(&p->in_fd);
  return 0;
}

static double now_monotonic(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Reads what is available on fd into b; returns bytes read, 0 at EOF, -1 on EAGAIN/error. */
static ssize_t drain(int fd, bytes *b, bytes *b2) {
  char chunk[65536];
  ssize_t total = 0;
  for (;;) {
    ssize_t r = read(fd, chunk, sizeof chunk);
    if (r > 0) {
      if (bytes_append(b, chunk, (size_t)r) < 0) return -2;
      if (b2 && bytes_append(b2, chunk, (size_t)r) < 0) return -2;
      total += r;
      continue;
    }
    if (r == 0) return total > 0 ? total : 0;
    if (errno == EINTR) continue;
    return total > 0 ? total : -1;
  }
}

static void drain_stderr(proc *p) {
  if (p->err_fd < 0) return;
  ssize_t r = drain(p->err_fd, &p->err_tail, &p->err_pending);
  bytes_keep_tail(&p->err_tail, STDERR_TAIL_MAX);
  bytes_keep_tail(&p->err_pending, STDERR_PENDING_MAX);
  if (r == 0) close_fd(&p->err_fd);
}

static int push_line(lua_State *L, proc *p, size_t nl) {
  size_t n = nl;
  if (n > 0 && p->out.data[n - 1] == '\r') n--;
  lua_pushlstring(L, p->out.data, n);
  bytes_consume(&p->out, nl + 1 <= p->out.len ? nl + 1 : p->out.len);
  return 1;
}

static int proc_read_line(lua_State *L) {
  proc *p = check_proc(L, 1);
  double timeout = luaL_optnumber(L, 2, -1);
  double deadline = timeout >= 0 ? now_monotonic() + timeout : -1;
  int last_look = 0;
  for (;;) {
    char *nl = p->out.len ? memchr(p->out.data, '\n', p->out.len) : NULL;
    if (nl) return push_line(L, p, (size_t)(nl - p->out.data));
    if (p->out_fd < 0) {
      drain_stderr(p);
      if (p->out.len) return push_line(L, p, p->out.len);
      luaL_pushfail(L);
      lua_pushliteral(L, "eof");
      return 2;
    }
    struct pollfd fds[2];
    int nfds = 0;
    fds[nfds].fd = p->out_fd;
    fds[nfds++].events = POLLIN;
    if (p->err_fd >= 0) {
      fds[nfds].fd = p->err_fd;
      fds[nfds++].events = POLLIN;
    }
    int ms = -1;
    if (deadline >= 0) {
      double left = deadline - now_monotonic();
      if (left <= 0 && last_look) {
        drain_stderr(p);
        luaL_pushfail(L);
        lua_pushliteral(L, "timeout");
        return 2;
      }
      /* past the deadline: one look without waiting at what already arrived, so a line written
       * while this process was busy elsewhere (timeout 0: sys.poll's callers) is not a timeout */
      if (left <= 0) last_look = 1;
      ms = left <= 0 ? 0 : (int)(left * 1000.0) + 1;
    }
    int r = poll(fds, (nfds_t)nfds, ms);
    if (r < 0) {
      if (errno == EINTR) continue; /* a first Ctrl-C: the current case still finishes */
      return luaL_error(L, "read_line: poll: %s", strerror(errno));
    }
    if (nfds > 1 && fds[1].revents) drain_stderr(p);
    if (fds[0].revents) {
      ssize_t got = drain(p->out_fd, &p->out, NULL);
      if (got == -2) return luaL_error(L, "read_line: out of memory");
      if (got == 0) close_fd(&p->out_fd);
    }
  }
}

/* Whether read_line would return at once: a whole line buffered, or stdout at its end. */
static int proc_ready(const proc *p) {
  if (p->out_fd < 0) return 1;
  return p->out.len && memchr(p->out.data, '\n', p->out.len) != NULL;
}

#define POLL_MAX 64

/* sys.poll({proc, ...}, timeout_s): waits until one of the children has a line to read (or its
 * stdout ended), or timeout_s passed; drains what arrives meanwhile, stderr too. One parent
 * waiting on several workers (one per GPU) at once. */
static int sys_poll(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  double timeout = luaL_checknumber(L, 2);
  lua_Integer n = luaL_len(L, 1);
  if (n > POLL_MAX) return luaL_error(L, "poll: at most %d processes", POLL_MAX);
  proc *ps[POLL_MAX];
  for (lua_Integer i = 1; i <= n; i++) {
    lua_geti(L, 1, i);
    ps[i - 1] = check_proc(L, -1);
    lua_pop(L, 1);
  }
  double deadline = now_monotonic() + (timeout > 0 ? timeout : 0);
  for (;;) {
    for (lua_Integer i = 0; i < n; i++) {
      if (proc_ready(ps[i])) {
        lua_pushboolean(L, 1);
        return 1;
      }
    }
    struct pollfd fds[2 * POLL_MAX];
    proc *owner[2 * POLL_MAX];
    int nfds = 0;
    for (lua_Integer i = 0; i < n; i++) {
      if (ps[i]->out_fd >= 0) { fds[nfds].fd = ps[i]->out_fd; fds[nfds].events = POLLIN; owner[nfds++] = ps[i]; }
      if (ps[i]->err_fd >= 0) { fds[nfds].fd = ps[i]->err_fd; fds[nfds].events = POLLIN; owner[nfds++] = ps[i]; }
    }
    double left = deadline - now_monotonic();
    int ms = left <= 0 ? 0 : (int)(left * 1000.0) + 1;
    int r = poll(fds, (nfds_t)nfds, ms);
    if (r < 0) {
      if (errno == EINTR) continue;
      return luaL_error(L, "poll: %s", strerror(errno));
    }
    for (int i = 0; i < nfds; i++) {
      if (!fds[i].revents) continue;
      proc *p = owner[i];
      if (fds[i].fd == p->err_fd) {
        drain_stderr(p);
      } else if (fds[i].fd == p->out_fd) {
        ssize_t got = drain(p->out_fd, &p->out, NULL);
        if (got == -2) return luaL_error(L, "poll: out of memory");
        if (got == 0) close_fd(&p->out_fd);
      }
    }
    if (r == 0 && left <= 0) {
      lua_pushboolean(L, 0);
      return 1;
    }
  }
}

static int proc_stderr_tail(lua_State *L) {
  proc *p = check_proc(L, 1);
  lua_Integer want = luaL_optinteger(L, 2, 20);
  drain_stderr(p);
  const char *s = p->err_tail.data ? p->err_tail.data : "";
  size_t len = p->err_tail.len;
  while (len > 0 && (s[len - 1] == '\n' || s[len - 1] == '\r')) len--;
  size_t start = len;
  lua_Integer lines = 0;
  while (start > 0) {
    if (s[start - 1] == '\n' && ++lines >= want) break;
    start--;
  }
  lua_pushlstring(L, s + start, len - start);
  return 1;
}

static int proc_take_stderr(lua_State *L) {
  proc *p = check_proc(L, 1);
  drain_stderr(p);
  lua_pushlstring(L, p->err_pending.data ? p->err_pending.data : "", p->err_pending.len);
  p->err_pending.len = 0;
  return 1;
}

static const struct { int sig; const char *name; } signal_names[] = {
  {SIGHUP, "SIGHUP"}, {SIGINT, "SIGINT"}, {SIGQUIT, "SIGQUIT"}, {SIGILL, "SIGILL"},
  {SIGTRAP, "SIGTRAP"}, {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"}, {SIGFPE, "SIGFPE"},
  {SIGKILL, "SIGKILL"}, {SIGUSR1, "SIGUSR1"}, {SIGSEGV, "SIGSEGV"}, {SIGUSR2, "SIGUSR2"},
  {SIGPIPE, "SIGPIPE"}, {SIGALRM, "SIGALRM"}, {SIGTERM, "SIGTERM"}, {SIGCHLD, "SIGCHLD"},
  {SIGCONT, "SIGCONT"}, {SIGSTOP, "SIGSTOP"}, {SIGXCPU, "SIGXCPU"}, {SIGSYS, "SIGSYS"},
};

static const char *signal_name(int sig, char *buf, size_t n) {
  for (size_t i = 0; i < sizeof signal_names / sizeof signal_names[0]; i++)
    if (signal_names[i].sig == sig) return signal_names[i].name;
  snprintf(buf, n, "signal %d", sig);
  return buf;
}

static int check_signal(lua_State *L, int idx) {
  if (lua_isnoneornil(L, idx)) return SIGKILL;
  if (lua_type(L, idx) == LUA_TNUMBER) return (int)luaL_checkinteger(L, idx);
  const char *s = luaL_checkstring(L, idx);
  const char *bare = strncmp(s, "SIG", 3) == 0 ? s + 3 : s;
  for (size_t i = 0; i < sizeof signal_names / sizeof signal_names[0]; i++)
    if (strcmp(signal_names[i].name + 3, bare) == 0) return signal_names[i].sig;
  return luaL_argerror(L, idx, lua_pushfstring(L, "invalid signal '%s'", s));
}

static int proc_kill(lua_State *L) {
  proc *p = check_proc(L, 1);
  int sig = check_signal(L, 2);
  if (p->reaped) {
    lua_pushboolean(L, 1); /* already gone */
    return 1;
  }
  if (kill(p->pid, sig) < 0 && errno != ESRCH) return push_errno(L, "kill");
  lua_pushboolean(L, 1);
  return 1;
}

static int push_wstatus(lua_State *L, int st) {
  char buf[32];
  if (WIFSIGNALED(st)) {
    lua_pushliteral(L, "signal");
    lua_pushstring(L, signal_name(WTERMSIG(st), buf, sizeof buf));
  } else {
    lua_pushliteral(L, "exit");
    lua_pushinteger(L, WEXITSTATUS(st));
  }
  return 2;
}

static int proc_wait(lua_State *L) {
  proc *p = check_proc(L, 1);
  double timeout = luaL_optnumber(L, 2, -1);
  double deadline = timeout >= 0 ? now_monotonic() + timeout : -1;
  while (!p->reaped) {
    int st;
    pid_t r = waitpid(p->pid, &st, deadline >= 0 ? WNOHANG : 0);
    if (r == p->pid) {
      note_reaped(p, st);
      break;
    }
    if (r < 0) {
      if (errno == EINTR) continue;
      return luaL_error(L, "wait: %s", strerror(errno));
    }
    if (now_monotonic() >= deadline) {
      luaL_pushfail(L);
      lua_pushliteral(L, "timeout");
      return 2;
    }
    /* keep draining so a child blocked on a full pipe can exit */
    drain_stderr(p);
    if (p->out_fd >= 0 && drain(p->out_fd, &p->out, NULL) == 0) close_fd(&p->out_fd);
    struct timespec ts = {0, 5 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  return push_wstatus(L, p->wstatus);
}

static int proc_pid(lua_State *L) {
  lua_pushinteger(L, check_proc(L, 1)->pid);
  return 1;
}

static int proc_tostring(lua_State *L) {
  proc *p = luaL_checkudata(L, 1, PROC_MT);
  if (p->closed) lua_pushliteral(L, "process (closed)");
  else lua_pushfstring(L, "process %d", (int)p->pid);
  return 1;
}

/* ---- interrupts ------------------------------------------------------------------------------ */
static volatile sig_atomic_t interrupt_signal;
static int interrupts_caught;
static struct sigaction old_int, old_term;

static void on_interrupt(int sig) {
  if (interrupt_signal != 0) {
    /* the second one: stop everything now */
    for (int i = 0; i < MAX_CHILDREN; i++)
      if (live_children[i] > 0) kill((pid_t)live_children[i], SIGKILL);
    signal(sig, SIG_DFL);
    raise(sig);
    return;
  }
  interrupt_signal = sig;
}

static int sys_catch_interrupts(lua_State *L) {
  if (interrupts_caught) return 0;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0; /* no SA_RESTART: blocking calls return EINTR and look at the flag */
  if (sigaction(SIGINT, &sa, &old_int) < 0 || sigaction(SIGTERM, &sa, &old_term) < 0)
    return luaL_error(L, "sigaction: %s", strerror(errno));
  interrupts_caught = 1;
  interrupt_signal = 0;
  return 0;
}

static int sys_release_interrupts(lua_State *L) {
  (void)L;
  if (!interrupts_caught) return 0;
  sigaction(SIGINT, &old_int, NULL);
  sigaction(SIGTERM, &old_term, NULL);
  interrupts_caught = 0;
  interrupt_signal = 0;
  return 0;
}

static int sys_interrupted(lua_State *L) {
  char buf[32];
  int sig = interrupt_signal;
  if (sig == 0) lua_pushnil(L);
  else lua_pushstring(L, signal_name(sig, buf, sizeof buf));
  return 1;
}

/* ---- clocks ---------------------------------------------------------------------------------- */
static int sys_monotonic(lua_State *L) {
  lua_pushnumber(L, now_monotonic());
  return 1;
}

static int sys_time(lua_State *L) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  lua_pushnumber(L, (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9);
  return 1;
}

static int sys_iso_time(lua_State *L) {
  double t;
  if (lua_isnoneornil(L, 1)) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    t = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
  } else {
    t = luaL_checknumber(L, 1);
  }
  time_t secs = (time_t)t;
  int ms = (int)((t - (double)secs) * 1000.0);
  if (ms < 0) ms = 0;
  if (ms > 999) ms = 999;
  struct tm tm;
  if (gmtime_r(&secs, &tm) == NULL) return luaL_error(L, "iso_time: time out of range");
  char buf[64];
  size_t n = strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(buf + n, sizeof buf - n, ".%03dZ", ms);
  lua_pushstring(L, buf);
  return 1;
}

static int sys_sleep(lua_State *L) {
  double s = luaL_checknumber(L, 1);
  luaL_argcheck(L, s >= 0, 1, "negative duration");
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
    if (interrupt_signal) break;
  }
  return 0;
}

/* ---- terminals ------------------------------------------------------------------------------- */
static int sys_isatty(lua_State *L) {
  lua_pushboolean(L, isatty((int)luaL_checkinteger(L, 1)));
  return 1;
}

static int sys_term_width(lua_State *L) {
  int fd = (int)luaL_optinteger(L, 1, 1);
  struct winsize ws;
  if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
    lua_pushinteger(L, ws.ws_col);
    return 1;
  }
  const char *cols = getenv("COLUMNS");
  if (cols && atoi(cols) > 0) {
    lua_pushinteger(L, atoi(cols));
    return 1;
  }
  lua_pushnil(L);
  return 1;
}

/* ---- files ----------------------------------------------------------------------------------- */
static int fsync_path(const char *path, int flags) {
  int fd = open(path, flags | O_CLOEXEC);
  if (fd < 0) return -1;
  int r = fsync(fd);
  int e = errno;
  close(fd);
  errno = e;
  return r;
}

static int sys_fsync(lua_State *L) {
  luaL_Stream *s = luaL_testudata(L, 1, LUA_FILEHANDLE);
  if (s != NULL) {
    if (s->closef == NULL) return luaL_error(L, "fsync: attempt to use a closed file");
    if (fflush(s->f) != 0) return push_errno(L, "fsync: fflush");
    if (fsync(fileno(s->f)) < 0) return push_errno(L, "fsync");
  } else {
    const char *path = luaL_checkstring(L, 1);
    if (fsync_path(path, O_RDONLY) < 0) {
      luaL_pushfail(L);
      lua_pushfstring(L, "fsync %s: %s", path, strerror(errno));
      return 2;
    }
  }
  lua_pushboolean(L, 1);
  return 1;
}

static int sys_fsync_dir(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  if (fsync_path(path, O_RDONLY | O_DIRECTORY) < 0) {
    luaL_pushfail(L);
    lua_pushfstring(L, "fsync %s: %s", path, strerror(errno));
    return 2;
  }
  lua_pushboolean(L, 1);
  return 1;
}

static int sys_rename(lua_State *L) {
  const char *from = luaL_checkstring(L, 1), *to = luaL_checkstring(L, 2);
  if (rename(from, to) < 0) {
    luaL_pushfail(L);
    lua_pushfstring(L, "rename %s -> %s: %s", from, to, strerror(errno));
    return 2;
  }
  lua_pushboolean(L, 1);
  return 1;
}

static int sys_write_atomic(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  size_t len;
  const char *data = luaL_checklstring(L, 2, &len);
  char err[PATH_MAX + 256];
  if (atomic_write(path, data, len, err, sizeof err) != 0) {
    luaL_pushfail(L);
    lua_pushstring(L, err);
    return 2;
  }
  lua_pushboolean(L, 1);
  return 1;
}

static int sys_clean_orphans(lua_State *L) {
  const char *dir = luaL_checkstring(L, 1);
  int n = atomic_clean_orphans(dir);
  if (n < 0) return push_errno(L, dir);
  lua_pushinteger(L, n);
  return 1;
}

/* ---- host facts ------------------------------------------------------------------------------ */
static int sys_getpid(lua_State *L) {
  lua_pushinteger(L, getpid());
  return 1;
}

static int sys_hostname(lua_State *L) {
  char buf[256];
  if (gethostname(buf, sizeof buf) < 0) return push_errno(L, "gethostname");
  buf[sizeof buf - 1] = '\0';
  lua_pushstring(L, buf);
  return 1;
}

static int sys_exe(lua_State *L) {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n < 0) return push_errno(L, "readlink /proc/self/exe");
  buf[n] = '\0';
  lua_pushstring(L, buf);
  return 1;
}

static int sys_uname(lua_State *L) {
  struct utsname u;
  if (uname(&u) < 0) return push_errno(L, "uname");
  lua_createtable(L, 0, 5);
  lua_pushstring(L, u.sysname);  lua_setfield(L, -2, "sysname");
  lua_pushstring(L, u.nodename); lua_setfield(L, -2, "nodename");
  lua_pushstring(L, u.release);  lua_setfield(L, -2, "release");
  lua_pushstring(L, u.version);  lua_setfield(L, -2, "version");
  lua_pushstring(L, u.machine);  lua_setfield(L, -2, "machine");
  return 1;
}

static int sys_getenv(lua_State *L) {
  const char *v = getenv(luaL_checkstring(L, 1));
  if (v) lua_pushstring(L, v);
  else lua_pushnil(L);
  return 1;
}

static int sys_environ(lua_State *L) {
  lua_newtable(L);
  for (char **e = environ; *e; e++) {
    const char *eq = strchr(*e, '=');
    if (!eq) continue;
    lua_pushlstring(L, *e, (size_t)(eq - *e));
    lua_pushstring(L, eq + 1);
    lua_settable(L, -3);
  }
  return 1;
}

static int sys_random_hex(lua_State *L) {
  lua_Integer n = luaL_checkinteger(L, 1);
  luaL_argcheck(L, n > 0 && n <= 64, 1, "between 1 and 64 bytes");
  unsigned char raw[64];
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return push_errno(L, "open /dev/urandom");
  ssize_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, raw + got, (size_t)(n - got));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      close(fd);
      return luaL_error(L, "read /dev/urandom: %s", r < 0 ? strerror(errno) : "end of file");
    }
    got += r;
  }
  close(fd);
  char hex[129];
  for (lua_Integer i = 0; i < n; i++) snprintf(hex + 2 * i, 3, "%02x", raw[i]);
  lua_pushlstring(L, hex, (size_t)(2 * n));
  return 1;
}

static int stream_close(lua_State *L) {
  luaL_Stream *s = luaL_checkudata(L, 1, LUA_FILEHANDLE);
  int ok = fclose(s->f) == 0;
  return luaL_fileresult(L, ok, NULL);
}

static int sys_claim_stdout(lua_State *L) {
  fflush(stdout);
  luaL_Stream *s = lua_newuserdatauv(L, sizeof *s, 0);
  s->closef = NULL; /* a closed file until it is opened */
  luaL_setmetatable(L, LUA_FILEHANDLE);
  int fd = fcntl(1, F_DUPFD_CLOEXEC, 3);
  if (fd < 0) return luaL_error(L, "claim_stdout: dup: %s", strerror(errno));
  if (dup2(2, 1) < 0) {
    int e = errno;
    close(fd);
    return luaL_error(L, "claim_stdout: dup2: %s", strerror(e));
  }
  s->f = fdopen(fd, "w");
  if (s->f == NULL) {
    int e = errno;
    close(fd);
    return luaL_error(L, "claim_stdout: fdopen: %s", strerror(e));
  }
  s->closef = stream_close;
  return 1;
}

static const luaL_Reg proc_methods[] = {
  {"write", proc_write}, {"close_stdin", proc_close_stdin}, {"read_line", proc_read_line},
  {"stderr_tail", proc_stderr_tail}, {"take_stderr", proc_take_stderr}, {"kill", proc_kill},
  {"wait", proc_wait}, {"pid", proc_pid}, {"close", proc_gc}, {NULL, NULL}
};

static const luaL_Reg proc_meta[] = {
  {"__gc", proc_gc}, {"__close", proc_gc}, {"__tostring", proc_tostring}, {NULL, NULL}
};

static const luaL_Reg sys_funcs[] = {
  {"spawn", sys_spawn}, {"poll", sys_poll}, {"catch_interrupts", sys_catch_interrupts},
  {"release_interrupts", sys_release_interrupts}, {"interrupted", sys_interrupted},
  {"monotonic", sys_monotonic}, {"time", sys_time}, {"iso_time", sys_iso_time},
  {"sleep", sys_sleep}, {"isatty", sys_isatty}, {"term_width", sys_term_width},
  {"fsync", sys_fsync}, {"fsync_dir", sys_fsync_dir}, {"rename", sys_rename},
  {"write_atomic", sys_write_atomic}, {"clean_orphans", sys_clean_orphans},
  {"getpid", sys_getpid}, {"hostname", sys_hostname},
  {"exe", sys_exe}, {"uname", sys_uname}, {"getenv", sys_getenv}, {"environ", sys_environ},
  {"random_hex", sys_random_hex}, {"claim_stdout", sys_claim_stdout}, {NULL, NULL}
};

int luaopen_tb_sys(lua_State *L);
int luaopen_tb_sys(lua_State *L) {
  if (luaL_newmetatable(L, PROC_MT)) {
    luaL_setfuncs(L, proc_meta, 0);
    luaL_newlib(L, proc_methods);
    lua_setfield(L, -2, "__index");
  }
  lua_pop(L, 1);
  luaL_newlib(L, sys_funcs);
  return 1;
}
