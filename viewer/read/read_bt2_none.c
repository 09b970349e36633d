/* SPDX-License-Identifier: MIT */
/* read_bt2_none.c - read_bt2.h in a build without libbabeltrace2: LTTng
 * traces are recognised and refused with the reason. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "read_bt2.h"

bool rt_vw_is_lttng(const char *dir)
{
	char path[4200];
	struct stat st;

	snprintf(path, sizeof(path), "%s/ust", dir);
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

struct rt_vw_bt2 *rt_vw_bt2_load(const char *dir, char *err, size_t errlen)
{
	snprintf(err, errlen, "%s: an LTTng trace, and this ranktrace was built without "
		 "libbabeltrace2 (apt-get install libbabeltrace2-dev, then rebuild)", dir);
	return NULL;
}

void rt_vw_bt2_free(struct rt_vw_bt2 *b)
{
	free(b);
}
