/* tb_yaml.c: YAML documents (config.yaml, campaign data) read into Lua values with libyaml's
 * event parser. Typing follows YAML 1.1 as PyYAML reads TileBench's configs, plus the core
 * schema's 0o/1e3 spellings.
 *
 * Lua API (require "tb.yaml"):
 *   yaml.load(text [, name]) -> value     name is used in errors (default "<string>")
 *   yaml.load_file(path) -> value
 *   yaml.null                             the value of a null scalar (== cjson.null)
 * Values: mappings -> tables, sequences -> arrays (1-based, no holes: null items are yaml.null),
 * plain scalars typed: integers (12, -3, +4, 1_000, 0x1F, 0o17, 0b101) -> Lua integers; floats
 * (1.5, 1e-3, .5, 1_000.5, .inf, -.Inf, .nan) -> Lua floats; true/false/yes/no/on/off in any
 * case -> booleans; ~, null, Null, NULL and the empty scalar -> yaml.null. Quoted and block
 * scalars stay strings, as does anything tagged !!str. An empty stream loads as nil.
 * Mapping order: every mapping table gets its own metatable {__name = "tb.yaml.mapping",
 * __order = {key1, key2, ...}} holding the keys in document order (grids expand in key order).
 * Anchors and aliases are supported (an alias is the same Lua table), as are merge keys
 * (<<: *base, or a list of aliases; explicit keys win). A duplicate key, a non-scalar key, an
 * unknown alias, an unsupported tag or a second document is an error; a sequence or mapping may
 * carry no tag but its own (!!seq, !!map): !!set, !!omap or a local tag would change its meaning.
 * Errors raise "NAME:LINE:COL: message" (1-based), with libyaml's problem and context text. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "lauxlib.h"
#include "lua.h"

#define LOADER_MT "tb.yaml.loader"
#define MAX_DEPTH 256

typedef struct loader {
  yaml_parser_t parser;
  yaml_event_t event;
  int parser_ready; /* parser initialised and not yet deleted */
  int event_ready;  /* event holds data that must be deleted */
  const char *name;
} loader;

/* One idempotent release for __gc, __close and the explicit release after a load. */
static void release(loader *ld) {
  if (ld->event_ready) {
    yaml_event_delete(&ld->event);
    ld->event_ready = 0;
  }
  if (ld->parser_ready) {
    yaml_parser_delete(&ld->parser);
    ld->parser_ready = 0;
  }
}

static int loader_gc(lua_State *L) {
  release((loader *)luaL_checkudata(L, 1, LOADER_MT));
  return 0;
}

static int error_at(lua_State *L, const loader *ld, yaml_mark_t mark, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  lua_pushfstring(L, "%s:%d:%d: ", ld->name, (int)mark.line + 1, (int)mark.column + 1);
  lua_pushvfstring(L, fmt, ap);
  va_end(ap);
  lua_concat(L, 2);
  return lua_error(L);
}

static void next_event(lua_State *L, loader *ld) {
  if (ld->event_ready) {
    yaml_event_delete(&ld->event);
    ld->event_ready = 0;
  }
  if (!yaml_parser_parse(&ld->parser, &ld->event)) {
    yaml_parser_t *p = &ld->parser;
    const char *problem = p->problem ? p->problem : "malformed YAML";
    if (p->error == YAML_MEMORY_ERROR) luaL_error(L, "%s: out of memory while parsing YAML", ld->name);
    if (p->context) {
      error_at(L, ld, p->problem_mark, "%s (%s at line %d, column %d)", problem, p->context,
               (int)p->context_mark.line + 1, (int)p->context_mark.column + 1);
    }
    if (p->error == YAML_READER_ERROR) {
      lua_pushfstring(L, "%s: %s (at byte %d)", ld->name, problem, (int)p->problem_offset);
      lua_error(L);
    }
    error_at(L, ld, p->problem_mark, "%s", problem);
  }
  ld->event_ready = 1;
}

/* ---- scalar typing ------------------------------------------------------------------------ */

static int is_null(const char *s, size_t n) {
  return n == 0 || (n == 1 && s[0] == '~') || strcmp(s, "null") == 0 || strcmp(s, "Null") == 0 ||
         strcmp(s, "NULL") == 0;
}

/* 1 true, 0 false, -1 not a boolean */
static int as_bool(const char *s) {
  static const char *const yes[] = {"true", "yes", "on"}, *const no[] = {"false", "no", "off"};
  for (int i = 0; i < 3; i++) {
    if (strcasecmp(s, yes[i]) == 0) return 1;
    if (strcasecmp(s, no[i]) == 0) return 0;
  }
  return -1;
}

static int digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return 99;
}

typedef enum { INT_NO = 0, INT_OK, INT_RANGE } int_result;

/* [-+]? then 0x / 0o / 0b digits or decimal digits; underscores between digits (YAML 1.1). */
static int_result as_int(const char *s, lua_Integer *out) {
  int neg = 0, base = 10, ndigits = 0;
  uint64_t mag = 0, limit;
  if (*s == '-' || *s == '+') neg = (*s++ == '-');
  if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) base = 16, s += 2;
  else if (s[0] == '0' && (s[1] == 'o' || s[1] == 'O')) base = 8, s += 2;
  else if (s[0] == '0' && (s[1] == 'b' || s[1] == 'B')) base = 2, s += 2;
  if (*s == '_' || *s == '\0') return INT_NO;
  limit = neg ? (uint64_t)INT64_MAX + 1u : (uint64_t)INT64_MAX;
  int range = 0;
  for (; *s; s++) {
    if (*s == '_') continue;
    int d = digit_value(*s);
    if (d >= base) return INT_NO;
    if (mag > (limit - (uint64_t)d) / (uint64_t)base) range = 1;
    else mag = mag * (uint64_t)base + (uint64_t)d;
    ndigits++;
  }
  if (ndigits == 0) return INT_NO;
  if (range) return INT_RANGE;
  *out = neg ? (lua_Integer)(0u - mag) : (lua_Integer)mag;
  return INT_OK;
}

/* [-+]? (digits[.digits] | .digits) ([eE][-+]?digits)?, with a dot or an exponent; or .inf/.nan */
static int as_float(const char *s, lua_Number *out) {
  const char *p = s;
  int sign = 1;
  if (*p == '-' || *p == '+') sign = (*p++ == '-') ? -1 : 1;
  if (strcmp(p, ".inf") == 0 || strcmp(p, ".Inf") == 0 || strcmp(p, ".INF") == 0) {
    *out = sign * (lua_Number)HUGE_VAL;
    return 1;
  }
  if (p == s && (strcmp(p, ".nan") == 0 || strcmp(p, ".NaN") == 0 || strcmp(p, ".NAN") == 0)) {
    *out = (lua_Number)NAN;
    return 1;
  }
  char buf[128];
  size_t n = 0;
  int mantissa_digits = 0, dot = 0, exponent = 0;
  if (p != s) buf[n++] = s[0];
  for (; *p; p++) {
    if (n + 2 >= sizeof buf) return 0;
    if (*p >= '0' && *p <= '9') {
      if (!exponent) mantissa_digits++;
      buf[n++] = *p;
    } else if (*p == '_' && !exponent && n > 0 && buf[n - 1] >= '0' && buf[n - 1] <= '9') {
      continue;
    } else if (*p == '.' && !dot && !exponent) {
      dot = 1;
      buf[n++] = '.';
    } else if ((*p == 'e' || *p == 'E') && !exponent && mantissa_digits > 0) {
      exponent = 1;
      buf[n++] = 'e';
      if (p[1] == '-' || p[1] == '+') buf[n++] = *++p;
      if (!(p[1] >= '0' && p[1] <= '9')) return 0;
    } else {
      return 0;
    }
  }
  if (mantissa_digits == 0 || (!dot && !exponent)) return 0;
  buf[n] = '\0';
  char *end;
  errno = 0;
  double v = strtod(buf, &end);
  if (*end != '\0') return 0;
  *out = (lua_Number)v;
  return 1;
}

static void push_tb_null(lua_State *L) { lua_pushlightuserdata(L, NULL); }

#define TAG_PREFIX "tag:yaml.org,2002:"

/* Pushes the Lua value of the current scalar event. */
static void push_scalar(lua_State *L, loader *ld) {
  yaml_event_t *e = &ld->event;
  const char *s = (const char *)e->data.scalar.value;
  size_t n = e->data.scalar.length;
  const char *tag = (const char *)e->data.scalar.tag;
  const char *want = NULL; /* an explicit core tag: str, int, float, bool, null */
  if (tag) {
    if (strcmp(tag, "!") == 0) {
      lua_pushlstring(L, s, n);
      return;
    }
    if (strncmp(tag, TAG_PREFIX, strlen(TAG_PREFIX)) != 0)
      error_at(L, ld, e->start_mark, "unsupported tag '%s'", tag);
    want = tag + strlen(TAG_PREFIX);
    if (strcmp(want, "str") == 0) {
      lua_pushlstring(L, s, n);
      return;
    }
    if (strcmp(want, "int") && strcmp(want, "float") && strcmp(want, "bool") && strcmp(want, "null"))
      error_at(L, ld, e->start_mark, "unsupported tag '!!%s'", want);
  } else if (e->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) {
    lua_pushlstring(L, s, n);
    return;
  }
  if (strlen(s) != n) { /* an embedded NUL: only a string can hold it */
    if (want) error_at(L, ld, e->start_mark, "cannot read this scalar as !!%s", want);
    lua_pushlstring(L, s, n);
    return;
  }
  lua_Integer i;
  lua_Number f;
  int b;
  if ((!want || !strcmp(want, "null")) && is_null(s, n)) {
    push_tb_null(L);
    return;
  }
  if ((!want || !strcmp(want, "bool")) && (b = as_bool(s)) >= 0) {
    lua_pushboolean(L, b);
    return;
  }
  if (!want || !strcmp(want, "int") || !strcmp(want, "float")) {
    int_result r = as_int(s, &i);
    if (r == INT_RANGE) error_at(L, ld, e->start_mark, "integer %s is out of the 64-bit range", s);
    if (r == INT_OK) {
      if (want && !strcmp(want, "float")) lua_pushnumber(L, (lua_Number)i);
      else lua_pushinteger(L, i);
      return;
    }
    if ((!want || !strcmp(want, "float")) && as_float(s, &f)) {
      lua_pushnumber(L, f);
      return;
    }
  }
  if (want) error_at(L, ld, e->start_mark, "cannot read '%s' as !!%s", s, want);
  lua_pushlstring(L, s, n);
}

/* ---- nodes --------------------------------------------------------------------------------- */

/* Stack indices fixed by parse_document: the anchors table. */
#define ANCHORS 2

static void parse_node(lua_State *L, loader *ld, int depth);

static void remember_anchor(lua_State *L, const yaml_char_t *anchor) {
  if (anchor == NULL) return;
  lua_pushvalue(L, -1);
  lua_setfield(L, ANCHORS, (const char *)anchor);
}

static void parse_sequence(lua_State *L, loader *ld, int depth) {
  yaml_char_t *anchor = ld->event.data.sequence_start.anchor;
  char *anchor_copy = NULL;
  if (anchor) { /* the event is freed by the next parse; keep the name on the Lua stack */
    lua_pushstring(L, (const char *)anchor);
    anchor_copy = (char *)lua_tostring(L, -1);
  }
  lua_newtable(L);
  lua_Integer n = 0;
  for (;;) {
    next_event(L, ld);
    if (ld->event.type == YAML_SEQUENCE_END_EVENT) break;
    parse_node(L, ld, depth + 1);
    lua_rawseti(L, -2, ++n);
  }
  remember_anchor(L, (const yaml_char_t *)anchor_copy);
  if (anchor_copy) lua_remove(L, -2);
}

/* Adds the keys of the mapping at index src missing from dst (and not in explicit) to dst,
 * appending them to the order table at index merged_order. */
static void merge_from(lua_State *L, int dst, int src, int merged_order) {
  if (!lua_getmetatable(L, src)) return;
  lua_getfield(L, -1, "__order");
  int order = lua_gettop(L);
  lua_Integer n = (lua_Integer)lua_rawlen(L, order);
  for (lua_Integer k = 1; k <= n; k++) {
    lua_rawgeti(L, order, k);    /* key */
    lua_pushvalue(L, -1);
    if (lua_rawget(L, dst) == LUA_TNIL) {
      lua_pop(L, 1);
      lua_pushvalue(L, -1);
      lua_pushvalue(L, -1);
      lua_rawget(L, src);
      lua_rawset(L, dst);
      lua_rawseti(L, merged_order, (lua_Integer)lua_rawlen(L, merged_order) + 1);
    } else {
      lua_pop(L, 2);
    }
  }
  lua_pop(L, 2);
}

static int is_mapping(lua_State *L, int idx) {
  if (!lua_istable(L, idx) || !lua_getmetatable(L, idx)) return 0;
  int ok = lua_getfield(L, -1, "__order") == LUA_TTABLE;
  lua_pop(L, 2);
  return ok;
}

static void parse_mapping(lua_State *L, loader *ld, int depth) {
  const yaml_char_t *anchor = ld->event.data.mapping_start.anchor;
  int has_anchor = anchor != NULL;
  if (has_anchor) lua_pushstring(L, (const char *)anchor);
  else lua_pushnil(L);
  int anchor_idx = lua_gettop(L);
  lua_newtable(L); /* the mapping */
  int map = lua_gettop(L);
  lua_newtable(L); /* order */
  int order = map + 1;
  lua_newtable(L); /* key -> line of first definition */
  int lines = map + 2;
  lua_newtable(L); /* merge sources */
  int merges = map + 3;
  lua_Integer nkeys = 0;
  for (;;) {
    next_event(L, ld);
    if (ld->event.type == YAML_MAPPING_END_EVENT) break;
    yaml_mark_t key_mark = ld->event.start_mark;
    int merge = ld->event.type == YAML_SCALAR_EVENT && ld->event.data.scalar.tag == NULL &&
                ld->event.data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
                strcmp((const char *)ld->event.data.scalar.value, "<<") == 0;
    if (ld->event.type == YAML_SEQUENCE_START_EVENT || ld->event.type == YAML_MAPPING_START_EVENT)
      error_at(L, ld, key_mark, "a mapping key must be a scalar, not a %s",
               ld->event.type == YAML_SEQUENCE_START_EVENT ? "sequence" : "mapping");
    parse_node(L, ld, depth + 1); /* the key */
    if (lua_istable(L, -1)) error_at(L, ld, key_mark, "a mapping key must be a scalar");
    if (lua_islightuserdata(L, -1)) error_at(L, ld, key_mark, "a mapping key cannot be null");
    if (lua_type(L, -1) == LUA_TNUMBER && lua_tonumber(L, -1) != lua_tonumber(L, -1))
      error_at(L, ld, key_mark, "a mapping key cannot be NaN");
    if (merge) {
      lua_pop(L, 1);
      next_event(L, ld);
      yaml_mark_t value_mark = ld->event.start_mark;
      parse_node(L, ld, depth + 1);
      int v = lua_gettop(L);
      if (is_mapping(L, v)) {
        lua_rawseti(L, merges, (lua_Integer)lua_rawlen(L, merges) + 1);
      } else if (lua_istable(L, v)) {
        lua_Integer m = (lua_Integer)lua_rawlen(L, v);
        for (lua_Integer k = 1; k <= m; k++) {
          lua_rawgeti(L, v, k);
          if (!is_mapping(L, -1)) error_at(L, ld, value_mark, "'<<' merges mappings only");
          lua_rawseti(L, merges, (lua_Integer)lua_rawlen(L, merges) + 1);
        }
        lua_pop(L, 1);
      } else {
        error_at(L, ld, value_mark, "'<<' merges mappings only");
      }
      continue;
    }
    lua_pushvalue(L, -1);
    if (lua_rawget(L, lines) != LUA_TNIL) {
      int first = (int)lua_tointeger(L, -1);
      lua_pop(L, 1);
      error_at(L, ld, key_mark, "duplicate key \"%s\" (first defined at line %d)",
               luaL_tolstring(L, -1, NULL), first);
    }
    lua_pop(L, 1);
    lua_pushvalue(L, -1);
    lua_pushinteger(L, (lua_Integer)key_mark.line + 1);
    lua_rawset(L, lines);
    lua_pushvalue(L, -1);
    lua_rawseti(L, order, ++nkeys);
    next_event(L, ld);
    parse_node(L, ld, depth + 1); /* the value */
    lua_rawset(L, map);
  }
  lua_Integer nmerges = (lua_Integer)lua_rawlen(L, merges);
  if (nmerges > 0) { /* merged keys come first, as PyYAML orders them */
    lua_newtable(L);
    int merged_order = lua_gettop(L);
    for (lua_Integer k = 1; k <= nmerges; k++) {
      lua_rawgeti(L, merges, k);
      merge_from(L, map, lua_gettop(L), merged_order);
      lua_pop(L, 1);
    }
    for (lua_Integer k = 1; k <= nkeys; k++) {
      lua_rawgeti(L, order, k);
      lua_rawseti(L, merged_order, (lua_Integer)lua_rawlen(L, merged_order) + 1);
    }
    lua_replace(L, order);
  }
  lua_createtable(L, 0, 2);
  lua_pushliteral(L, "tb.yaml.mapping");
  lua_setfield(L, -2, "__name");
  lua_pushvalue(L, order);
  lua_setfield(L, -2, "__order");
  lua_setmetatable(L, map);
  lua_settop(L, map);
  if (has_anchor) {
    lua_pushvalue(L, map);
    lua_setfield(L, ANCHORS, lua_tostring(L, anchor_idx));
  }
  lua_remove(L, anchor_idx);
}

/* A sequence or mapping is read as it is whatever its tag says, so a tag that asks for another
 * type (!!set, !!omap, !!pairs, !custom) would be silently ignored: refuse it instead. Only the
 * tag naming the node's own type (!!seq, !!map) and the non-specific "!" mean nothing more. */
static void check_collection_tag(lua_State *L, loader *ld, const yaml_char_t *utag, const char *own,
                                 const char *what) {
  const char *tag = (const char *)utag;
  if (tag == NULL || strcmp(tag, "!") == 0) return;
  if (strncmp(tag, TAG_PREFIX, strlen(TAG_PREFIX)) == 0) {
    if (strcmp(tag + strlen(TAG_PREFIX), own) == 0) return;
    error_at(L, ld, ld->event.start_mark, "tag '!!%s' on a %s is not supported (a %s is read as a plain %s; "
             "remove the tag)", tag + strlen(TAG_PREFIX), what, what, what);
  }
  error_at(L, ld, ld->event.start_mark, "tag '%s' on a %s is not supported (a %s is read as a plain %s; "
           "remove the tag)", tag, what, what, what);
}

static void parse_node(lua_State *L, loader *ld, int depth) {
  if (depth > MAX_DEPTH) error_at(L, ld, ld->event.start_mark, "nesting deeper than %d levels", MAX_DEPTH);
  luaL_checkstack(L, 8, "YAML nesting");
  switch (ld->event.type) {
    case YAML_SCALAR_EVENT: {
      const yaml_char_t *anchor = ld->event.data.scalar.anchor;
      push_scalar(L, ld);
      remember_anchor(L, anchor);
      break;
    }
    case YAML_SEQUENCE_START_EVENT:
      check_collection_tag(L, ld, ld->event.data.sequence_start.tag, "seq", "sequence");
      parse_sequence(L, ld, depth);
      break;
    case YAML_MAPPING_START_EVENT:
      check_collection_tag(L, ld, ld->event.data.mapping_start.tag, "map", "mapping");
      parse_mapping(L, ld, depth);
      break;
    case YAML_ALIAS_EVENT: {
      const char *name = (const char *)ld->event.data.alias.anchor;
      if (lua_getfield(L, ANCHORS, name) == LUA_TNIL)
        error_at(L, ld, ld->event.start_mark, "unknown alias *%s (anchors must be defined before use, "
                 "and cannot refer to the node that contains them)", name);
      break;
    }
    default:
      error_at(L, ld, ld->event.start_mark, "unexpected YAML event");
  }
}

/* Runs under lua_pcall: 1 = loader, 2 = anchors table. Returns the document's value. */
static int parse_stream(lua_State *L) {
  loader *ld = (loader *)lua_touserdata(L, 1);
  next_event(L, ld);
  if (ld->event.type != YAML_STREAM_START_EVENT) error_at(L, ld, ld->event.start_mark, "no YAML stream");
  next_event(L, ld);
  if (ld->event.type == YAML_STREAM_END_EVENT) {
    lua_pushnil(L);
    return 1;
  }
  next_event(L, ld); /* the document's root node */
  parse_node(L, ld, 0);
  next_event(L, ld);
  if (ld->event.type != YAML_DOCUMENT_END_EVENT) error_at(L, ld, ld->event.start_mark, "expected the end of the document");
  next_event(L, ld);
  if (ld->event.type != YAML_STREAM_END_EVENT)
    error_at(L, ld, ld->event.start_mark, "expected a single document, found another");
  return 1;
}

static int load_text(lua_State *L, const char *text, size_t len, const char *name) {
  loader *ld = (loader *)lua_newuserdatauv(L, sizeof *ld, 0);
  memset(ld, 0, sizeof *ld);
  luaL_setmetatable(L, LOADER_MT);
  int ud = lua_gettop(L);
  if (!yaml_parser_initialize(&ld->parser)) return luaL_error(L, "%s: cannot create a YAML parser", name);
  ld->parser_ready = 1;
  ld->name = name;
  yaml_parser_set_input_string(&ld->parser, (const unsigned char *)text, len);
  lua_pushcfunction(L, parse_stream);
  lua_pushvalue(L, ud);
  lua_newtable(L);
  int status = lua_pcall(L, 2, 1, 0);
  release(ld);
  if (status != LUA_OK) return lua_error(L);
  return 1;
}

static int l_load(lua_State *L) {
  size_t len;
  const char *text = luaL_checklstring(L, 1, &len);
  const char *name = luaL_optstring(L, 2, "<string>");
  return load_text(L, text, len, name);
}

static int l_load_file(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  FILE *f = fopen(path, "rb");
  if (f == NULL) return luaL_error(L, "cannot open %s: %s", path, strerror(errno));
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  size_t got;
  do {
    char *p = luaL_prepbuffer(&b);
    got = fread(p, 1, LUAL_BUFFERSIZE, f);
    luaL_addsize(&b, got);
  } while (got == LUAL_BUFFERSIZE);
  int failed = ferror(f);
  int err = errno;
  fclose(f);
  if (failed) return luaL_error(L, "cannot read %s: %s", path, strerror(err));
  luaL_pushresult(&b);
  size_t len;
  const char *text = lua_tolstring(L, -1, &len);
  return load_text(L, text, len, path);
}

int luaopen_tb_yaml(lua_State *L);

static const luaL_Reg loader_meta[] = {{"__gc", loader_gc}, {"__close", loader_gc}, {NULL, NULL}};
static const luaL_Reg funcs[] = {{"load", l_load}, {"load_file", l_load_file}, {NULL, NULL}};

int luaopen_tb_yaml(lua_State *L) {
  luaL_newmetatable(L, LOADER_MT);
  luaL_setfuncs(L, loader_meta, 0);
  lua_pop(L, 1);
  luaL_newlib(L, funcs);
  push_tb_null(L);
  lua_setfield(L, -2, "null");
  return 1;
}
