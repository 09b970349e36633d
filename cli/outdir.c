/* SPDX-License-Identifier: MIT */
/* outdir.c - the trace directory of `ranktrace run -o DIR`, made safe to
 * write into before anything runs.
 *
 * Called once by cmd_run.c. DIR's missing parents are created (mkdir -p);
 * DIR must be a directory (a file is refused); without --append it must hold
 * no rank-* entry; with --append every rank-* entry must be a real directory
 * of ours: a planted symlink (rank-00000 -> /etc) is refused, never followed
 * (the tracer refuses it too, if it is planted later). */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

/* mkdir -p path: 0 or -errno. */
static int mkdir_p(const char *path)
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
		if (mkdir(buf, 0755) != 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0700) != 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* Refuse rank-* entries: any (a fresh run) or all but our own directories
 * (--append). */
static int check_entries(const char *dir, bool append, char *err, size_t errlen)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int rc = 0;

	if (!d) {
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		return -1;
	}
	while (!rc && (de = readdir(d))) {
		char path[PATH_MAX + 300];
		struct stat st;

		if (strncmp(de->d_name, "rank-", 5) != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (lstat(path, &st) != 0)
			continue;
		if (S_ISLNK(st.st_mode) || !S_ISDIR(st.st_mode) || st.st_uid != geteuid()) {
			snprintf(err, errlen, "%s is %s, not a rank directory of yours: refusing to "
				 "trace into it", path, S_ISLNK(st.st_mode) ? "a symbolic link" :
				 S_ISDIR(st.st_mode) ? "another user's directory" : "not a directory");
			rc = -1;
		} else if (!append) {
			snprintf(err, errlen, "%s already holds rank traces: choose another -o, or "
				 "--append to add to them (one run per node)", dir);
			rc = -1;
		}
	}
	closedir(d);
	return rc;
}

int rt_cli_prepare_dir(const char *dir, bool append, char *abs, char *err, size_t errlen)
{
	struct stat st;
	int rc;

	if (stat(dir, &st) == 0 && !S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "-o %s: not a directory", dir);
		return -ENOTDIR;
	}
	rc = mkdir_p(dir);
	if (rc) {
		snprintf(err, errlen, "cannot create %s: %s", dir, strerror(-rc));
		return rc;
	}
	if (check_entries(dir, append, err, errlen) != 0)
		return -EEXIST;
	if (!realpath(dir, abs)) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		return rc;
	}
	return 0;
}
