/* SPDX-License-Identifier: MIT */
/* json_keys.c - the key and schema name strings of json_keys.def. */
#include "json_keys.h"

const char *const rt_json_keys[RT_JK_COUNT] = {
#define RT_JSON_KEY(name) [RT_JK_##name] = #name,
#define RT_JSON_SCHEMA(id, name)
#include "json_keys.def"
#undef RT_JSON_KEY
#undef RT_JSON_SCHEMA
};

const char *const rt_json_schemas[RT_JS_COUNT] = {
#define RT_JSON_KEY(name)
#define RT_JSON_SCHEMA(id, name) [RT_JS_##id] = name,
#include "json_keys.def"
#undef RT_JSON_KEY
#undef RT_JSON_SCHEMA
};
