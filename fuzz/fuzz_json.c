/* SPDX-License-Identifier: MIT */
/* fuzz_json.c - libFuzzer target: the JSON writer (util/json.h) driven by
 * arbitrary bytes read as calls (open, close, keys, values, layout) with
 * arbitrary strings. A model of the document beside it predicts whether a
 * call is a misuse: a document the model calls well-formed must finish 0
 * and read back as strict JSON (tests/unit/json_valid.h: valid UTF-8, no
 * raw control bytes); one it calls misused must finish -EINVAL. Either way
 * the writer must never crash or overrun. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "json_valid.h"

struct in {
	const uint8_t *p;
	size_t n;
};

static uint8_t byte(struct in *in)
{
	uint8_t b = 0;

	if (in->n) {
		b = *in->p++;
		in->n--;
	}
	return b;
}

/* A string from the input: a length byte, then that many bytes (NULs cut it). */
static void take_str(struct in *in, char *out, size_t cap)
{
	size_t len = byte(in) % 48, k = 0;

	while (len-- && in->n && k + 1 < cap)
		out[k++] = (char)byte(in);
	out[k] = '\0';
}

/* The document as the model sees it. */
struct model {
	char kind[64]; /* '{' or '[' per open level */
	bool any[64];
	int depth;
	bool done, brk, bad;
};

/* The model's view of before(): what the writer calls a misuse. */
static void m_before(struct model *m, bool key)
{
	if (!m->depth) {
		m->bad |= m->done || key;
		return;
	}
	m->bad |= (m->kind[m->depth - 1] == '{') != key;
	m->brk = false;
	m->any[m->depth - 1] = true;
}

static void m_scalar(struct model *m, bool key)
{
	m_before(m, key);
	if (!m->depth)
		m->done = true;
}

static void one_call(struct rt_json *w, struct model *m, struct in *in)
{
	uint8_t op = byte(in);
	bool haskey = op & 0x80;
	char key[64], s[64];
	const char *k = NULL;

	if (haskey) {
		take_str(in, key, sizeof(key));
		k = key;
	}
	switch (op % 10) {
	case 0:
	case 1:
		m_before(m, haskey);
		if (m->depth == RT_JSON_DEPTH) {
			m->bad = true;
		} else {
			m->kind[m->depth] = op % 10 ? '[' : '{';
			m->any[m->depth++] = false;
		}
		op % 10 ? rt_json_arr(w, k) : rt_json_obj(w, k);
		break;
	case 2:
		if (!m->depth || m->brk)
			m->bad = true;
		else if (!--m->depth)
			m->done = true;
		rt_json_end(w);
		break;
	case 3:
		take_str(in, s, sizeof(s));
		m_scalar(m, haskey);
		(op & 0x40) ? rt_json_nstr(w, k, s) : rt_json_str(w, k, s);
		break;
	case 4: {
		int64_t v = (int64_t)((uint64_t)byte(in) << 56 | (uint64_t)byte(in) << 8 | byte(in));

		m_scalar(m, haskey);
		(op & 0x40) ? rt_json_uint(w, k, (uint64_t)v) : rt_json_int(w, k, v);
		break;
	}
	case 5: {
		double v;
		uint8_t b[8];

		for (int i = 0; i < 8; i++)
			b[i] = byte(in);
		memcpy(&v, b, sizeof(v)); /* NaN, infinities, subnormals */
		m_scalar(m, haskey);
		rt_json_fixed(w, k, v, byte(in) % 20);
		break;
	}
	case 6:
		m_scalar(m, haskey);
		(op & 0x40) ? rt_json_null(w, k) : rt_json_bool(w, k, op & 0x20);
		break;
	case 7: {
		int indent = byte(in) % 80;

		if (!m->depth || m->any[m->depth - 1] || indent > 64)
			m->bad = true;
		rt_json_lines(w, indent, op & 0x40);
		break;
	}
	case 8: {
		int indent = byte(in) % 80;

		if (!m->depth || m->brk || indent > 64)
			m->bad = true;
		else {
			m->brk = true;
			m->any[m->depth - 1] = true;
		}
		rt_json_brk(w, indent);
		break;
	}
	case 9:
		take_str(in, s, sizeof(s));
		m_scalar(m, haskey);
		rt_json_strf(w, k, "%s #%u", s, (unsigned)op);
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in in = { data, size };
	struct model m = { 0 };
	struct rt_json w;
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	int rc;

	if (!f)
		return 0;
	rt_json_init(&w, f, byte(&in) & 1);
	for (int calls = 0; in.n && calls < 400; calls++)
		one_call(&w, &m, &in);
	if (m.depth || !m.done || m.brk)
		m.bad = true;
	rc = rt_json_finish(&w);
	fclose(f);
	if (m.bad ? rc != -EINVAL : rc != 0)
		abort(); /* the writer and the model disagree on misuse */
	if (!m.bad && !json_valid(out, len))
		abort(); /* a well-formed document must read back as JSON */
	free(out);
	return 0;
}
