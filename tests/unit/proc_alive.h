/* SPDX-License-Identifier: MIT */
/* proc_alive.h - for unit tests that start processes (test_proc,
 * test_bisect_setup): is pid still running? A zombie is dead. */
#ifndef RT_TEST_PROC_ALIVE_H
#define RT_TEST_PROC_ALIVE_H
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

static inline bool alive(pid_t pid)
{
	char p[64], s[512] = "", *rp;
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
	f = fopen(p, "r");
	if (!f)
		return false;
	if (!fgets(s, sizeof(s), f))
		s[0] = '\0';
	fclose(f);
	rp = strrchr(s, ')');
	return rp && rp[1] == ' ' && rp[2] != 'Z' && rp[2] != 'X';
}
#endif
