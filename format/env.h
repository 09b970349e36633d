/* SPDX-License-Identifier: MIT */
/* env.h - the RANKTRACE_* environment variables (format/env.def), by id,
 * and their values checked against the table (format/env.c).
 *
 * getenv(RT_ENV_NAME(DIR)) instead of a string written by hand: the CLI that
 * sets a variable and the tracer that reads it name the same row. Pure data
 * and pure functions: thread-safe, no allocation (the tracer checks its
 * variables in its constructor). */
#ifndef RT_ENV_H
#define RT_ENV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum rt_env {
#define RT_ENV_VAR(n, who, kind, valid, fallback, doc) RT_ENV_##n,
#include "env.def"
#undef RT_ENV_VAR
	RT_ENV_COUNT
};

/* what a value must be (env.def's kinds) */
enum rt_env_kind {
	RT_ENV_WORD, RT_ENV_INT, RT_ENV_SIZE, RT_ENV_ABSPATH, RT_ENV_PATH, RT_ENV_ID, RT_ENV_PLAN,
	RT_ENV_FAILAT, RT_ENV_OUT, RT_ENV_HOSTAT
};

/* "RANKTRACE_DIR"..., who reads it ("run", "tracer", ...), its meaning */
extern const char *const rt_env_names[RT_ENV_COUNT];
extern const char *const rt_env_who[RT_ENV_COUNT];
extern const char *const rt_env_docs[RT_ENV_COUNT];
/* its kind, the valid values ("auto|events", "1-256", a length), the fallback */
extern const enum rt_env_kind rt_env_kinds[RT_ENV_COUNT];
extern const char *const rt_env_valid[RT_ENV_COUNT];
extern const char *const rt_env_fallback[RT_ENV_COUNT];

#define RT_ENV_NAME(n) (rt_env_names[RT_ENV_##n])

/* A value as the code uses it: the text, the word's index (WORD), the
 * number (INT, SIZE; FAILAT: N, with ERRNO in n2). */
struct rt_env_val {
	const char *s;
	int word;
	int64_t n, n2;
};

/* RANKTRACE_TEST_HOST's RANKS=HOST:SHIFT (a rank list such as 2-3 or
 * 0,2; a host name of letters, digits, '.', '_', '-'; a signed duration
 * such as +50ms, -2.5us, 1s). 1 when rank is in RANKS (host and *shift_ns
 * filled), 0 when not (or rank < 0: the syntax alone), -EINVAL when s is
 * not that. */
int rt_env_host_at(const char *s, int rank, char *host, size_t n, int64_t *shift_ns);

/* Check s (NULL or "": unset) against variable id's row. 0: valid, *v its
 * value; 1: unset, *v the fallback; -EINVAL: bad, *v the fallback and why
 * says what was expected ("expected auto, events, plugin or off"). For WORD,
 * INT and SIZE a fallback is a value (v->s, v->word, v->n); for other kinds
 * v->s is NULL on a fallback and the caller keeps its own default. */
int rt_env_check(enum rt_env id, const char *s, struct rt_env_val *v, char *why, size_t n);
/* Is the checked value (or the fallback it fell back to) this word? */
static inline bool rt_env_is(const struct rt_env_val *v, const char *word)
{
	return v->s && !strcmp(v->s, word);
}
/* The same for getenv(the variable's name). */
int rt_env_get(enum rt_env id, struct rt_env_val *v, char *why, size_t n);
/* "RANKTRACE_JOBS=0: expected a whole number from 1 to 256" into out: the
 * value escaped for a terminal (util/escape.h), cut at 80 bytes, quoted
 * when it holds a space ("RANKTRACE_DEVICE_SOURCE='auto '"). */
void rt_env_explain(enum rt_env id, const char *value, const char *why, char *out, size_t n);
/* The first variable at or after id `from` that one of whos reads ("cli
 * viewer": rt_env_who words) and that is set to a value rt_env_check
 * refuses, with rt_env_explain's message in msg; -1 when there is none. */
int rt_env_next_bad(const char *whos, int from, char *msg, size_t n);

#endif
