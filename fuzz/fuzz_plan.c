/* SPDX-License-Identifier: MIT */
/* fuzz_plan.c - libFuzzer target: arbitrary text as a fault plan, and the
 * same bytes as a plan file (--inject-file). The parser must accept or
 * refuse with a message quoting the plan, never crash; the file reader must
 * join its lines or refuse it with one message. Every message is fit for a
 * terminal whatever the plan holds (escaped: fuzz_safe.h). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_safe.h"
#include "plan.h"

static void plan_file(const uint8_t *data, size_t size)
{
	static char path[64];
	char err[4200], *plan = NULL;
	struct rt_inj_plan p;
	FILE *f;

	if (!path[0])
		snprintf(path, sizeof(path), "%s/rt-fuzz-plan-%d",
			 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
	f = fopen(path, "wb");
	if (!f)
		abort();
	fwrite(data, 1, size, f);
	fclose(f);
	if (rt_inj_read_plan_file(path, &plan, err, sizeof(err)) != 0) {
		if (!strstr(err, path) || strchr(err, '\n'))
			abort(); /* one line naming the file */
		fuzz_assert_safe(err, strlen(err), false);
		return;
	}
	if (!plan[0] || strchr(plan, '\n') || strchr(plan, '#'))
		abort(); /* specs joined, comments and newlines gone */
	if (rt_inj_parse(plan, &p, err, sizeof(err)) == 0)
		rt_inj_plan_free(&p);
	free(plan);
}

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
	} else {
		fuzz_assert_safe(err, strlen(err), true);
	}
	free(text);
	plan_file(data, size);
	return 0;
}
