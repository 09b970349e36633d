/* SPDX-License-Identifier: MIT */
/* view_comms.c - view's communicators section: every communicator the
 * ranks' rt_comm records name (model/comm_index.c), with its members in
 * global ranks, how it was made (parent, color, keys, excluded ranks), its
 * state and the calls made on it; as text and as view --json's
 * "communicators" (docs/json.md). A view of the loaded trace: nothing here
 * judges. Linear in the members listed (16,384 ranks: no per-rank search). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "comms.h"
#include "export.h"
#include "finding_say.h"
#include "json.h"
#include "json_keys.h"
#include "view.h"

#define TEXT_COMMS 16 /* listed without --all */

/* "0-3", "1,3", "0-7,16-23": the members' global ranks (keys: their split
 * keys) in place order, runs of consecutive values as ranges, cut with
 * "..." once the list outgrows cap bytes. */
static void say_list(struct rt_vw_sb *b, const struct rt_vw_comm_entry *c, bool keys, size_t cap)
{
	size_t start = b->len;

	for (int i = 0; i < c->nmembers;) {
		int v = keys ? c->members[i].key : c->members[i].global, j = i + 1;

		while (j < c->nmembers &&
		       (keys ? c->members[j].key : c->members[j].global) == v + (j - i))
			j++;
		if (b->len - start > cap) {
			rt_vw_sb_printf(b, ",...");
			return;
		}
		rt_vw_sb_printf(b, "%s%d", i ? "," : "", v);
		if (j - i > 2)
			rt_vw_sb_printf(b, "-%d", v + (j - i - 1));
		else if (j - i == 2)
			rt_vw_sb_printf(b, ",%d", v + 1);
		i = j;
	}
}

/* "split from the world with color 1, keys 1,3", "made by ncclCommInitRank". */
static void say_how(struct rt_vw_sb *b, const struct rt_vw_trace *t, const struct rt_vw_comm_entry *c)
{
	const struct rt_vw_rank_comm *k = c->k;

	if (k->how == RT_COMM_SPLIT) {
		rt_vw_sb_printf(b, "split from ");
		rt_vw_say_parent(b, t, k->parent);
		rt_vw_sb_printf(b, " with color %d, key%s ", k->color, c->nmembers > 1 ? "s" : "");
		say_list(b, c, true, 40);
	} else if (k->how == RT_COMM_SHRINK) {
		rt_vw_sb_printf(b, "shrunk from ");
		rt_vw_say_parent(b, t, k->parent);
		rt_vw_sb_printf(b, " without its ranks %s", k->excluded);
	} else {
		rt_vw_sb_printf(b, "made by %s",
				k->how >= 0 && k->how < RT_COMM_HOW_COUNT ? rt_comm_how_calls[k->how] : "?");
	}
}

/* "made", "being made on 2 of 4", "failed on 1 of 4"; then its end. */
static const char *state_word(const struct rt_vw_comm_entry *c)
{
	return c->failed ? "failed" : c->being_made ? "being made" : "made";
}

static void say_state(struct rt_vw_sb *b, const struct rt_vw_comm_entry *c)
{
	int n = c->failed ? c->failed : c->being_made;

	rt_vw_sb_printf(b, "%s", state_word(c));
	if (n && n < c->nmembers)
		rt_vw_sb_printf(b, " on %d of %d", n, c->nmembers);
	if (c->revoked)
		rt_vw_sb_printf(b, ", revoked by %d", c->revoked);
	if (c->ended == c->nmembers)
		rt_vw_sb_printf(b, ", ended (destroyed or aborted)");
	else if (c->ended)
		rt_vw_sb_printf(b, ", ended by %d of %d", c->ended, c->nmembers);
}

/* One communicator's line. */
static void comm_line(FILE *f, const struct rt_vw_trace *t, const struct rt_vw_comm_entry *c)
{
	char s[640];
	struct rt_vw_sb b = rt_vw_sb_init(s, sizeof(s));

	rt_vw_sb_printf(&b, "{");
	say_list(&b, c, false, 120);
	rt_vw_sb_printf(&b, "}");
	if (c->k->nranks > 0 && c->nmembers < c->k->nranks)
		rt_vw_sb_printf(&b, " (%d of %d recorded)", c->nmembers, c->k->nranks);
	rt_vw_sb_printf(&b, ": ");
	say_how(&b, t, c);
	rt_vw_sb_printf(&b, "; ");
	say_state(&b, c);
	rt_vw_sb_printf(&b, "; %" PRIu64 " collective%s", c->colls_most, c->colls_most == 1 ? "" : "s");
	if (c->colls_fewest != c->colls_most)
		rt_vw_sb_printf(&b, " (a member called %" PRIu64 ")", c->colls_fewest);
	if (c->sends || c->recvs)
		rt_vw_sb_printf(&b, ", %" PRIu64 " send%s, %" PRIu64 " recv%s", c->sends,
				c->sends == 1 ? "" : "s", c->recvs, c->recvs == 1 ? "" : "s");
	fprintf(f, "  %016" PRIx64 " %s\n", c->id, rt_vw_esc(s));
}

/* Is global rank only a member of c (only < 0: every communicator)? */
static bool shown(const struct rt_vw_comm_entry *c, int only)
{
	for (int i = 0; only >= 0 && i < c->nmembers; i++)
		if (c->members[i].global == only)
			return true;
	return only < 0;
}

void rt_vw_comms_text(FILE *f, const struct rt_vw_trace *t, int only, bool all)
{
	int n = rt_vw_comm_count(t), listed = 0, more = 0;

	for (int i = 0; i < n; i++) {
		const struct rt_vw_comm_entry *c = rt_vw_comm_at(t, i);

		if (!shown(c, only))
			continue;
		if (!listed && !more)
			fprintf(f, "\ncommunicators (members as global ranks, in their places' "
				   "order):\n");
		if (all || listed < TEXT_COMMS) {
			comm_line(f, t, c);
			listed++;
		} else {
			more++;
		}
	}
	if (more)
		fprintf(f, "  (%d more: --all lists every one)\n", more);
}

/* A shrink's excluded parent ranks ("1,3") as numbers. */
static void excluded_json(struct rt_json *w, const struct rt_vw_rank_comm *k)
{
	const char *p = k->excluded;
	char *end;

	if (k->how != RT_COMM_SHRINK) {
		rt_json_null(w, RT_JK(excluded));
		return;
	}
	rt_json_arr(w, RT_JK(excluded));
	for (long v = strtol(p, &end, 10); end != p; v = strtol(p, &end, 10)) {
		rt_json_int(w, NULL, (int)v);
		p = *end == ',' ? end + 1 : end;
	}
	rt_json_end(w);
}

static void comm_json(struct rt_json *w, const struct rt_vw_comm_entry *c)
{
	const struct rt_vw_rank_comm *k = c->k;
	bool split = k->how == RT_COMM_SPLIT;

	rt_json_obj(w, NULL);
	rt_json_strf(w, RT_JK(id), "%016" PRIx64, c->id);
	rt_json_str(w, RT_JK(made_by),
		    k->how >= 0 && k->how < RT_COMM_HOW_COUNT ? rt_comm_how_calls[k->how] : "?");
	rt_json_int(w, RT_JK(size), k->nranks);
	rt_json_arr(w, RT_JK(members));
	for (int i = 0; i < c->nmembers; i++)
		rt_json_int(w, NULL, c->members[i].global);
	rt_json_end(w);
	if (k->parent)
		rt_json_strf(w, RT_JK(parent), "%016" PRIx64, k->parent);
	else
		rt_json_null(w, RT_JK(parent));
	if (split) {
		rt_json_int(w, RT_JK(color), k->color);
		rt_json_arr(w, RT_JK(keys));
		for (int i = 0; i < c->nmembers; i++)
			rt_json_int(w, NULL, c->members[i].key);
		rt_json_end(w);
	} else {
		rt_json_null(w, RT_JK(color));
		rt_json_null(w, RT_JK(keys));
	}
	excluded_json(w, k);
	rt_json_str(w, RT_JK(state), state_word(c));
	rt_json_int(w, RT_JK(ended), c->ended);
	rt_json_int(w, RT_JK(revoked), c->revoked);
	rt_json_uint(w, RT_JK(collectives), c->colls_most);
	rt_json_uint(w, RT_JK(collectives_fewest), c->colls_fewest);
	rt_json_uint(w, RT_JK(sends), c->sends);
	rt_json_uint(w, RT_JK(recvs), c->recvs);
	rt_json_end(w);
}

void rt_vw_comms_json(struct rt_json *w, const struct rt_vw_trace *t, int only)
{
	rt_json_arr(w, RT_JK(communicators));
	rt_json_lines(w, 2, true);
	for (int i = 0; i < rt_vw_comm_count(t); i++) {
		const struct rt_vw_comm_entry *c = rt_vw_comm_at(t, i);

		if (shown(c, only))
			comm_json(w, c);
	}
	rt_json_end(w);
}
