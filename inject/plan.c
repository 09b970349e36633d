/* SPDX-License-Identifier: MIT */
/* plan.c - parse, validate and expand a fault plan (see plan.h).
 *
 * Runs once: in the CLI before the program starts, and in libranktrace.so at
 * start-up. Allocates only the rank bitmaps. Every error names the spec and
 * the column of the mistake. */
#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "plan.h"
#include "plan_int.h"

/* The actions, from format/actions.def. */
const char *const rt_inj_action_names[RT_INJ_NACTIONS] = {
	"",
#define RT_ACTION(E, n, v, calls, points, usage, doc) #n,
#include "actions.def"
#undef RT_ACTION
};


/* "u1, u2 or u3" of the actions that apply to calls (points false) or to
 * failure points (true); sep_last: the word before the last one. */
static const char *action_list(bool points, const char *sep_last)
{
	static char buf[2][256];
	char *out = buf[points];
	size_t len = 0;
	int n = 0, total = 0;

	for (int i = 1; i < RT_INJ_NACTIONS; i++)
		total += points ? rt_inj_actions[i].points : 1;
	for (int i = 1; i < RT_INJ_NACTIONS; i++) {
		if (points && !rt_inj_actions[i].points)
			continue;
		n++;
		len += (size_t)snprintf(out + len, sizeof(buf[0]) - len, "%s%s",
					n == 1 ? "" : n == total ? sep_last : ", ", rt_inj_actions[i].usage);
	}
	return out;
}

/* Errors function api may return (the call tables): its library's common ones
 * and its own; what `error=` accepts. */
static bool valid_code_for(unsigned api, const char *code)
{
	const char *const *own = rt_events[api].errors, *const *common;

	if (rt_events[api].lib == RT_LIB_TRACER)
		return false;
	common = rt_errors_common[rt_events[api].lib];
	for (int i = 0; common[i]; i++)
		if (!strcmp(code, common[i]))
			return true;
	for (int i = 0; own && own[i]; i++)
		if (!strcmp(code, own[i]))
			return true;
	return false;
}


/* The codes error= accepts for api, comma-separated into out (its own first). */
static void valid_codes_str(unsigned api, char *out, size_t n)
{
	const char *const *own = rt_events[api].errors, *const *common;
	size_t len = 0;

#define ADD(code) (len += (size_t)snprintf(out + len, len < n ? n - len : 0, "%s%s", len ? ", " : "", code))
	out[0] = '\0';
	if (rt_events[api].lib == RT_LIB_TRACER)
		return;
	common = rt_errors_common[rt_events[api].lib];
	for (int i = 0; own && own[i]; i++)
		ADD(own[i]);
	for (int i = 0; common[i]; i++)
		ADD(common[i]);
#undef ADD
}

static int64_t code_value(unsigned api, const char *code)
{
	return rt_result_value(rt_events[api].lib, code);
}

const char *rt_inj_code_name(unsigned api, int64_t code)
{
	const char *n = rt_result_name(api < RT_ID_COUNT ? rt_events[api].lib : RT_LIB_CUDA, code);

	return n ? n : "?";
}

/* ---- error messages that point at the mistake ---- */

struct ctx {
	const char *plan;     /* the whole plan, for the quote */
	size_t spec_off;      /* where the current spec starts in the plan */
	bool in_preset;       /* parsing a preset's expansion: point at the preset */
	char *err;
	size_t errlen;
};

static int fail(struct ctx *c, size_t col, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(struct ctx *c, size_t col, const char *fmt, ...)
{
	char msg[400], safe[1200], quote[1000];
	va_list ap;
	size_t len = strlen(c->plan), at = c->spec_off + (c->in_preset ? 0 : col), from, cols;

	if (at > len)
		at = len;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* the plan is untrusted text: the message (which may quote a word of
	 * it) and the quote are escaped, the caret counted in escaped columns */
	rt_esc_text(safe, sizeof(safe), msg);
	from = len > 200 && at > 30 ? at - 30 : 0; /* a long plan: quote around the mistake */
	cols = rt_esc_columns(quote, rt_esc_text_mem(quote, sizeof(quote), c->plan + from, at - from));
	rt_esc_text_mem(quote, sizeof(quote), c->plan + from, len > 200 ? at - from + 30 : len);
	snprintf(c->err, c->errlen, "bad fault plan: %s\n  %s%s\n  %s%*s^", safe, from ? "..." : "",
		 quote, from ? "   " : "", (int)cols, "");
	return -1;
}

static bool parse_u64(const char *s, const char **end, uint64_t *v)
{
	char *e;

	if (!isdigit((unsigned char)*s))
		return false;
	errno = 0;
	*v = strtoull(s, &e, 10);
	*end = e;
	return errno != ERANGE;
}

/* when=N | N+ | N..M | N+STEP */
static int parse_when(struct ctx *c, size_t col, const char *v, struct rt_inj_rule *r)
{
	const char *p;
	uint64_t a, b;

	if (!parse_u64(v, &p, &a) || a == 0)
		return fail(c, col, "when= needs a call number from 1 (N, N+, N..M or N+STEP)");
	r->when_from = a;
	r->when_to = a;
	r->when_step = 1;
	if (*p == '\0')
		return 0;
	if (p[0] == '+' && p[1] == '\0') {
		r->when_to = 0;
		return 0;
	}
	if (p[0] == '.' && p[1] == '.') {
		if (!parse_u64(p + 2, &p, &b) || *p || b < a)
			return fail(c, col + (size_t)(p - v), "when=N..M needs M >= N");
		r->when_to = b;
		return 0;
	}
	if (p[0] == '+') {
		if (!parse_u64(p + 1, &p, &b) || *p || b == 0)
			return fail(c, col + (size_t)(p - v), "when=N+STEP needs a step of at least 1");
		r->when_to = 0;
		r->when_step = b;
		return 0;
	}
	return fail(c, col + (size_t)(p - v), "when= is N, N+, N..M or N+STEP");
}

/* rank=0,2-3 */
static int parse_ranks(struct ctx *c, size_t col, const char *v, struct rt_inj_rule *r)
{
	const char *p = v;

	r->ranks = calloc(RT_INJ_MAX_RANKS / 8, 1);
	if (!r->ranks)
		return fail(c, col, "out of memory");
	for (;;) {
		uint64_t a, b;

		if (!parse_u64(p, &p, &a) || a >= RT_INJ_MAX_RANKS)
			return fail(c, col + (size_t)(p - v), "rank= is a list such as 0,2-3 (ranks < %d)",
				    RT_INJ_MAX_RANKS);
		b = a;
		if (*p == '-' && (!parse_u64(p + 1, &p, &b) || b < a || b >= RT_INJ_MAX_RANKS))
			return fail(c, col + (size_t)(p - v), "rank range A-B needs B >= A");
		for (uint64_t k = a; k <= b; k++)
			r->ranks[k / 8] |= (uint8_t)(1u << (k % 8));
		if (*p == '\0')
			return 0;
		if (*p != ',')
			return fail(c, col + (size_t)(p - v), "rank= is a list such as 0,2-3");
		p++;
	}
}

#define MAX_DELAY_NS 86400e9 /* a day: longer is a hang, which says so */

/* A finite, non-negative duration of at most a day (nan, inf and 1e12s would
 * spin or never end); what names the action (delay, devdelay). */
static int parse_duration(struct ctx *c, size_t col, const char *v, int64_t *ns, const char *what)
{
	char *end;
	double d = strtod(v, &end), unit;

	if (end == v || !(isdigit((unsigned char)*v) || *v == '.') || !isfinite(d) || d < 0)
		return fail(c, col, "%s= needs a finite duration such as 50ms, 200us or 2s", what);
	if (!strcmp(end, "s"))
		unit = 1e9;
	else if (!strcmp(end, "ms"))
		unit = 1e6;
	else if (!strcmp(end, "us"))
		unit = 1e3;
	else if (!strcmp(end, "ns"))
		unit = 1;
	else
		return fail(c, col + (size_t)(end - v), "duration unit is s, ms, us or ns");
	if (d * unit > MAX_DELAY_NS)
		return fail(c, col, "%s= is at most a day (86400s)%s", what,
			    strcmp(what, "delay") ? "" : "; use hang for a call that never returns");
	*ns = (int64_t)(d * unit);
	return 0;
}

static int parse_target(struct ctx *c, const char *t, struct rt_inj_rule *r)
{
	int n = 0;

	if (strlen(t) >= sizeof(r->target) || !*t)
		return fail(c, 0, "a target is a function name, a glob, @collective or a failure point");
	snprintf(r->target, sizeof(r->target), "%s", t);
	if (!strcmp(t, "@collective")) {
		for (unsigned id = 0; id < RT_ID_COUNT; id++)
			if (rt_events[id].role == RT_R_COLL)
				r->apis[id / 8] |= (uint8_t)(1u << (id % 8));
		return 0;
	}
	if (strchr(t, '.')) {
		for (const char *p = t; *p; p++)
			if (!isalnum((unsigned char)*p) && !strchr("._-", *p))
				return fail(c, (size_t)(p - t), "a failure point name has letters, digits, '.', '_', '-'");
		r->point = true;
		return 0;
	}
	for (unsigned id = 0; id < RT_ID_COUNT; id++)
		if (rt_id_is_api(id) && fnmatch(t, rt_events[id].name, 0) == 0) {
			r->apis[id / 8] |= (uint8_t)(1u << (id % 8));
			n++;
		}
	if (!n)
		return fail(c, 0, "unknown target '%s': not an interposed function (see `ranktrace "
			    "inject --list`), and a failure point needs a dot (fsdp.root_forward)", t);
	return 0;
}

/* error=V at column col: a program's number for a failure point, else
 * NVIDIA's name of a code every function the rule matches may return. */
static int parse_error_arg(struct ctx *c, size_t col, const char *v, struct rt_inj_rule *r)
{
	if (r->point) {
		char *end;

		errno = 0;
		r->arg = strtoll(v, &end, 10);
		if (end == v || *end || errno == ERANGE || r->arg < 2 || r->arg > INT_MAX)
			return fail(c, col, "a failure point's error= is a program error "
				    "number from 2 to %d (0 is pass, 1 is bypass)", INT_MAX);
		return 0;
	}
	for (unsigned id = 0; id < RT_ID_COUNT; id++) {
		if (!rt_inj_rule_matches(r, id))
			continue;
		if (code_value(id, v) < 0 || !valid_code_for(id, v)) {
			char valid[1024];

			valid_codes_str(id, valid, sizeof(valid));
			if (code_value(id, v) < 0)
				return fail(c, col, "unknown error code '%s' for %s; it can "
					    "return %s", v, rt_events[id].name, valid);
			return fail(c, col, "%s cannot return %s; it can return %s",
				    rt_events[id].name, v, valid);
		}
		r->arg = code_value(id, v);
	}
	return 0;
}

static int parse_action(struct ctx *c, size_t col, const char *a, struct rt_inj_rule *r)
{
	const char *eq = strchr(a, '=');
	size_t klen = eq ? (size_t)(eq - a) : strlen(a);
	const char *v = eq ? eq + 1 : NULL;
	int act = 0;

	for (int i = 1; i < RT_INJ_NACTIONS; i++)
		if (strlen(rt_inj_action_names[i]) == klen && !strncmp(a, rt_inj_action_names[i], klen))
			act = i;
	if (!act)
		return fail(c, col, "unknown action '%.*s' (%s)", (int)klen, a, action_list(false, ", "));
	r->action = (enum rt_inj_action)act;
	bool wants = rt_inj_actions[act].value;

	if (wants && (!v || !*v))
		return fail(c, col + klen, "%s needs a value (%s=...)", rt_inj_action_names[act],
			    rt_inj_action_names[act]);
	if (!wants && v)
		return fail(c, col + klen, "%s takes no value", rt_inj_action_names[act]);
	if (r->point && !rt_inj_actions[act].points)
		return fail(c, col, "a failure point takes %s", action_list(true, " or "));
	if (!r->point && !rt_inj_actions[act].calls)
		return fail(c, col, "bypass is for failure points (names with a dot), not for %s",
			    r->target);
	switch (act) {
	case RT_INJ_ERROR:
		return parse_error_arg(c, col + klen + 1, v, r);
	case RT_INJ_DELAY:
		return parse_duration(c, col + klen + 1, v, &r->arg, "delay");
	case RT_INJ_DEVDELAY:
		for (unsigned id = 0; id < RT_ID_COUNT; id++)
			if (rt_inj_rule_matches(r, id) && rt_events[id].role != RT_R_COLL &&
			    rt_events[id].role != RT_R_P2P)
				return fail(c, col, "devdelay= delays collectives on their stream, not %s",
					    rt_events[id].name);
		return parse_duration(c, col + klen + 1, v, &r->arg, "devdelay");
	case RT_INJ_DEVICE: {
		char *end;

		r->arg = strtol(v, &end, 10);
		if (*end || r->arg < 0 || r->arg > 1023)
			return fail(c, col + klen + 1, "device= is a device number");
		for (unsigned id = 0; id < RT_ID_COUNT; id++)
			if (rt_inj_rule_matches(r, id) && rt_events[id].role != RT_R_SET_DEVICE)
				return fail(c, col, "device= only redirects cudaSetDevice, not %s",
					    rt_events[id].name);
		return 0;
	}
	case RT_INJ_KILL: {
		char *end;

		r->arg = strtol(v, &end, 10);
		if (*end || r->arg < 1 || r->arg > 64)
			return fail(c, col + klen + 1, "kill= is a signal number (9, 15, 11...)");
		return 0;
	}
	case RT_INJ_CORRUPT:
		for (unsigned id = 0; id < RT_ID_COUNT; id++)
			if (rt_inj_rule_matches(r, id) && (rt_events[id].role != RT_R_COLL ||
			    (rt_field_at[id][RT_FN_recvbuff] < 0 && rt_field_at[id][RT_FN_buff] < 0)))
				return fail(c, col, "corrupt flips bits in a collective's output: %s has none",
					    rt_events[id].name);
		return 0;
	default:
		return 0;
	}
}

/* comm= narrows calls on a communicator: every function the rule matches
 * must take one (a collective, a point-to-point call, a communicator's
 * query or end), and a failure point has none. */
static int check_comm_target(struct ctx *c, size_t col, const struct rt_inj_rule *r)
{
	if (r->point)
		return fail(c, col, "comm= is for calls on a communicator, not failure points");
	for (unsigned id = 0; id < RT_ID_COUNT; id++)
		if (rt_inj_rule_matches(r, id) && !rt_id_on_comm(id))
			return fail(c, col, "comm= is for calls on a communicator; %s has none",
				    rt_events[id].name);
	return 0;
}

static int parse_spec(struct ctx *c, char *spec, struct rt_inj_plan *plan)
{
	struct rt_inj_rule *r;
	char *fields[8];
	size_t cols[8];
	int n = 0;

	if (plan->nrules >= RT_INJ_MAX_RULES)
		return fail(c, 0, "more than %d rules", RT_INJ_MAX_RULES);
	for (char *p = spec, *start = spec;; p++) {
		if (*p == ':' || *p == '\0') {
			if (n == 8)
				return fail(c, (size_t)(start - spec), "too many ':' fields");
			cols[n] = (size_t)(start - spec);
			fields[n++] = start;
			if (!*p)
				break;
			*p = '\0';
			start = p + 1;
		}
	}
	r = &plan->rules[plan->nrules];
	memset(r, 0, sizeof(*r));
	r->prob = 1.0;
	r->when_from = 1;
	r->when_step = 1;
	if (n < 2)
		return fail(c, 0, "a spec is TARGET:ACTION[:when=..][:rank=..][:prob=..][:seed=..] or a preset");
	if (parse_target(c, fields[0], r))
		return -1;
	if (parse_action(c, cols[1], fields[1], r))
		return -1;
	unsigned seen = 0;

	for (int i = 2; i < n; i++) {
		static const char *const keys[] = { "when", "rank", "prob", "seed", "comm" };
		char *k = fields[i], *v = strchr(k, '=');

		if (!v || v == k)
			return fail(c, cols[i], "expected KEY=VALUE (when=, rank=, prob=, seed=, comm=)");
		*v++ = '\0';
		for (unsigned q = 0; q < 5; q++)
			if (!strcmp(k, keys[q])) {
				if (seen & (1u << q))
					return fail(c, cols[i], "%s= given twice", k);
				seen |= 1u << q;
			}
		if (!strcmp(k, "when")) {
			if (parse_when(c, cols[i] + 5, v, r))
				return -1;
		} else if (!strcmp(k, "rank")) {
			if (parse_ranks(c, cols[i] + 5, v, r))
				return -1;
		} else if (!strcmp(k, "prob")) {
			char *end;

			r->prob = strtod(v, &end);
			if (*end || end == v || !(r->prob >= 0 && r->prob <= 1)) /* nan too */
				return fail(c, cols[i] + 5, "prob= is a probability between 0 and 1");
		} else if (!strcmp(k, "seed")) {
			const char *e;

			if (!parse_u64(v, &e, &r->seed) || *e)
				return fail(c, cols[i] + 5, "seed= is a non-negative integer");
		} else if (!strcmp(k, "comm")) {
			char msg[160];
			size_t at = 0;

			if (rt_inj_parse_comm(v, r, &at, msg, sizeof(msg)) != 0)
				return fail(c, cols[i] + 5 + at, "%s", msg);
			if (check_comm_target(c, cols[i], r))
				return -1;
		} else {
			return fail(c, cols[i], "unknown key '%s' (when, rank, prob, seed, comm)", k);
		}
	}
	plan->nrules++;
	return 0;
}

/* A preset, or NULL: its expansion is written into out. */
static int expand_preset(struct ctx *c, const char *spec, char *out, size_t n)
{
	for (size_t i = 0; i < rt_inj_npresets; i++) {
		size_t len = strlen(rt_inj_presets[i].name);
		const char *v = spec + len;

		if (strncmp(spec, rt_inj_presets[i].name, len) || (*v && *v != '='))
			continue;
		if (!strstr(rt_inj_presets[i].expansion, "%s")) {
			if (*v)
				return fail(c, len, "preset %s takes no value", rt_inj_presets[i].name);
			snprintf(out, n, "%s", rt_inj_presets[i].expansion);
			return 1;
		}
		if (*v != '=' || !v[1])
			return fail(c, len, "preset %s needs a value: %s=%s (%s)", rt_inj_presets[i].name,
				    rt_inj_presets[i].name, rt_inj_presets[i].params, rt_inj_presets[i].doc);
		v++;
		if (strchr(v, ':'))
			return fail(c, (size_t)(strchr(v, ':') - spec), "a preset's value ends at ':' "
				    "(write the spec out to add keys: see `ranktrace inject --list`)");
		if (!strcmp(rt_inj_presets[i].name, "rank-dies")) {
			char rank[32], seq[32];
			const char *at = strchr(v, '@');

			if (!at || at == v || !at[1] || (size_t)(at - v) >= sizeof(rank) || strlen(at + 1) >= sizeof(seq))
				return fail(c, len + 1, "rank-dies=R@SEQ, e.g. rank-dies=2@5");
			snprintf(rank, sizeof(rank), "%.*s", (int)(at - v), v);
			snprintf(seq, sizeof(seq), "%s", at + 1);
			snprintf(out, n, rt_inj_presets[i].expansion, rank, seq);
		} else {
			snprintf(out, n, rt_inj_presets[i].expansion, v);
		}
		return 1;
	}
	return 0;
}

int rt_inj_parse(const char *text, struct rt_inj_plan *plan, char *err, size_t errlen)
{
	struct ctx c = { .plan = text, .err = err, .errlen = errlen };
	size_t len = strlen(text);
	char *copy = strdup(text), *spec;

	memset(plan, 0, sizeof(*plan));
	if (!copy) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	spec = copy;
	for (size_t i = 0; i <= len; i++) {
		char expanded[256], written[sizeof(plan->rules[0].spec)];
		int pre;

		if (copy[i] != ';' && copy[i] != '\0')
			continue;
		copy[i] = '\0';
		while (*spec == ' ')
			spec++;
		c.spec_off = (size_t)(spec - copy);
		if (!*spec) {
			if (i == len && plan->nrules) /* trailing ';' */
				break;
			free(copy);
			rt_inj_plan_free(plan);
			return fail(&c, 0, "empty spec");
		}
		snprintf(written, sizeof(written), "%s", spec); /* parse_spec cuts spec up */
		pre = expand_preset(&c, spec, expanded, sizeof(expanded));
		c.in_preset = pre > 0;
		if (pre < 0 || parse_spec(&c, pre ? expanded : spec, plan) != 0) {
			free(copy);
			rt_inj_plan_free(plan);
			return -1;
		}
		memcpy(plan->rules[plan->nrules - 1].spec, written, sizeof(written));
		spec = copy + i + 1;
	}
	free(copy);
	return 0;
}

void rt_inj_plan_free(struct rt_inj_plan *plan)
{
	for (int i = 0; i < RT_INJ_MAX_RULES; i++) {
		free(plan->rules[i].ranks);
		plan->rules[i].ranks = NULL;
	}
	plan->nrules = 0;
}

bool rt_inj_when(const struct rt_inj_rule *r, uint64_t n)
{
	if (n < r->when_from || (r->when_to && n > r->when_to))
		return false;
	return (n - r->when_from) % r->when_step == 0;
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

bool rt_inj_applies(const struct rt_inj_rule *r, int rank, uint64_t n, int rule_index)
{
	if (r->ranks && (rank < 0 || rank >= RT_INJ_MAX_RANKS || !(r->ranks[rank / 8] >> (rank % 8) & 1)))
		return false;
	if (r->prob >= 1.0)
		return true;
	uint64_t h = mix(r->seed ^ mix((uint64_t)rank * 1000003u ^ n ^ ((uint64_t)rule_index << 48)));

	return (double)(h >> 11) / 9007199254740992.0 < r->prob;
}

