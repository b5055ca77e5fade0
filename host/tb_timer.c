/* tb_timer.c: the Lua binding of the timer's engine (host/measure/measure.h): options from a Lua
 * table, the host kernels the options need, the result as a table. The measuring is the engine's.
 *
 * Lua API (require "tb.timer"):
 *   tb.timer.measure(plan [, opts]) -> result | nil, message, code ("throttled" | "timeout")
 *     opts and defaults: tb.timer.options (name, type, default, desc); docs/MEASUREMENT.md.
 *     result: clock ("cupti"|"events"), clock_fallback_reason, samples (ms, kept, reported clock),
 *       events_ms, sm_clocks_mhz, n, dropped_throttled, under_threshold, throttle_filter ("on",
 *       "off" without clock_check, "sustained": the load sustains a clock under the threshold and
 *       every sample counts), dropped_incomplete, min, max, median,
 *       mean, stdev, noise, q1, q3, trim_mean (without 5 % each end), estimate (the reported time:
 *       median, or a heavy load's trimmed mean), estimator, events_median, sm_clock_mhz, max_clock_mhz,
 *       throttle_threshold, graph, graph_fallback_reason, flush_bytes, flush_mode,
 *       flush_tlb_bytes, warmup, mode, wall_s, gpu_busy_s, evict_s, probe_s, probes, batches,
 *       kernels_per_run, stop_reason; where the wall time went: setup_s (options, buffers, CUPTI,
 *       graph capture), enqueue_s, wait_s, collect_s (host seconds over all batches) and
 *       gpu_span_s (the GPU timeline from each batch's first event to its last, summed);
 *       group_setup_s (capturing the graph of grouped samples), enqueue_events_s (the part of
 *       enqueue_s spent pointing its event nodes at each launch's events), flush_s (the part
 *       of collect_s spent in CUPTI flushes) and overlap_s (kernel time where CUPTI's records of
 *       back-to-back kernels overlapped, counted once in the samples and the busy time)
 *     power and clock state: conditions, reading, cap_fraction, cap_reasons, power_w, power_max_w,
 *       power_now_max_w (instantaneous; where the source gives it), nvml_sm_clock_mhz (with
 *       readings), power_reason (why none), power_readings, cooldown_s, cooldowns,
 *       cooldowns_bounded, clock_settled, settle_waits, rounds, exposure, exposed_s, preloaded_s,
 *       preload_by ("load" | "device" | "case": what ended the preload; absent where none ran), heavy_by
 *       ("cap" | "power" | "clock": why the load counted as heavy; absent where it did not),
 *       exposure_scope ("load" | "case": the scope that applied), exposure_by ("load" | "case": why the
 *       exposure applied; absent where it did not), heavy_waits
 *   Errors raise: a fault of the plan with the API name; a hung plan with "timeout: ...".
 *   tb.timer.measure_group({plan, ...} [, opts]) -> {result | {code, message}, ...} | nil, error,
 *     index: the plans interleaved in rounds (conditions = "interleave")
 *   tb.timer.clock_probe([window_ns]) -> { mhz = median over SMs, min_mhz, max_mhz, sms }
 *   tb.timer.power([device]) -> { available, reason | source, cap_reasons, idle, sm_clock_mhz,
 *     power_w, power_now_w, limit_w }: one reading of the power source (NVML), no context made
 *   tb.timer.cupti() -> { available = bool, reason = string|nil, library = path|nil, flushes,
 *     forced_flushes (plain and forced CUPTI flushes so far in this process) }
 *   tb.timer.options -> { {name, type, default, desc, choices = {...}|nil, min, max}, ... }: the
 *     engine's option table (measure_options), from which the CLI flags, the campaign's protocol
 *     validation and the help text are generated (lua/tilebench/options.lua) */
#include <math.h>
#include <stdio.h>
#include <string.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "measure/measure.h"
#include "tb.h"

static measure_cache cache; /* the engine's process-wide buffers and events */

static void bad_option(lua_State *L, const char *msg) {
  luaL_error(L, "bad argument #2 to 'measure' (%s)", msg);
}

static void parse_options(lua_State *L, int idx, measure_opts *o) {
  *o = measure_default_opts;
  if (lua_isnoneornil(L, idx)) return;
  luaL_checktype(L, idx, LUA_TTABLE);
  char msg[512];
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    const measure_opt_desc *d = lua_type(L, -2) == LUA_TSTRING ? measure_option_find(lua_tostring(L, -2)) : NULL;
    if (d == NULL) {
      lua_pushvalue(L, -2);
      luaL_error(L, "bad argument #2 to 'measure' (unknown option '%s')", luaL_tolstring(L, -1, NULL));
    }
    int bad;
    if (d->type == MEASURE_OPT_BOOLEAN)
      bad = lua_isboolean(L, -1) ? measure_option_set_boolean(o, d, lua_toboolean(L, -1), msg, sizeof msg)
                                 : (snprintf(msg, sizeof msg, "option '%s' must be a boolean", d->name), -1);
    else if (d->type == MEASURE_OPT_CHOICE)
      bad = lua_type(L, -1) == LUA_TSTRING ? measure_option_set_choice(o, d, lua_tostring(L, -1), msg, sizeof msg)
                                           : (snprintf(msg, sizeof msg, "option '%s' must be one of: %s", d->name,
                                                       d->choices), -1);
    else {
      int isnum = 0;
      double v = lua_tonumberx(L, -1, &isnum);
      bad = isnum ? measure_option_set_number(o, d, v, msg, sizeof msg) : -1;
      if (!isnum)
        snprintf(msg, sizeof msg, "option '%s' must be %s in [%g, %g]", d->name,
                 d->type == MEASURE_OPT_INTEGER ? "an integer" : "a number", d->min, d->max);
    }
    if (bad) bad_option(L, msg);
    lua_pop(L, 1);
  }
  if (measure_opts_check(o, msg, sizeof msg)) bad_option(L, msg);
}

/* tb.timer.options: every row of the engine's table; choices as a list. */
static void push_options(lua_State *L) {
  lua_createtable(L, (int)measure_n_options, 0);
  for (size_t i = 0; i < measure_n_options; i++) {
    const measure_opt_desc *d = &measure_options[i];
    lua_createtable(L, 0, 7);
    lua_pushstring(L, d->name);
    lua_setfield(L, -2, "name");
    lua_pushstring(L, measure_option_type_name(d->type));
    lua_setfield(L, -2, "type");
    lua_pushstring(L, d->def);
    lua_setfield(L, -2, "default");
    lua_pushstring(L, d->desc);
    lua_setfield(L, -2, "desc");
    if (d->type == MEASURE_OPT_CHOICE) {
      lua_newtable(L);
      int k = 0;
      for (const char *p = d->choices; *p;) {
        size_t n = strcspn(p, " ");
        lua_pushlstring(L, p, n);
        lua_rawseti(L, -2, ++k);
        p += n + (p[n] == ' ');
      }
      lua_setfield(L, -2, "choices");
    } else if (d->type != MEASURE_OPT_BOOLEAN) {
      lua_pushnumber(L, d->min);
      lua_setfield(L, -2, "min");
      lua_pushnumber(L, d->max);
      lua_setfield(L, -2, "max");
    }
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
}

static gpu_status run_plan(void *plan, gpu_stream s) { return tb_plan_run(plan, s); }

static void set_num(lua_State *L, const char *k, double v) {
  lua_pushnumber(L, v);
  lua_setfield(L, -2, k);
}

static void set_str(lua_State *L, const char *k, const char *v) {
  lua_pushstring(L, v);
  lua_setfield(L, -2, k);
}

static void set_array(lua_State *L, const char *k, const double *v, size_t n) {
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    lua_pushnumber(L, v[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, k);
}

static void push_result(lua_State *L, const measure_result *r) {
  lua_createtable(L, 0, 40);
  set_str(L, "clock", r->clock);
  if (r->clock_reason[0]) set_str(L, "clock_fallback_reason", r->clock_reason);
  set_array(L, "samples", r->samples, r->n);
  set_array(L, "events_ms", r->events_ms, r->n);
  set_num(L, "n", (double)r->n);
  set_num(L, "dropped_throttled", (double)r->dropped_throttled);
  set_num(L, "under_threshold", (double)r->under_threshold);
  set_str(L, "throttle_filter", r->throttle_filter);
  set_num(L, "dropped_incomplete", (double)r->dropped_incomplete);
  set_num(L, "min", r->summary.min);
  set_num(L, "max", r->summary.max);
  set_num(L, "median", r->summary.median);
  set_num(L, "trim_mean", r->summary.trim_mean);
  set_num(L, "estimate", r->estimate);
  if (r->estimator) set_str(L, "estimator", r->estimator);
  set_num(L, "mean", r->summary.mean);
  set_num(L, "stdev", r->summary.stdev);
  set_num(L, "noise", r->summary.noise);
  set_num(L, "q1", r->summary.q1);
  set_num(L, "q3", r->summary.q3);
  set_num(L, "events_median", r->events_summary.median);
  set_num(L, "events_mean", r->events_summary.mean);
  if (r->clock_checked) {
    set_array(L, "sm_clocks_mhz", r->sm_clocks_mhz, r->n);
    set_num(L, "sm_clock_mhz", r->sm_clock_mhz);
  }
  set_num(L, "max_clock_mhz", r->max_clock_mhz);
  set_num(L, "throttle_threshold", r->throttle_threshold);
  lua_pushboolean(L, r->graph);
  lua_setfield(L, -2, "graph");
  set_num(L, "graph_group", (double)r->graph_group);
  if (r->group_reason[0]) set_str(L, "graph_group_reason", r->group_reason);
  if (r->graph_reason[0]) set_str(L, "graph_fallback_reason", r->graph_reason);
  set_num(L, "flush_bytes", (double)r->flush_bytes);
  set_str(L, "flush_mode", r->flush_mode);
  set_num(L, "flush_tlb_bytes", (double)r->flush_tlb_bytes);
  set_num(L, "probes", (double)r->probes);
  set_num(L, "batches", (double)r->batches);
  set_num(L, "warmup", (double)r->warmup);
  set_str(L, "mode", r->mode);
  set_num(L, "wall_s", r->wall_s);
  set_num(L, "gpu_busy_s", r->gpu_busy_s);
  set_num(L, "evict_s", r->evict_s);
  set_num(L, "probe_s", r->probe_s);
  set_num(L, "setup_s", r->setup_s);
  set_num(L, "enqueue_s", r->enqueue_s);
  set_num(L, "wait_s", r->wait_s);
  set_num(L, "collect_s", r->collect_s);
  set_num(L, "gpu_span_s", r->gpu_span_s);
  set_num(L, "group_setup_s", r->group_setup_s);
  set_num(L, "enqueue_events_s", r->enqueue_events_s);
  set_num(L, "flush_s", r->flush_s);
  set_num(L, "overlap_s", r->overlap_s);
  set_num(L, "kernels_per_run", r->kernels_per_run_median);
  set_str(L, "stop_reason", r->stop_reason);
  /* power and clock state (docs/MEASUREMENT.md, "Power and clock state") */
  set_str(L, "conditions", r->conditions);
  set_str(L, "reading", r->reading);
  if (r->power_read) {
    char caps[128];
    set_num(L, "cap_fraction", r->cap_fraction);
    set_str(L, "cap_reasons", measure_cap_names(r->cap_reasons, caps, sizeof caps));
    set_num(L, "power_w", r->power_w);
    set_num(L, "power_max_w", r->power_max_w);
    if (r->power_now_max_w > 0) set_num(L, "power_now_max_w", r->power_now_max_w);
    if (r->nvml_sm_clock_mhz > 0) set_num(L, "nvml_sm_clock_mhz", r->nvml_sm_clock_mhz);
  }
  if (r->power_reason[0]) set_str(L, "power_reason", r->power_reason);
  set_num(L, "power_readings", (double)r->power_readings);
  set_num(L, "cooldown_s", r->cooldown_s);
  set_num(L, "cooldowns", (double)r->cooldowns);
  set_num(L, "cooldowns_bounded", (double)r->cooldowns_bounded);
  lua_pushboolean(L, r->clock_settled);
  lua_setfield(L, -2, "clock_settled");
  set_num(L, "settle_waits", (double)r->settle_waits);
  lua_pushboolean(L, r->exposure);
  lua_setfield(L, -2, "exposure");
  set_num(L, "exposed_s", r->exposed_s);
  set_num(L, "preloaded_s", r->preloaded_s);
  if (r->preload_by) set_str(L, "preload_by", r->preload_by);
  if (r->heavy_by) set_str(L, "heavy_by", r->heavy_by);
  if (r->exposure_scope) set_str(L, "exposure_scope", r->exposure_scope);
  if (r->exposure_by) set_str(L, "exposure_by", r->exposure_by);
  set_num(L, "heavy_waits", (double)r->heavy_waits);
  set_num(L, "rounds", (double)r->rounds);
}

/* The engine's environment: the current device, the module's stream and cache. */
static void fill_env(lua_State *L, measure_env *env) {
  env->gpu = tb_gpu(L);
  env->props = tb_current_props(L);
  env->stream = tb_stream();
  env->buffer_sync_timeout_s = tb_sync_timeout_s();
  env->cache = &cache;
}

/* The host kernels the options need (NVRTC, cached on disk): only those. */
static void need_kernels(lua_State *L, const measure_opts *o, measure_env *env) {
  if (o->clock_check) env->kernels.clock_probe = tb_host_kernel(L, "clock_probe.cu", "tb_clock_probe");
  if (o->flush && o->flush_mode == 0) {
    env->kernels.evict_read = tb_host_kernel(L, "evict.cu", "tb_evict_read");
    if (o->flush_tlb_bytes > 0) env->kernels.evict_pages = tb_host_kernel(L, "evict.cu", "tb_evict_pages");
  }
}

static int l_measure(lua_State *L) {
  double started = measure_wall_now();
  measure_env env = {0};
  tb_plan *plan = tb_check_plan(L, 1);
  measure_opts o;
  parse_options(L, 2, &o);
  env.started = started;
  fill_env(L, &env);
  env.work = (measure_work){run_plan, plan, tb_plan_kernel_count(plan)};
  need_kernels(L, &o, &env);
  measure_result r;
  gpu_status st = measure_run(&env, &o, &r);
  if (st != GPU_OK) { /* structured (tb_raise): the campaign reads the failure's class */
    measure_result_free(&r);
    return tb_raise(L, st, r.error_api, "%s", r.message);
  }
  if (r.code) {
    lua_pushnil(L);
    lua_pushstring(L, r.message);
    lua_pushstring(L, r.code);
    measure_result_free(&r);
    return 3;
  }
  push_result(L, &r);
  measure_result_free(&r);
  return 1;
}

/* tb.timer.measure_group({plan, ...} [, opts]) -> {result | {code =, message =}, ...}: the plans
 * measured interleaved in rounds (measure_run_group). A GPU failure returns nil, the structured
 * error and the 1-based index of the plan it happened in (the caller decides what the others get:
 * the runner measures them again one by one). */
#define GROUP_MAX 16
static int l_measure_group(lua_State *L) {
  double started = measure_wall_now();
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_Integer k = luaL_len(L, 1);
  luaL_argcheck(L, k >= 1 && k <= GROUP_MAX, 1, "1 to 16 plans");
  measure_opts o;
  parse_options(L, 2, &o);
  measure_env envs[GROUP_MAX];
  measure_result rs[GROUP_MAX];
  for (lua_Integer i = 0; i < k; i++) {
    lua_rawgeti(L, 1, i + 1);
    tb_plan *plan = tb_check_plan(L, -1);
    lua_pop(L, 1); /* the plan stays referenced by argument 1 */
    memset(&envs[i], 0, sizeof envs[i]);
    envs[i].started = started;
    fill_env(L, &envs[i]);
    envs[i].work = (measure_work){run_plan, plan, tb_plan_kernel_count(plan)};
    if (i == 0) need_kernels(L, &o, &envs[0]);
    else envs[i].kernels = envs[0].kernels;
  }
  size_t failed = 0;
  gpu_status st = measure_run_group(envs, (size_t)k, &o, rs, &failed);
  if (st != GPU_OK) {
    lua_pushnil(L);
    tb_push_error(L, st, rs[failed].error_api, rs[failed].message);
    lua_pushinteger(L, (lua_Integer)failed + 1);
    return 3;
  }
  lua_createtable(L, (int)k, 0);
  for (lua_Integer i = 0; i < k; i++) {
    if (rs[i].code) {
      lua_createtable(L, 0, 2);
      set_str(L, "code", rs[i].code);
      set_str(L, "message", rs[i].message);
    } else {
      push_result(L, &rs[i]);
    }
    measure_result_free(&rs[i]);
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

static int l_clock_probe(lua_State *L) {
  lua_Integer window = luaL_optinteger(L, 1, 2000);
  luaL_argcheck(L, window >= 200 && window <= 10000000, 1, "window must be 200 to 1e7 ns");
  measure_env env = {0};
  fill_env(L, &env);
  env.kernels.clock_probe = tb_host_kernel(L, "clock_probe.cu", "tb_clock_probe");
  measure_probe_result p;
  measure_result err;
  gpu_status st = measure_clock_probe(&env, (unsigned)window, &p, &err);
  if (st != GPU_OK) return tb_raise(L, st, err.error_api, "%s", err.message);
  lua_createtable(L, 0, 5);
  set_num(L, "mhz", p.mhz);
  set_num(L, "min_mhz", p.min_mhz);
  set_num(L, "max_mhz", p.max_mhz);
  set_num(L, "window_ns", p.window_ns);
  set_num(L, "sms", (double)p.sms);
  set_num(L, "device_max_mhz", env.props->clock_khz / 1e3);
  return 1;
}

/* tb.timer.power([device index]): one reading of the backend's power source for that device
 * (default: the current one), without making a context: {available = true, source, cap_reasons,
 * idle, sm_clock_mhz, power_w, power_now_w (instantaneous, where known), limit_w} or
 * {available = false, reason}. */
static int l_power(lua_State *L) {
  const gpu_backend *gpu = gpu_backend_get();
  gpu_device_props p;
  int dev = 0;
  if (lua_isnoneornil(L, 1)) {
    p = *tb_current_props(L);
  } else {
    dev = (int)luaL_checkinteger(L, 1);
    tb_check_gpu(L, gpu->init());
    tb_check_gpu(L, gpu->device_props(dev, &p));
  }
  lua_createtable(L, 0, 8);
  gpu_power_reading rd;
  gpu_status st = gpu->power ? gpu->power->open(&p)
                             : gpu_set_error(GPU_ERR_NO_LIBRARY, "the %s backend has no power source", gpu->name);
  if (st == GPU_OK) st = gpu->power->read(&rd);
  lua_pushboolean(L, st == GPU_OK);
  lua_setfield(L, -2, "available");
  if (st != GPU_OK) {
    set_str(L, "reason", gpu_last_error());
    return 1;
  }
  char caps[128];
  set_str(L, "source", gpu->power->name);
  set_str(L, "cap_reasons", measure_cap_names(rd.reasons, caps, sizeof caps));
  lua_pushboolean(L, (rd.reasons & GPU_STATE_IDLE) != 0);
  lua_setfield(L, -2, "idle");
  if (rd.sm_clock_mhz >= 0) set_num(L, "sm_clock_mhz", rd.sm_clock_mhz);
  if (rd.power_w >= 0) set_num(L, "power_w", rd.power_w);
  if (rd.power_now_w > 0) set_num(L, "power_now_w", rd.power_now_w);
  double w = 0;
  if (gpu->power->limit_w(&w) == GPU_OK) set_num(L, "limit_w", w);
  return 1;
}

/* The backend's kernel timestamps (CUPTI on CUDA). */
static int l_cupti(lua_State *L) {
  const gpu_backend *gpu = tb_gpu(L);
  const gpu_timestamps *ts = gpu->timestamps;
  gpu_status st = ts ? ts->start()
                     : gpu_set_error(GPU_ERR_NO_LIBRARY, "the %s backend has no kernel timestamps", gpu->name);
  lua_createtable(L, 0, 3);
  lua_pushboolean(L, st == GPU_OK);
  lua_setfield(L, -2, "available");
  if (st == GPU_OK) {
    set_str(L, "library", ts->library_path());
    unsigned long plain = 0, forced = 0;
    ts->flush_counts(&plain, &forced);
    set_num(L, "flushes", (double)plain);
    set_num(L, "forced_flushes", (double)forced);
  } else {
    set_str(L, "reason", gpu_last_error());
  }
  return 1;
}

static const luaL_Reg functions[] = {
  {"measure", l_measure}, {"measure_group", l_measure_group}, {"clock_probe", l_clock_probe}, {"power", l_power}, {"cupti", l_cupti}, {NULL, NULL}};

int luaopen_tb_timer(lua_State *L);
int luaopen_tb_timer(lua_State *L) {
#if defined(__linux__) && defined(PR_SET_TIMERSLACK)
  /* The batch wait sleeps in steps down to 20 us; Linux's default 50 us timer slack would let each
   * wake-up run late by that much. */
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
#endif
  luaL_newlib(L, functions);
  push_options(L);
  lua_setfield(L, -2, "options");
  return 1;
}
