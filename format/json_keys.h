/* SPDX-License-Identifier: MIT */
/* json_keys.h - the JSON outputs' keys and schema names (json_keys.def) as
 * C: RT_JK(name) is the key's string, RT_JSCHEMA(id) the schema's. Written
 * through util/json.h by the viewer's renderers and bisect's report. */
#ifndef RT_JSON_KEYS_H
#define RT_JSON_KEYS_H

enum rt_jkey {
#define RT_JSON_KEY(name) RT_JK_##name,
#define RT_JSON_SCHEMA(id, name)
#include "json_keys.def"
#undef RT_JSON_KEY
#undef RT_JSON_SCHEMA
	RT_JK_COUNT
};

enum rt_jschema {
#define RT_JSON_KEY(name)
#define RT_JSON_SCHEMA(id, name) RT_JS_##id,
#include "json_keys.def"
#undef RT_JSON_KEY
#undef RT_JSON_SCHEMA
	RT_JS_COUNT
};

extern const char *const rt_json_keys[RT_JK_COUNT];
extern const char *const rt_json_schemas[RT_JS_COUNT];

#define RT_JK(name) (rt_json_keys[RT_JK_##name])
#define RT_JSCHEMA(id) (rt_json_schemas[RT_JS_##id])

#endif
