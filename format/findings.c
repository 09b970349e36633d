/* SPDX-License-Identifier: MIT */
/* findings.c - format/findings.def as data: the verdicts, the finding kinds
 * and the names of their values, and the lookups by word. Pure data and
 * pure functions: no allocation, thread-safe. */
#include <stdio.h>
#include <string.h>

#include "findings.h"

const struct rt_verdict_info rt_verdicts[RT_V_COUNT] = {
#define RT_VERDICT(E, word, exit, bisect, meaning) [RT_V_##E] = { word, exit, bisect, meaning },
#include "findings.def"
#undef RT_VERDICT
};

const char *const rt_level_names[RT_LEVEL_COUNT] = { "error", "warning", "note" };

const struct rt_finding_info rt_findings[RT_FK_COUNT] = {
#define RT_FINDING(E, id, by, verdict, severity, level, title, advice, text) \
	[RT_FK_##E] = { id, RT_V_##verdict, severity, RT_LEVEL_##level, title, advice, text },
#include "findings.def"
#undef RT_FINDING
};

const struct rt_fvalue_info rt_fvalues[RT_FV_COUNT] = {
#define RT_FVALUE(name, type, meaning) [RT_FV_##name] = { #name, RT_FT_##type, meaning },
#include "findings.def"
#undef RT_FVALUE
};

int rt_verdict_parse(const char *word)
{
	for (int v = 0; v < RT_V_COUNT; v++)
		if (!strcmp(word, rt_verdicts[v].word))
			return v;
	return -1;
}

int rt_verdict_bisect_list(char *out, unsigned long n)
{
	int total = 0, k = 0, last = -1;

	for (int v = 0; v < RT_V_COUNT; v++)
		if (rt_verdicts[v].bisect)
			last = v;
	if (n)
		out[0] = '\0';
	for (int v = 0; v < RT_V_COUNT; v++) {
		size_t at = (size_t)total < n ? (size_t)total : n;
		int w;

		if (!rt_verdicts[v].bisect)
			continue;
		w = snprintf(out + at, n - at, "%s%s", !k ? "" : v == last ? " or " : ", ",
			     rt_verdicts[v].word);
		total += w > 0 ? w : 0;
		k++;
	}
	return total;
}

int rt_finding_parse(const char *id)
{
	for (int k = 0; k < RT_FK_COUNT; k++)
		if (!strcmp(id, rt_findings[k].id))
			return k;
	return -1;
}

int rt_fvalue_parse(const char *name, unsigned long len)
{
	for (int k = 0; k < RT_FV_COUNT; k++)
		if (strlen(rt_fvalues[k].name) == len && !strncmp(name, rt_fvalues[k].name, len))
			return k;
	return -1;
}
