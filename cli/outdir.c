/* SPDX-License-Identifier: MIT */
/* outdir.c - the trace directory of `ranktrace run -o DIR`, made safe to
 * write into and claimed by one run before anything runs.
 *
 * Called once by cmd_run.c. DIR's missing parents are created (mkdir -p);
 * DIR must be a directory (a file is refused); without --append it must hold
 * no rank-* entry; with --append every rank-* entry must be a real directory
 * of ours: a planted symlink (rank-00000 -> /etc) is refused, never followed
 * (the tracer refuses it too, if it is planted later).
 *
 * The claim: DIR/ranktrace-run holds the id of the run that owns DIR. It is
 * written under a private name and linked into place, so exactly one run
 * creates it, whole, however many start at once (two `run -o SAME` used to
 * both pass the rank-* check while their launchers were starting and merge).
 * A run that finds it refuses DIR, unless it joins: --append joins whatever
 * run owns DIR (one `run` per node), Slurm's implied append joins only its
 * own job step's. The tracer checks the same id per rank directory
 * (tracer/identity/rank.c). Creating the file is also the proof that DIR is writable:
 * an existing DIR this user cannot write is refused, not traced into. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "rt_util.h"
#include "read_bt2.h" /* RT_VW_LTTNG_RUN_FILE: the owner file, every backend */

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

/* The id in DIR/ranktrace-run (at most 39 characters), or "". */
static void read_owner(const char *path, char id[40])
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	ssize_t k = fd >= 0 ? read(fd, id, 39) : -1;

	id[k > 0 ? k : 0] = '\0';
	id[strcspn(id, "\n")] = '\0';
	if (fd >= 0)
		close(fd);
}

/* Create DIR/ranktrace-run holding id, whole or not at all: 0, -EEXIST
 * (another run's, its id in have), or -errno (DIR not writable). */
static int claim(const char *dir, const char *id, char have[40])
{
	char path[PATH_MAX + 32], tmp[PATH_MAX + 48];
	int fd, rc = 0;

	snprintf(path, sizeof(path), "%s/" RT_VW_LTTNG_RUN_FILE, dir);
	snprintf(tmp, sizeof(tmp), "%s/.ranktrace-run.%d", dir, (int)getpid());
	unlink(tmp); /* a stale one of a dead process with our pid */
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (dprintf(fd, "%s\n", id) < 0)
		rc = -EIO;
	if (close(fd) != 0 && !rc)
		rc = -errno;
	if (!rc && link(tmp, path) != 0)
		rc = -errno;
	unlink(tmp);
	if (rc == -EEXIST)
		read_owner(path, have);
	return rc;
}

int rt_cli_prepare_dir(const char *dir, enum rt_cli_join join, char *run_id, char *abs, char *err,
		       size_t errlen)
{
	char have[40] = "";
	struct stat st;
	int rc;

	if (stat(dir, &st) == 0 && !S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "-o %s: not a directory", dir);
		return -ENOTDIR;
	}
	rc = rt_mkdir_p(dir, 0755, 0700);
	if (rc) {
		snprintf(err, errlen, "cannot create %s: %s", dir, strerror(-rc));
		return rc;
	}
	if (check_entries(dir, join != RT_JOIN_NONE, err, errlen) != 0)
		return -EEXIST;
	if (!realpath(dir, abs)) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		return rc;
	}
	rc = claim(abs, run_id, have);
	if (rc == -EEXIST && (join == RT_JOIN_ANY || (join == RT_JOIN_SAME && !strcmp(have, run_id)))) {
		snprintf(run_id, 40, "%s", have); /* one run on several nodes: its id */
		return 0;
	}
	if (rc == -EEXIST)
		snprintf(err, errlen, "%s belongs to another run (%s %s)%s: choose another -o%s", dir,
			 RT_VW_LTTNG_RUN_FILE, have[0] ? have : "being written",
			 join == RT_JOIN_SAME ? ", not to this Slurm job step's" : "",
			 join == RT_JOIN_NONE ? ", or --append to add to it (one run per node)" :
			 ", or --append to add to it");
	else if (rc)
		snprintf(err, errlen, "cannot write in %s: %s", dir, strerror(-rc));
	return rc;
}
