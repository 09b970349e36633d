/* SPDX-License-Identifier: MIT */
/* fuzz_plan.c - libFuzzer target: arbitrary text as a fault plan. The parser
 * must accept or refuse with a message quoting the plan, never crash. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1), err[2048];
	struct rt_inj_plan plan;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (rt_inj_parse(text, &plan, err, sizeof(err)) == 0) {
		for (int i = 0; i < plan.nrules; i++)
			for (uint64_t n = 1; n < 4; n++)
				if (rt_inj_when(&plan.rules[i], n))
					(void)rt_inj_applies(&plan.rules[i], (int)n, n, i);
		rt_inj_plan_free(&plan);
	} else if (!strstr(err, "bad fault plan") && !strstr(err, "out of memory")) {
		abort();
	}
	free(text);
	return 0;
}
