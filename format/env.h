/* SPDX-License-Identifier: MIT */
/* env.h - the RANKTRACE_* environment variables (format/env.def), by id.
 *
 * getenv(RT_ENV_NAME(DIR)) instead of a string written by hand: the CLI that
 * sets a variable and the tracer that reads it name the same row. Pure data
 * (format/schema.c); thread-safe, no allocation. */
#ifndef RT_ENV_H
#define RT_ENV_H

enum rt_env {
#define RT_ENV_VAR(n, who, doc) RT_ENV_##n,
#include "env.def"
#undef RT_ENV_VAR
	RT_ENV_COUNT
};

/* "RANKTRACE_DIR"..., who reads it ("run", "tracer", ...), its meaning */
extern const char *const rt_env_names[RT_ENV_COUNT];
extern const char *const rt_env_who[RT_ENV_COUNT];
extern const char *const rt_env_docs[RT_ENV_COUNT];

#define RT_ENV_NAME(n) (rt_env_names[RT_ENV_##n])

#endif
