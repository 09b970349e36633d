/* SPDX-License-Identifier: MIT */
/* read_bt2.c - LTTng traces of `ranktrace run --backend lttng`, read through
 * libbabeltrace2's C API into the events the model already knows.
 *
 * One graph: source.ctf.fs on the session's output directory, one simple
 * sink per output port (no muxer: events are grouped per process and sorted
 * here). Each `ranktrace:NAME` event class is matched once to the schema's
 * event id by name, and each of its payload members to the schema's field of
 * that name (format/schema.h); every event is then re-encoded in the native
 * layout, so the model, matcher and outputs read both backends through the
 * same rt_vw_event and rt_vw_fld(). Other events (kernel, other providers)
 * are skipped.
 *
 * Processes are told apart by the vpid context the session adds; each says
 * who it is with ranktrace:rt_identity (what the native writer puts in a
 * rank's metadata) and, when the rank comes from NCCL later, rt_rank.
 * Processes of one rank (forked children) form one rank, as in a native rank
 * directory. LTTng records a call when it returns: the event's time minus
 * dur_ns is the call's begin, the native timestamp; a call that never
 * returned is absent (the native writer shows it as pending).
 *
 * Events discarded by LTTng are counted per ring buffer (per CPU with per-UID
 * buffers), not per process: each rank is charged the discards of every
 * buffer it wrote into (an upper bound, never an undercount).
 *
 * Memory: the whole trace's ranktrace events, in the native layout (about
 * 40 bytes plus the payload per event). Not thread-safe; one call at a time
 * per trace. */
#include <babeltrace2/babeltrace.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "read_bt2_int.h"
#include "rt_util.h"

static int payload_index(const bt_field_class *fc, const char *name, uint8_t *type)
{
	uint64_t n = fc ? bt_field_class_structure_get_member_count(fc) : 0;

	for (uint64_t i = 0; i < n; i++) {
		const bt_field_class_structure_member *m =
			bt_field_class_structure_borrow_member_by_index_const(fc, i);

		if (strcmp(bt_field_class_structure_member_get_name(m), name) == 0) {
			const bt_field_class *mc = bt_field_class_structure_member_borrow_field_class_const(m);
			bt_field_class_type t = bt_field_class_get_type(mc);

			if (type)
				*type = bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER) ? T_UNSIGNED
				      : bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_SIGNED_INTEGER)  ? T_SIGNED
				      : t == BT_FIELD_CLASS_TYPE_STRING ? T_STRING : T_OTHER;
			return (int)i;
		}
	}
	return -1;
}

static int schema_id(const char *name)
{
	for (unsigned id = 0; id < RT_ID_COUNT; id++)
		if (strcmp(rt_events[id].name, name) == 0)
			return (int)id;
	return ID_NOT_OURS;
}

static void describe_class(struct ec_info *x, const bt_event_class *ec)
{
	static const char *const ident[I_COUNT] = { "rank", "local_rank", "world_size", "pid",
						    "rank_pid", "rank_source", "hostname", "run_id" };
	static const char *const common[3] = { "dur_ns", "ret", "cur_dev" };
	const bt_field_class *pay = bt_event_class_borrow_payload_field_class_const(ec);
	const bt_field_class *ctx = bt_stream_class_borrow_event_common_context_field_class_const(
		bt_event_class_borrow_stream_class_const(ec));
	const char *name = bt_event_class_get_name(ec);

	memset(x, 0, sizeof(*x));
	x->ec = ec;
	x->id = ID_NOT_OURS;
	if (!name || strncmp(name, PROVIDER, strlen(PROVIDER)) != 0)
		return;
	name += strlen(PROVIDER);
	x->vpid = payload_index(ctx, "vpid", NULL);
	x->vtid = payload_index(ctx, "vtid", NULL);
	if (strcmp(name, "rt_identity") == 0) {
		x->id = ID_IDENTITY;
		for (int i = 0; i < I_COUNT; i++)
			x->ident[i] = payload_index(pay, ident[i], NULL);
		return;
	}
	x->id = schema_id(name);
	if (x->id < 0)
		return;
	for (int i = 0; i < 3; i++)
		x->common[i] = payload_index(pay, common[i], NULL);
	for (int i = 0; i < MAX_FIELDS; i++)
		x->fld[i] = i < rt_events[x->id].nfields
				    ? payload_index(pay, rt_events[x->id].fields[i].name, &x->ftype[i])
				    : -1;
}

static struct ec_info *class_info(struct reader *r, const bt_event_class *ec)
{
	size_t h = ((uintptr_t)ec >> 4) % EC_SLOTS;

	for (size_t k = 0; k < EC_SLOTS; k++, h = (h + 1) % EC_SLOTS) {
		if (r->ecs[h].ec == ec)
			return &r->ecs[h];
		if (!r->ecs[h].ec) {
			describe_class(&r->ecs[h], ec);
			return &r->ecs[h];
		}
	}
	return NULL;
}

static int64_t int_member(const bt_field *s, int i)
{
	const bt_field *f;
	bt_field_class_type t;

	if (!s || i < 0)
		return 0;
	f = bt_field_structure_borrow_member_field_by_index_const(s, (uint64_t)i);
	t = bt_field_get_class_type(f);
	if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_SIGNED_INTEGER))
		return bt_field_integer_signed_get_value(f);
	if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER))
		return (int64_t)bt_field_integer_unsigned_get_value(f);
	return 0;
}

static const char *str_member(const bt_field *s, int i)
{
	const bt_field *f;

	if (!s || i < 0)
		return "";
	f = bt_field_structure_borrow_member_field_by_index_const(s, (uint64_t)i);
	return bt_field_get_class_type(f) == BT_FIELD_CLASS_TYPE_STRING ? bt_field_string_get_value(f)
									: "";
}

static struct proc *proc_of(struct reader *r, int64_t vpid)
{
	struct proc *p;

	for (int i = r->nprocs - 1; i >= 0; i--)
		if (r->procs[i].vpid == vpid)
			return &r->procs[i];
	if (!RT_GROW(r->procs, r->nprocs, r->procs_cap, 16, 0))
		return NULL;
	p = &r->procs[r->nprocs++];
	memset(p, 0, sizeof(*p));
	p->vpid = vpid;
	p->meta.rank = p->meta.local_rank = p->meta.world_size = -1;
	p->meta.pid = (int)vpid;
	p->rank_pid = vpid;
	p->nccl_rank = -1;
	return p;
}

static int stream_index(struct reader *r, const bt_stream *s)
{
	for (int i = 0; i < r->nstreams; i++)
		if (r->streams[i] == s)
			return i;
	if (r->nstreams == MAX_STREAMS)
		return MAX_STREAMS - 1; /* shares the last slot: still an upper bound */
	r->streams[r->nstreams] = s;
	return r->nstreams++;
}

static void on_identity(struct proc *p, const struct ec_info *x, const bt_field *pay)
{
	p->identified = true;
	p->meta.rank = (int)int_member(pay, x->ident[I_RANK]);
	p->meta.local_rank = (int)int_member(pay, x->ident[I_LOCAL]);
	p->meta.world_size = (int)int_member(pay, x->ident[I_WORLD]);
	p->meta.pid = (int)int_member(pay, x->ident[I_PID]);
	p->rank_pid = x->ident[I_RANK_PID] >= 0 ? int_member(pay, x->ident[I_RANK_PID]) : p->vpid;
	snprintf(p->meta.rank_source, sizeof(p->meta.rank_source), "%s",
		 str_member(pay, x->ident[I_SOURCE]));
	snprintf(p->meta.hostname, sizeof(p->meta.hostname), "%s", str_member(pay, x->ident[I_HOST]));
	snprintf(p->run_id, sizeof(p->run_id), "%s", str_member(pay, x->ident[I_RUN]));
	p->meta.schema = RT_SCHEMA_VERSION;
}

/* Field i of an event, in the native encoding, at out. */
static void put_field(uint8_t *out, enum rt_kind k, const struct ec_info *x, int i,
		      const bt_field *pay)
{
	size_t sz = rt_kind_size(k);

	memset(out, 0, sz);
	if (x->fld[i] < 0)
		return;
	if (k == RT_K_STR) {
		const char *s = x->ftype[i] == T_STRING ? str_member(pay, x->fld[i]) : "";

		strncpy((char *)out, s, sz - 1);
	} else {
		uint64_t v = (uint64_t)int_member(pay, x->fld[i]);

		memcpy(out, &v, sz); /* little-endian: the low bytes */
	}
}

static bool grow(void **p, size_t *cap, size_t need, size_t elem)
{
	size_t c = *cap ? *cap : 256;
	void *q;

	if (need <= *cap)
		return true;
	while (c < need)
		c *= 2;
	q = realloc(*p, c * elem);
	if (!q)
		return false;
	*p = q;
	*cap = c;
	return true;
}

static uint64_t event_ns(const bt_message *msg)
{
	const bt_clock_snapshot *cs = bt_message_event_borrow_default_clock_snapshot_const(msg);
	uint64_t v = bt_clock_snapshot_get_value(cs);
	uint64_t f = bt_clock_class_get_frequency(bt_clock_snapshot_borrow_clock_class_const(cs));

	return f == 1000000000ull || f == 0 ? v
					    : (uint64_t)((unsigned __int128)v * 1000000000ull / f);
}

static void on_event(struct reader *r, const bt_message *msg)
{
	const bt_event *ev = bt_message_event_borrow_event_const(msg);
	struct ec_info *x = class_info(r, bt_event_borrow_class_const(ev));
	const bt_field *pay, *ctx;
	const struct rt_event_desc *d;
	struct proc *p;
	struct rec *rc;

	if (!x || x->id == ID_NOT_OURS) {
		r->foreign++;
		return;
	}
	ctx = bt_event_borrow_common_context_field_const(ev);
	pay = bt_event_borrow_payload_field_const(ev);
	p = proc_of(r, int_member(ctx, x->vpid));
	if (!p)
		goto out_oom;
	p->streams |= 1ull << stream_index(r, bt_event_borrow_stream_const(ev));
	if (x->id == ID_IDENTITY) {
		on_identity(p, x, pay);
		return;
	}
	d = &rt_events[x->id];
	if (!grow((void **)&p->recs, &p->cap, p->n + 1, sizeof(*p->recs)) ||
	    !grow((void **)&p->bytes, &p->bytes_cap, p->nbytes + d->size, 1))
		goto out_oom;
	rc = &p->recs[p->n++];
	rc->dur = (uint64_t)int_member(pay, x->common[0]);
	rc->ts = event_ns(msg);
	rc->pending = rc->dur == RT_DUR_PENDING;
	rc->drop = 0;
	if (!rc->pending) /* recorded at return: its start is dur_ns earlier */
		rc->ts = rc->dur <= rc->ts ? rc->ts - rc->dur : 0;
	rc->ret = (int16_t)int_member(pay, x->common[1]);
	rc->dev = (int8_t)int_member(pay, x->common[2]);
	rc->id = (uint16_t)x->id;
	rc->tid = (uint32_t)int_member(ctx, x->vtid);
	rc->off = (uint32_t)p->nbytes;
	for (int i = 0; i < d->nfields && i < MAX_FIELDS; i++)
		put_field(p->bytes + p->nbytes + d->fields[i].offset, (enum rt_kind)d->fields[i].kind,
			  x, i, pay);
	p->nbytes += d->size;
	if (x->id == RT_ID_rt_rank && p->nccl_rank < 0) {
		p->nccl_rank = (int)rt_field_value(x->id, p->bytes + rc->off, RT_FN_rank);
		p->nccl_world = (int)rt_field_value(x->id, p->bytes + rc->off, RT_FN_nranks);
	}
	r->events++;
	return;

out_oom:
	r->oom = true;
}

static void on_message(struct reader *r, const bt_message *msg)
{
	uint64_t n;

	switch (bt_message_get_type(msg)) {
	case BT_MESSAGE_TYPE_EVENT:
		on_event(r, msg);
		break;
	case BT_MESSAGE_TYPE_DISCARDED_EVENTS:
		if (bt_message_discarded_events_get_count(msg, &n) == BT_PROPERTY_AVAILABILITY_AVAILABLE)
			r->stream_discarded[stream_index(
				r, bt_message_discarded_events_borrow_stream_const(msg))] += n;
		break;
	default:
		break;
	}
}

static bt_graph_simple_sink_component_consume_func_status consume(bt_message_iterator *it,
								   void *data)
{
	struct reader *r = data;
	bt_message_array_const msgs;
	uint64_t n;

	switch (bt_message_iterator_next(it, &msgs, &n)) {
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_OK:
		break;
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_END:
		return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_END;
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_AGAIN:
		return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_AGAIN;
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_MEMORY_ERROR:
		return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_MEMORY_ERROR;
	default:
		return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_ERROR;
	}
	for (uint64_t i = 0; i < n; i++) {
		on_message(r, msgs[i]);
		bt_message_put_ref(msgs[i]);
	}
	return r->oom ? BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_MEMORY_ERROR
		      : BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_OK;
}

/* The root cause of libbabeltrace2's current error, into err. */
static void take_error(const char *dir, const char *what, char *err, size_t n)
{
	const bt_error *e = bt_current_thread_take_error();
	uint64_t k = e ? bt_error_get_cause_count(e) : 0;

	snprintf(err, n, "%s: %s%s%s", dir, what, k ? ": " : "",
		 k ? bt_error_cause_get_message(bt_error_borrow_cause_by_index(e, 0)) : "");
	if (e)
		bt_error_release(e);
}

/* Every directory under dir holding a CTF trace (a metadata file), as the
 * `babeltrace2 DIR` command discovers them: ust/uid/U/64-bit, kernel, ... */
static int find_traces(bt_value *inputs, const char *dir, int depth)
{
	char path[4200];
	struct stat st;
	struct dirent *de;
	DIR *d;
	int found = 0;

	snprintf(path, sizeof(path), "%s/metadata", dir);
	if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
		return bt_value_array_append_string_element(inputs, dir) ? -1 : 1;
	if (depth == 0 || !(d = opendir(dir)))
		return 0;
	while ((de = readdir(d))) {
		int k;

		if (de->d_name[0] == '.' || de->d_type != DT_DIR)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		k = find_traces(inputs, path, depth - 1);
		if (k < 0) {
			found = -1;
			break;
		}
		found += k;
	}
	closedir(d);
	return found;
}

/* One source.ctf.fs per trace (ctf.fs merges its inputs into one trace, so
 * traces with other UUIDs -- another user's ust/uid/U, kernel/ -- each need
 * their own), each output port into a simple sink of ours. */
static int add_trace(bt_graph *g, const bt_component_class_source *cls, const char *path, int k,
		     struct reader *r, char *err, size_t n)
{
	const bt_component_source *src;
	bt_value *params = bt_value_map_create(), *inputs = NULL;
	char name[64];
	int rc = -1;

	snprintf(name, sizeof(name), "src%d", k);
	if (!params || bt_value_map_insert_empty_array_entry(params, "inputs", &inputs) ||
	    bt_value_array_append_string_element(inputs, path)) {
		snprintf(err, n, "%s: out of memory", path);
		goto out;
	}
	if (bt_graph_add_source_component(g, cls, name, params, BT_LOGGING_LEVEL_NONE, &src)) {
		take_error(path, "libbabeltrace2 cannot open this trace", err, n);
		goto out;
	}
	for (uint64_t i = 0; i < bt_component_source_get_output_port_count(src); i++) {
		const bt_component_sink *sink;

		snprintf(name, sizeof(name), "sink%d-%llu", k, (unsigned long long)i);
		if (bt_graph_add_simple_sink_component(g, name, NULL, consume, NULL, r, &sink) ||
		    bt_graph_connect_ports(g, bt_component_source_borrow_output_port_by_index_const(src, i),
					   bt_component_sink_borrow_input_port_by_index_const(sink, 0),
					   NULL)) {
			take_error(path, "cannot build the reading graph", err, n);
			goto out;
		}
	}
	rc = 0;
out:
	bt_value_put_ref(params);
	return rc;
}

int rt_vw_bt2_read(struct reader *r, const char *dir, char *err, size_t n)
{
	const bt_plugin *ctf = NULL;
	const bt_component_class_source *cls;
	bt_value *traces = bt_value_array_create();
	bt_graph *g = bt_graph_create(0);
	bt_graph_run_status st;
	int rc = -1;

	if (!traces || !g) {
		snprintf(err, n, "%s: out of memory", dir);
		goto out;
	}
	if (find_traces(traces, dir, 6) <= 0) {
		snprintf(err, n, "%s: no CTF trace (metadata file) under it", dir);
		goto out;
	}
	if (bt_plugin_find("ctf", BT_TRUE, BT_TRUE, BT_TRUE, BT_TRUE, BT_TRUE, &ctf) !=
		    BT_PLUGIN_FIND_STATUS_OK ||
	    !(cls = bt_plugin_borrow_source_component_class_by_name_const(ctf, "fs"))) {
		take_error(dir, "libbabeltrace2 has no ctf plugin (install babeltrace2)", err, n);
		goto out;
	}
	for (uint64_t k = 0; k < bt_value_array_get_length(traces); k++)
		if (add_trace(g, cls, bt_value_string_get(bt_value_array_borrow_element_by_index_const(
					      traces, k)), (int)k, r, err, n) != 0)
			goto out;
	do
		st = bt_graph_run(g);
	while (st == BT_GRAPH_RUN_STATUS_AGAIN);
	if (st != BT_GRAPH_RUN_STATUS_OK) {
		if (r->oom)
			snprintf(err, n, "%s: out of memory", dir);
		else
			take_error(dir, "damaged LTTng trace", err, n);
		goto out;
	}
	rc = 0;
out:
	bt_graph_put_ref(g);
	bt_value_put_ref(traces);
	bt_plugin_put_ref(ctf);
	return rc;
}
