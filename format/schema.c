/* SPDX-License-Identifier: MIT */
/* schema.c - descriptor table and CTF 1.8 metadata, expanded from the .def files.
 *
 * Pure data and formatting: no allocation, no locks, thread-safe. Used by the
 * tracer (metadata at a rank's first event) and the viewer (decoding), the
 * injector (roles, errors) and the outputs (collective names). */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "schema.h"

/* lower case: "alloc", "comm_init" (Perfetto categories) */
const char *const rt_role_names[RT_R_COUNT] = {
#define RT_ROLE_NAME(n, doc) [RT_R_##n] = #n,
	RT_ROLES(RT_ROLE_NAME)
#undef RT_ROLE_NAME
};

const char *const rt_comm_how_calls[RT_COMM_HOW_COUNT] = {
#define RT_COMM_HOW_CALL(n, call) call,
	RT_COMM_HOWS(RT_COMM_HOW_CALL)
#undef RT_COMM_HOW_CALL
};

const char *const rt_coll_colours[RT_CK_COUNT] = {
#define RT_API(...)
#define RT_COLL_KIND(k, label, p2p, root, op, view, colour) colour,
#include "nccl_api.def"
#undef RT_COLL_KIND
#undef RT_API
};

const char *const rt_coll_names[RT_CK_COUNT] = {
#define RT_API(...)
#define RT_COLL_KIND(k, label, p2p, root, op, view, colour) #k,
#include "nccl_api.def"
#undef RT_COLL_KIND
#undef RT_API
};

const struct rt_coll_info rt_coll_info[RT_CK_COUNT] = {
#define RT_API(...)
#define RT_COLL_KIND(k, label, p2p, root, op, view, colour) { label, p2p, root, op, view },
#include "nccl_api.def"
#undef RT_COLL_KIND
#undef RT_API
};

/* ---- element types (dtypes.def) ---- */

static const struct { const char *name; uint8_t bytes; } nccl_dtypes[] = {
#define RT_NCCL_DTYPE(v, n, bytes) [v] = { #n, bytes },
#include "dtypes.def"
#undef RT_NCCL_DTYPE
};

unsigned rt_nccl_dtype_size(int64_t v)
{
	return v >= 0 && v < (int64_t)(sizeof(nccl_dtypes) / sizeof(nccl_dtypes[0])) ? nccl_dtypes[v].bytes : 0;
}

const char *rt_nccl_dtype_name(int64_t v)
{
	return v >= 0 && v < (int64_t)(sizeof(nccl_dtypes) / sizeof(nccl_dtypes[0])) ? nccl_dtypes[v].name : NULL;
}

static const struct { const char *name; uint8_t bytes; } probe_dtypes[RT_PDT_COUNT] = {
#define RT_PROBE_DTYPE(n, bytes) { #n, bytes },
#include "dtypes.def"
#undef RT_PROBE_DTYPE
};

const char *rt_probe_dtype_name(unsigned code)
{
	return code < RT_PDT_COUNT ? probe_dtypes[code].name : "?";
}

unsigned rt_probe_dtype_size(unsigned code)
{
	return code < RT_PDT_COUNT ? probe_dtypes[code].bytes : 0;
}

const char *const rt_probe_dev_names[RT_PDEV_COUNT] = {
#define RT_PROBE_DEV(n) #n,
#include "dtypes.def"
#undef RT_PROBE_DEV
};

const char *rt_probe_place_name(int code)
{
	switch (code) {
#define RT_PROBE_PLACE(n, c) case c: return #n;
#include "dtypes.def"
#undef RT_PROBE_PLACE
	default: return NULL;
	}
}

const struct rt_point_info rt_points[RT_POINT_COUNT] = {
#define RT_POINT(id, name, reached, who) { name, reached, who },
#include "points.def"
#undef RT_POINT
};

int rt_spec_target(const char *spec, char *out, size_t n)
{
	static const struct { const char *name, *expansion; } presets[] = {
#define RT_PRESET(name, params, expansion, doc) { name, expansion },
#include "presets.def"
#undef RT_PRESET
	};
	const char *target = spec ? spec : "";

	for (size_t i = 0; spec && i < sizeof(presets) / sizeof(presets[0]); i++) {
		size_t len = strlen(presets[i].name);

		if (!strncmp(spec, presets[i].name, len) && (!spec[len] || spec[len] == '=')) {
			target = presets[i].expansion;
			break;
		}
	}
	return snprintf(out, n, "%.*s", (int)strcspn(target, ":"), target);
}

const struct rt_point_info *rt_point_find(const char *name)
{
	for (unsigned i = 0; name && i < RT_POINT_COUNT; i++)
		if (!strcmp(rt_points[i].name, name))
			return &rt_points[i];
	return NULL;
}

/* Field lists with their offsets: F and O alike. An undeclared field name
 * (format/fields.def) fails here. */
#define F(k, n, e) { #n, RT_K_##k, 0, RT_FN_##n },
#define O(k, n, e) { #n, RT_K_##k, 0, RT_FN_##n },
#define RT_API(name, ret, params, args, fail, dev, after, fields, role, errors) \
	static struct rt_field fields_##name[] = { fields { NULL, 0, 0, 0 } };
#define RT_EVENT(name, params, fields) \
	static struct rt_field fields_##name[] = { fields { NULL, 0, 0, 0 } };
#define RT_DRV(name, gpa, since, ptsz, role, ret, params, args, fail, dev, after, fields) \
	static struct rt_field fields_##name[] = { fields { NULL, 0, 0, 0 } };
#include "cuda_api.def"
#include "nccl_api.def"
#include "driver_api.def"
#include "events.def"
#undef RT_API
#undef RT_EVENT
#undef RT_DRV
#undef F
#undef O

/* Each function's own errors, and each library's common ones. */
#define E(code) #code,
#define RT_API(name, ret, params, args, fail, dev, after, fields, role, errors) \
	static const char *const errors_##name[] = { errors NULL };
#define RT_EVENT(name, params, fields) static const char *const errors_##name[] = { NULL };
#define RT_ERRORS_COMMON(lib, errors) static const char *const common_##lib[] = { errors NULL };
#define RT_DRV(...)
#include "cuda_api.def"
#include "nccl_api.def"
#include "driver_api.def"
#include "events.def"
#undef RT_API
#undef RT_EVENT
#undef RT_DRV
#undef RT_ERRORS_COMMON
#undef E
const char *const *const rt_errors_common[RT_LIB_DRIVER + 1] = {
	[RT_LIB_CUDA] = common_CUDA, [RT_LIB_NCCL] = common_NCCL, [RT_LIB_DRIVER] = common_DRIVER,
};

static const struct {
	int code;
	const char *name;
} driver_results[] = {
#define RT_DRV_ERR(v, n) { v, #n },
#include "errors.def"
#undef RT_DRV_ERR
};

static const struct {
	int code;
	const char *name;
} cuda_results[] = {
#define RT_CUDA_ERR(c, n, t) { c, n },
#include "errors.def"
#undef RT_CUDA_ERR
};

static const char *const nccl_results[] = { /* "": a code without a name */
#define RT_NCCL_ERR(c, n, t) [c] = n,
#include "errors.def"
#undef RT_NCCL_ERR
};

const char *rt_result_name(unsigned lib, int64_t code)
{
	if (lib == RT_LIB_DRIVER) {
		for (size_t i = 0; i < sizeof(driver_results) / sizeof(driver_results[0]); i++)
			if (driver_results[i].code == code)
				return driver_results[i].name;
		return NULL;
	}
	if (lib == RT_LIB_NCCL)
		return code >= 0 && code < (int64_t)(sizeof(nccl_results) / sizeof(nccl_results[0])) &&
		       nccl_results[code] && *nccl_results[code] ? nccl_results[code] : NULL;
	for (size_t i = 0; i < sizeof(cuda_results) / sizeof(cuda_results[0]); i++)
		if (cuda_results[i].code == code)
			return cuda_results[i].name;
	return NULL;
}

int64_t rt_result_value(unsigned lib, const char *name)
{
	if (lib == RT_LIB_DRIVER) {
		for (size_t i = 0; i < sizeof(driver_results) / sizeof(driver_results[0]); i++)
			if (!strcmp(name, driver_results[i].name))
				return driver_results[i].code;
		return -1;
	}
	if (lib == RT_LIB_NCCL) {
		for (size_t i = 0; i < sizeof(nccl_results) / sizeof(nccl_results[0]); i++)
			if (nccl_results[i] && *nccl_results[i] && !strcmp(name, nccl_results[i]))
				return (int64_t)i;
		return -1;
	}
	for (size_t i = 0; i < sizeof(cuda_results) / sizeof(cuda_results[0]); i++)
		if (!strcmp(name, cuda_results[i].name))
			return cuda_results[i].code;
	return -1;
}

#define F(k, n, e) +1
#define O(k, n, e) +1
#define ROLE(what, arg) RT_R_##what, RT_A_##arg
#define RT_API(name, ret, params, args, fail, dev, after, fields, role, errors) \
	[RT_ID_##name] = { #name, LIB, 0 fields, RT_SIZE_##name, fields_##name, role, errors_##name },
#define RT_EVENT(name, params, fields) \
	[RT_ID_##name] = { #name, RT_LIB_TRACER, 0 fields, RT_SIZE_##name, fields_##name, \
			   RT_R_NONE, RT_A_NONE, errors_##name },
const struct rt_event_desc rt_events[RT_ID_COUNT] = {
#define LIB RT_LIB_CUDA
#include "cuda_api.def"
#undef LIB
#define LIB RT_LIB_NCCL
#include "nccl_api.def"
#undef LIB
#define RT_DRV(name, gpa, since, ptsz, role, ret, params, args, fail, dev, after, fields) \
	[RT_ID_##name] = { #name, RT_LIB_DRIVER, 0 fields, RT_SIZE_##name, fields_##name, \
			   RT_R_NONE, RT_A_NONE, NULL },
#include "driver_api.def"
#undef RT_DRV
#include "events.def" /* its RT_API rows name their library */
};
#undef RT_API
#undef RT_EVENT
#undef ROLE

#define ROLE(what, arg) { RT_R_##what, RT_A_##arg }
#define RT_DRV(name, gpa, since, ptsz, role, ...) [RT_ID_##name] = role,
const struct rt_role_cell rt_drv_role[RT_ID_COUNT] = {
#include "driver_api.def"
};
#undef RT_DRV
#undef ROLE
#undef F
#undef O

int8_t rt_field_at[RT_ID_COUNT][RT_FN_COUNT];

size_t rt_kind_size(enum rt_kind k)
{
	static const uint8_t sizes[] = { RT_SZ_PTR, RT_SZ_U64, RT_SZ_U32, RT_SZ_I32, RT_SZ_U8, RT_SZ_I8,
					 RT_SZ_STR };

	return (unsigned)k < sizeof(sizes) ? sizes[k] : 0;
}

/* Offsets are a running sum; computed once (constructor), then read-only. */
__attribute__((constructor(101))) static void compute_offsets(void)
{
	for (unsigned id = 0; id < RT_ID_COUNT; id++) {
		struct rt_field *f = (struct rt_field *)rt_events[id].fields;
		unsigned off = 0;

		memset(rt_field_at[id], -1, sizeof(rt_field_at[id]));
		for (unsigned i = 0; f && i < rt_events[id].nfields; i++) {
			f[i].offset = (uint8_t)off;
			off += (unsigned)rt_kind_size(f[i].kind);
			rt_field_at[id][f[i].fid] = (int8_t)i;
		}
	}
}

int rt_field_index(unsigned id, const char *name)
{
	if (id >= RT_ID_COUNT)
		return -1;
	for (int i = 0; i < rt_events[id].nfields; i++)
		if (strcmp(rt_events[id].fields[i].name, name) == 0)
			return i;
	return -1;
}

struct out {
	char *buf;
	size_t n, len;
	int overflow;
};

static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int k;

	va_start(ap, fmt);
	k = vsnprintf(o->buf + o->len, o->len < o->n ? o->n - o->len : 0, fmt, ap);
	va_end(ap);
	if (k < 0 || o->len + (size_t)k >= o->n)
		o->overflow = 1;
	else
		o->len += (size_t)k;
}

static const char *tsdl_type(enum rt_kind k)
{
	switch (k) {
	case RT_K_PTR: return "hex64";
	case RT_K_U64: return "uint64";
	case RT_K_U32: return "uint32";
	case RT_K_I32: return "int32";
	case RT_K_U8: return "uint8";
	case RT_K_STR: return "char8";
	default: return "int8";
	}
}

/* Escape a string for a TSDL string literal (hostnames are not trusted). */
static void put_escaped(struct out *o, const char *s)
{
	put(o, "\"");
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			put(o, "\\%c", *s);
		else if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
			put(o, "?");
		else
			put(o, "%c", *s);
	}
	put(o, "\"");
}

long rt_schema_tsdl(char *buf, size_t n, const struct rt_trace_env *env)
{
	struct out o = { buf, n, 0, 0 };
	const uint8_t *u = env->uuid;
	char uuid[40];

	snprintf(uuid, sizeof(uuid),
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
		 u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14],
		 u[15]);
	put(&o, "/* CTF 1.8 */\n\n"
		"typealias integer { size = 8; align = 8; signed = false; } := uint8;\n"
		"typealias integer { size = 8; align = 8; signed = true; } := int8;\n"
		"typealias integer { size = 8; align = 8; signed = false; encoding = UTF8; } := char8;\n"
		"typealias integer { size = 16; align = 8; signed = false; } := uint16;\n"
		"typealias integer { size = 16; align = 8; signed = true; } := int16;\n"
		"typealias integer { size = 32; align = 8; signed = false; } := uint32;\n"
		"typealias integer { size = 32; align = 8; signed = true; } := int32;\n"
		"typealias integer { size = 40; align = 8; signed = false; } := uint40;\n"
		"typealias integer { size = 64; align = 8; signed = false; } := uint64;\n"
		"typealias integer { size = 64; align = 8; signed = false; base = 16; } := hex64;\n"
		"typealias integer { size = 32; align = 8; signed = false; map = clock.monotonic.value; } := clock32;\n"
		"typealias integer { size = 64; align = 8; signed = false; map = clock.monotonic.value; } := clock64;\n\n");
	put(&o, "trace {\n\tmajor = 1;\n\tminor = 8;\n\tuuid = \"%s\";\n\tbyte_order = le;\n"
		"\tpacket.header := struct {\n\t\tuint32 magic;\n\t\tuint8 uuid[16];\n"
		"\t\tuint32 stream_id;\n\t\tuint64 stream_instance_id;\n\t} align(8);\n};\n\n", uuid);
	put(&o, "env {\n\ttracer_name = \"ranktrace\";\n\tranktrace_schema = %d;\n\thostname = ",
	    RT_SCHEMA_VERSION);
	put_escaped(&o, env->hostname);
	put(&o, ";\n\tnccl_host = ");
	put_escaped(&o, env->nccl_host[0] ? env->nccl_host : env->hostname);
	put(&o, ";\n\tpid = %d;\n\trank = %d;\n\tlocal_rank = %d;\n\tworld_size = %d;\n"
		"\tattempt = %d;\n\trank_source = ", env->pid, env->rank, env->local_rank,
	    env->world_size, env->attempt);
	put_escaped(&o, env->rank_source ? env->rank_source : "unknown");
	put(&o, ";\n\tpython_probe = %d;\n\tpython_probe_detail = ", env->probe);
	put_escaped(&o, env->probe_detail ? env->probe_detail : "");
	put(&o, ";\n\tpacket_bytes = %" PRIu64 ";\n\tring_bytes = %" PRIu64 ";\n\tmax_bytes = %"
		PRIu64 ";\n\tmin_free = %" PRId64 ";\n\tevent_count = %d;\n", env->packet_bytes,
	    env->ring_bytes, env->max_bytes, env->min_free, (int)RT_ID_COUNT);
	if (env->file_records)
		put(&o, "\tfile_records = %d;\n", env->file_records);
	put(&o, "};\n\n");
	put(&o, "clock {\n\tname = \"monotonic\";\n\tuuid = \"%s\";\n"
		"\tdescription = \"CLOCK_MONOTONIC, ns\";\n\tfreq = 1000000000;\n"
		"\tprecision = 1;\n\toffset_s = %" PRId64 ";\n\toffset = %" PRId64 ";\n"
		"\tabsolute = false;\n};\n\n", env->clock_uuid[0] ? env->clock_uuid : uuid,
	    env->clock_offset_s, env->clock_offset_ns);
	put(&o, "stream {\n\tid = 0;\n\tpacket.context := struct {\n"
		"\t\tclock64 timestamp_begin;\n\t\tclock64 timestamp_end;\n"
		"\t\tuint64 content_size;\n\t\tuint64 packet_size;\n"
		"\t\tuint64 events_discarded;\n\t\tuint32 pid;\n\t\tuint32 tid;\n\t} align(8);\n"
		"\tevent.header := struct {\n"
		"\t\tenum : uint16 { compact = 0 ... 65534, extended = 65535 } id;\n"
		"\t\tvariant <id> {\n\t\t\tstruct { clock32 timestamp; } compact;\n"
		"\t\t\tstruct { uint32 id; clock64 timestamp; } extended;\n\t\t} v;\n"
		"\t} align(8);\n};\n\n");
	for (unsigned id = 0; id < RT_ID_COUNT; id++) {
		const struct rt_event_desc *d = &rt_events[id];

		put(&o, "event {\n\tname = \"%s\";\n\tid = %u;\n\tstream_id = 0;\n"
			"\tfields := struct {\n\t\tuint40 _dur_ns;\n\t\tint16 _ret;\n\t\tint8 _cur_dev;\n",
		    d->name, id);
		for (unsigned i = 0; i < d->nfields; i++)
			/* CTF drops one leading underscore: field names may be keywords (stream) */
			put(&o, "\t\t%s _%s%s;\n", tsdl_type(d->fields[i].kind), d->fields[i].name,
			    d->fields[i].kind == RT_K_STR ? "[64]" : "");
		put(&o, "\t} align(8);\n};\n\n");
	}
	return o.overflow ? -1 : (long)o.len;
}

static const char *const stop_words[] = {
#define RT_X(id, word, prose) word,
	RT_STOP_REASONS(RT_X)
#undef RT_X
};
static const char *const stop_prose[] = {
#define RT_X(id, word, prose) prose,
	RT_STOP_REASONS(RT_X)
#undef RT_X
};

const char *rt_stop_word(unsigned reason)
{
	return reason < RT_STOP_COUNT_ ? stop_words[reason] : NULL;
}

const char *rt_stop_prose(unsigned reason)
{
	return reason < RT_STOP_COUNT_ ? stop_prose[reason] : NULL;
}

static const char *const drop_words[] = {
#define RT_X(id, word, prose) word,
	RT_DROP_REASONS(RT_X)
#undef RT_X
};
static const char *const drop_prose[] = {
#define RT_X(id, word, prose) prose,
	RT_DROP_REASONS(RT_X)
#undef RT_X
};

const char *rt_drop_word(unsigned reason)
{
	return reason < RT_DROP_COUNT_ ? drop_words[reason] : NULL;
}

const char *rt_drop_prose(unsigned reason)
{
	return reason < RT_DROP_COUNT_ ? drop_prose[reason] : NULL;
}
