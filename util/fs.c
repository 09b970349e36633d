/* SPDX-License-Identifier: MIT */
/*
 * fs.c - file-system helpers (rt_util.h): mkdir -p.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

#include "rt_util.h"

int rt_mkdir_p(const char *path, mode_t parent_mode, mode_t leaf_mode)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);

	if (len == 0 || len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, parent_mode) != 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, leaf_mode) != 0 && errno != EEXIST)
		return -errno;
	return 0;
}
