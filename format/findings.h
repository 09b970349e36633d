/* SPDX-License-Identifier: MIT */
/* findings.h - the findings vocabulary (format/findings.def) as C: verdicts
 * with their words and exit codes, the kinds of finding with their id,
 * verdict, severity, level, title, advice and sentence template, and the
 * names of the values findings carry.
 *
 * Pure data (findings.c): the viewer's analyses make findings of these
 * kinds, its renderers say them, `verdict` and `bisect` parse and list the
 * verdict words from here, rt-gen-tables writes the docs' tables. No
 * allocation, thread-safe. */
#ifndef RT_FINDINGS_H
#define RT_FINDINGS_H

#include <stdbool.h>

enum rt_verdict {
#define RT_VERDICT(E, word, exit, bisect, meaning) RT_V_##E,
#include "findings.def"
#undef RT_VERDICT
	RT_V_COUNT
};

struct rt_verdict_info {
	const char *word;    /* "skipped-fsdp-root" */
	int exit;            /* `verdict`'s exit status: 0, 1 or 125 */
	bool bisect;         /* a failure `verdict --bad` and `bisect --signature` hunt */
	const char *meaning;
};
extern const struct rt_verdict_info rt_verdicts[RT_V_COUNT];
/* The verdict a word names, or -1. */
int rt_verdict_parse(const char *word);
/* The words of the verdicts bisect accepts, joined: "a, b, c or d" (sep
 * ", ", last " or "), into out (n bytes); snprintf's result. */
int rt_verdict_bisect_list(char *out, unsigned long n);

/* How a finding reads: error (the run failed because of it), warning (a
 * reader should know), note (context; view hides notes unless --all). */
enum rt_level { RT_LEVEL_ERROR, RT_LEVEL_WARNING, RT_LEVEL_NOTE, RT_LEVEL_COUNT };
extern const char *const rt_level_names[RT_LEVEL_COUNT];

enum rt_finding_kind {
#define RT_FINDING(E, id, by, verdict, severity, level, title, advice, text) RT_FK_##E,
#include "findings.def"
#undef RT_FINDING
	RT_FK_COUNT
};

struct rt_finding_info {
	const char *id;          /* "exit-status" */
	enum rt_verdict verdict; /* the verdict it decides (healthy: none) */
	int severity;            /* lower is more important */
	enum rt_level level;
	const char *title;       /* what it looks for */
	const char *advice;      /* what to do next, or NULL */
	const char *text;        /* its sentence's template, or NULL: a renderer of its own */
};
extern const struct rt_finding_info rt_findings[RT_FK_COUNT];
/* The kind an id names, or -1. */
int rt_finding_parse(const char *id);

/* The named values a finding carries (RT_FVALUE rows) and their types. */
enum rt_fvalue {
#define RT_FVALUE(name, type, meaning) RT_FV_##name,
#include "findings.def"
#undef RT_FVALUE
	RT_FV_COUNT
};
enum rt_fvalue_type { RT_FT_INT, RT_FT_REAL0, RT_FT_REAL1, RT_FT_REAL3, RT_FT_TEXT, RT_FT_CALL,
		      RT_FT_SIGNAL, RT_FT_FLAG, RT_FT_END, RT_FT_TRACE };
struct rt_fvalue_info {
	const char *name;
	enum rt_fvalue_type type;
	const char *meaning;
};
extern const struct rt_fvalue_info rt_fvalues[RT_FV_COUNT];
/* The value a name in a template names, len bytes of it, or -1. */
int rt_fvalue_parse(const char *name, unsigned long len);

#endif
