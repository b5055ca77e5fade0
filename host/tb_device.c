/* tb_device.c: the tb.device module: which GPUs there are, which one this process uses, and the
 * versions of the driver and compiler for provenance.
 *
 *   tb.device.available()      -> true | false, message   never raises (tests skip on false)
 *   tb.device.count()          -> number of CUDA devices
 *   tb.device.list()           -> { props, ... }           one table per device, as props(i)
 *   tb.device.props([i])       -> { index, name, arch ("sm_90"), family ("hopper"), cc ("9.0"),
 *                                   cc_major, cc_minor, sm_count, warp_size, max_threads_per_block,
 *                                   max_threads_per_sm, regs_per_sm, l2_bytes, total_mem,
 *                                   clock_khz, mem_clock_khz, mem_bus_width_bits, smem_per_block,
 *                                   smem_per_block_optin, smem_per_sm, peak_dram_gbs,
 *                                   pci_bus_id, uuid ("GPU-...", as nvidia-smi prints it) }
 *                                 i: 0-based CUDA ordinal; default: the device in use
 *   tb.device.select(i)        chooses the device (0-based) before its first use; raises when i is
 *                              out of range or another device is already in use
 *   tb.device.current()        -> ordinal of the device in use (makes it current)
 *   tb.device.driver_version() -> e.g. 13000
 *   tb.device.synchronize()    waits for all work on the device in use
 *   tb.device.mem_info()       -> free_bytes, total_bytes
 *   tb.device.versions()       -> { backend, driver ("13.0"), driver_version, driver_path,
 *                                   nvrtc ("13.0"), driver_error, nvrtc_error, compiler = "nvrtc",
 *                                   cache_dir } (the compiler version under its name)
 *                                 never raises: what is absent has its *_error instead
 * Every call that needs a driver raises "no CUDA driver found (libcuda.so.1: ...)" without one. */
#include <stddef.h>
#include <stdio.h>

#include "tb.h"

/* Where tb_gpu() (tb_common.c) reads the ordinal chosen here. */
#define SELECTED_DEVICE_KEY "tb.device.selected"

static const gpu_backend *driver(lua_State *L) {
  const gpu_backend *b = gpu_backend_get();
  tb_check_gpu(L, b->init());
  return b;
}

/* The property table, as data: Lua field, offset in gpu_device_props, how to push it. */
enum { FIELD_INT, FIELD_SIZE, FIELD_DOUBLE, FIELD_STRING };
static const struct prop_field {
  const char *name;
  size_t offset;
  int type;
} prop_fields[] = {
  {"index", offsetof(gpu_device_props, index), FIELD_INT},
  {"name", offsetof(gpu_device_props, name), FIELD_STRING},
  {"arch", offsetof(gpu_device_props, arch), FIELD_STRING},
  {"family", offsetof(gpu_device_props, family), FIELD_STRING},
  {"pci_bus_id", offsetof(gpu_device_props, pci_bus_id), FIELD_STRING},
  {"cc_major", offsetof(gpu_device_props, cc_major), FIELD_INT},
  {"cc_minor", offsetof(gpu_device_props, cc_minor), FIELD_INT},
  {"sm_count", offsetof(gpu_device_props, sm_count), FIELD_INT},
  {"warp_size", offsetof(gpu_device_props, warp_size), FIELD_INT},
  {"max_threads_per_block", offsetof(gpu_device_props, max_threads_per_block), FIELD_INT},
  {"max_threads_per_sm", offsetof(gpu_device_props, max_threads_per_sm), FIELD_INT},
  {"regs_per_sm", offsetof(gpu_device_props, regs_per_sm), FIELD_INT},
  {"l2_bytes", offsetof(gpu_device_props, l2_bytes), FIELD_SIZE},
  {"total_mem", offsetof(gpu_device_props, total_mem), FIELD_SIZE},
  {"clock_khz", offsetof(gpu_device_props, clock_khz), FIELD_INT},
  {"mem_clock_khz", offsetof(gpu_device_props, mem_clock_khz), FIELD_INT},
  {"mem_bus_width_bits", offsetof(gpu_device_props, mem_bus_width_bits), FIELD_INT},
  {"smem_per_block", offsetof(gpu_device_props, smem_per_block), FIELD_SIZE},
  {"smem_per_block_optin", offsetof(gpu_device_props, smem_per_block_optin), FIELD_SIZE},
  {"smem_per_sm", offsetof(gpu_device_props, smem_per_sm), FIELD_SIZE},
  {"peak_dram_gbs", offsetof(gpu_device_props, peak_dram_gbs), FIELD_DOUBLE},
};

static void push_props(lua_State *L, const gpu_device_props *p) {
  lua_createtable(L, 0, (int)(sizeof prop_fields / sizeof prop_fields[0]) + 2);
  for (size_t i = 0; i < sizeof prop_fields / sizeof prop_fields[0]; i++) {
    const char *at = (const char *)p + prop_fields[i].offset;
    switch (prop_fields[i].type) {
      case FIELD_INT: lua_pushinteger(L, *(const int *)at); break;
      case FIELD_SIZE: lua_pushinteger(L, (lua_Integer) * (const size_t *)at); break;
      case FIELD_DOUBLE: lua_pushnumber(L, *(const double *)at); break;
      default: lua_pushstring(L, at); break;
    }
    lua_setfield(L, -2, prop_fields[i].name);
  }
  lua_pushfstring(L, "%d.%d", p->cc_major, p->cc_minor);
  lua_setfield(L, -2, "cc");
  lua_pushfstring(L, "GPU-%s", p->uuid);
  lua_setfield(L, -2, "uuid");
}

static int device_count_or_raise(lua_State *L, const gpu_backend *b) {
  int n = 0;
  tb_check_gpu(L, b->device_count(&n));
  return n;
}

static int l_available(lua_State *L) {
  const gpu_backend *b = gpu_backend_get();
  int n = 0;
  if (b->init() != GPU_OK || b->device_count(&n) != GPU_OK) {
    lua_pushboolean(L, 0);
    lua_pushstring(L, gpu_last_error());
    return 2;
  }
  if (n == 0) {
    lua_pushboolean(L, 0);
    lua_pushfstring(L, "no %s device found (the driver reports 0 devices)", b->display_name ? b->display_name : b->name);
    return 2;
  }
  lua_pushboolean(L, 1);
  return 1;
}

static int l_count(lua_State *L) {
  lua_pushinteger(L, device_count_or_raise(L, driver(L)));
  return 1;
}

static int l_list(lua_State *L) {
  const gpu_backend *b = driver(L);
  int n = device_count_or_raise(L, b);
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    gpu_device_props p;
    tb_check_gpu(L, b->device_props(i, &p));
    push_props(L, &p);
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

static int check_ordinal(lua_State *L, const gpu_backend *b, int arg) {
  lua_Integer i = luaL_checkinteger(L, arg);
  int n = device_count_or_raise(L, b);
  if (i < 0 || i >= n)
    luaL_argerror(L, arg, lua_pushfstring(L, "device %d out of range (%d device%s, numbered from 0)", (int)i,
                                          n, n == 1 ? "" : "s"));
  return (int)i;
}

static int l_props(lua_State *L) {
  if (lua_isnoneornil(L, 1)) {
    push_props(L, tb_current_props(L));
    return 1;
  }
  const gpu_backend *b = driver(L);
  gpu_device_props p;
  tb_check_gpu(L, b->device_props(check_ordinal(L, b, 1), &p));
  push_props(L, &p);
  return 1;
}

static int l_select(lua_State *L) {
  const gpu_backend *b = driver(L);
  int dev = check_ordinal(L, b, 1);
  int in_use = -1;
  /* A context already current means this process has started using a device. */
  if (b->current_device(&in_use) == GPU_OK && in_use != dev)
    return luaL_error(L, "tb.device.select(%d): device %d is already in use by this process; select a "
                      "device before the first call that uses one", dev, in_use);
  lua_pushinteger(L, dev);
  lua_setfield(L, LUA_REGISTRYINDEX, SELECTED_DEVICE_KEY);
  return 0;
}

static int l_current(lua_State *L) {
  const gpu_backend *b = tb_gpu(L);
  int dev = 0;
  tb_check_gpu(L, b->current_device(&dev));
  lua_pushinteger(L, dev);
  return 1;
}

static int l_driver_version(lua_State *L) {
  gpu_version_info v;
  tb_check_gpu(L, driver(L)->version(&v));
  lua_pushinteger(L, v.driver_version);
  return 1;
}

static int l_synchronize(lua_State *L) {
  tb_check_gpu(L, tb_gpu(L)->synchronize());
  return 0;
}

static int l_mem_info(lua_State *L) {
  size_t free_bytes = 0, total_bytes = 0;
  tb_check_gpu(L, tb_gpu(L)->mem_info(&free_bytes, &total_bytes));
  lua_pushinteger(L, (lua_Integer)free_bytes);
  lua_pushinteger(L, (lua_Integer)total_bytes);
  return 2;
}

static int l_versions(lua_State *L) {
  const gpu_backend *b = gpu_backend_get();
  gpu_version_info v;
  int major = 0, minor = 0;
  lua_newtable(L);
  lua_pushstring(L, b->name);
  lua_setfield(L, -2, "backend");
  if (b->init() == GPU_OK && b->version(&v) == GPU_OK) {
    lua_pushfstring(L, "%d.%d", v.driver_version / 1000, v.driver_version % 1000 / 10);
    lua_setfield(L, -2, "driver");
    lua_pushinteger(L, v.driver_version);
    lua_setfield(L, -2, "driver_version");
    lua_pushstring(L, v.driver_path);
    lua_setfield(L, -2, "driver_path");
  } else {
    lua_pushstring(L, gpu_last_error());
    lua_setfield(L, -2, "driver_error");
  }
  /* The compiler's version under its own name ("nvrtc"), as provenance.json records it. */
  const char *compiler = b->compiler ? b->compiler->name : "compiler";
  if (rtc_version(&major, &minor) == GPU_OK) {
    lua_pushfstring(L, "%d.%d", major, minor);
    lua_setfield(L, -2, compiler);
  } else {
    lua_pushstring(L, gpu_last_error());
    lua_pushfstring(L, "%s_error", compiler);
    lua_insert(L, -2);
    lua_settable(L, -3);
  }
  lua_pushstring(L, compiler);
  lua_setfield(L, -2, "compiler");
  lua_pushstring(L, rtc_cache_dir());
  lua_setfield(L, -2, "cache_dir");
  return 1;
}

static const luaL_Reg device_functions[] = {
  {"available", l_available},
  {"count", l_count},
  {"list", l_list},
  {"props", l_props},
  {"select", l_select},
  {"current", l_current},
  {"driver_version", l_driver_version},
  {"synchronize", l_synchronize},
  {"mem_info", l_mem_info},
  {"versions", l_versions},
  {NULL, NULL},
};

int luaopen_tb_device(lua_State *L);
int luaopen_tb_device(lua_State *L) {
  luaL_newlib(L, device_functions);
  return 1;
}
