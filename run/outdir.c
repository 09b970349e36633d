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
 * A run that finds it refuses DIR, unless it joins: --append joins the run
 * that owns DIR only while it is live (one `run` per node, started
 * together), Slurm's implied append joins only its own job step's. The
 * tracer checks the same id per rank directory (tracer/identity/rank.c).
 * Creating the file is also the proof that DIR is writable: an existing
 * DIR this user cannot write is refused, not traced into.
 *
 * Live: every `run` of a run (the one that made DIR, each that joined)
 * holds DIR/.ranktrace-live/HOST.PID with an OFD write lock for as long as
 * it lives; the kernel drops the lock however the process ends (SIGKILL
 * too), and rt_run_leave_dir removes the file at the end. A run is live
 * while one such lock is held, or, on a filesystem without locks, while one
 * such file is there. --append onto a finished run (a second job into the
 * same rank directories, which merged two jobs' streams) is refused: a job
 * started again is a new -o; restarts inside one run (torchrun
 * --max-restarts) are its attempts (DIR/attempt-N). The live file is made
 * before the claim, so a run that owns DIR is seen live from its first
 * instant.
 *
 * Length: the rank directories and stream files below DIR must fit a path,
 * RANKTRACE_DIR's rule (format/env.def): rt_run_check_dir_length, before DIR
 * is made and again for its real path, refuses a DIR that would leave each
 * rank to find that out and run untraced. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "run.h"
#include "env.h"
#include "escape.h"
#include "reader.h"   /* rt_vw_stream_locked: the lock test of live rank streams */
#include "rt_util.h"
#include "read_bt2.h" /* RT_VW_LTTNG_RUN_FILE: the owner file, every backend */

#define LIVE_DIR ".ranktrace-live"

static int live_fd = -1;              /* this run's live file, locked */
static char live_path[PATH_MAX + 320];

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

/* DIR/.ranktrace-live/HOST.PID, made and write-locked for this process's
 * life (a filesystem without locks: the file alone). 0 or -errno. */
static int live_enter(const char *dir)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	char sub[PATH_MAX + 32], host[256] = "host";
	int fd = -1;

	snprintf(sub, sizeof(sub), "%s/" LIVE_DIR, dir);
	gethostname(host, sizeof(host) - 1);
	host[strcspn(host, "/")] = '\0';
	snprintf(live_path, sizeof(live_path), "%s/%s.%d", sub, host, (int)getpid());
	for (int k = 0; k < 3 && fd < 0; k++) { /* another run's leave may rmdir it between */
		if (mkdir(sub, 0755) != 0 && errno != EEXIST)
			return -errno;
		fd = open(live_path, O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	}
	if (fd < 0)
		return -errno;
	if (fcntl(fd, F_OFD_SETLK, &fl) != 0 && errno != EINVAL && errno != ENOLCK &&
	    errno != EOPNOTSUPP) {
		int e = errno;

		close(fd);
		unlink(live_path);
		return -e;
	}
	dprintf(fd, "%s %d\n", host, (int)getpid());
	live_fd = fd;
	return 0;
}

void rt_run_leave_dir(void)
{
	char sub[PATH_MAX + 320];

	if (live_fd < 0)
		return;
	unlink(live_path);
	close(live_fd);
	live_fd = -1;
	snprintf(sub, sizeof(sub), "%s", live_path);
	*strrchr(sub, '/') = '\0';
	rmdir(sub); /* the last one out; another's file keeps it (ENOTEMPTY) */
}

/* Is another `run` of the run that owns DIR live? (Its live file locked,
 * or there at all where locks cannot be tested.) */
static bool others_live(const char *dir)
{
	char sub[PATH_MAX + 32], path[PATH_MAX + 320];
	const char *mine = strrchr(live_path, '/') + 1;
	struct dirent *de;
	bool live = false;
	DIR *d;

	snprintf(sub, sizeof(sub), "%s/" LIVE_DIR, dir);
	d = opendir(sub);
	while (d && !live && (de = readdir(d))) {
		if (de->d_name[0] == '.' || !strcmp(de->d_name, mine))
			continue;
		snprintf(path, sizeof(path), "%s/%s", sub, de->d_name);
		int r = rt_vw_stream_locked(path); /* 1 locked; -errno: cannot tell */

		live = r == 1 || (r < 0 && r != -ENOENT); /* ENOENT: it just left */
	}
	if (d)
		closedir(d);
	return live;
}

int rt_run_prepare_dir(const char *dir, enum rt_run_join join, char *run_id, char *abs, char *err,
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
	rc = live_enter(abs);
	if (rc) {
		snprintf(err, errlen, "cannot write in %s: %s", dir, strerror(-rc));
		return rc;
	}
	rc = claim(abs, run_id, have);
	if (rc == -EEXIST && ((join == RT_JOIN_ANY && others_live(abs)) ||
			      (join == RT_JOIN_SAME && !strcmp(have, run_id)))) {
		snprintf(run_id, 40, "%s", have); /* one run on several nodes: its id */
		return 0;
	}
	if (rc)
		rt_run_leave_dir();
	if (rc == -EEXIST && join == RT_JOIN_ANY)
		snprintf(err, errlen, "%s holds a finished run (%s %s; no `ranktrace run` of it is "
			 "running): --append joins a run only while it runs (one `ranktrace run "
			 "--append` per node, started together); a job started again needs another -o "
			 "(restarts inside one run, as torchrun --max-restarts makes, are its attempts)",
			 dir, RT_VW_LTTNG_RUN_FILE, have[0] ? have : "being written");
	else if (rc == -EEXIST)
		snprintf(err, errlen, "%s belongs to another run (%s %s)%s: choose another -o%s", dir,
			 RT_VW_LTTNG_RUN_FILE, have[0] ? have : "being written",
			 join == RT_JOIN_SAME ? ", not to this Slurm job step's" : "",
			 join == RT_JOIN_NONE ? ", or --append to join it while it runs (one run per "
			 "node)" : ", or --append to join it while it runs");
	else if (rc)
		snprintf(err, errlen, "cannot write in %s: %s", dir, strerror(-rc));
	return rc;
}

int rt_run_check_dir_length(const char *dir, char *err, size_t errlen)
{
	struct rt_env_val v;
	char why[160], head[80], path[2 * PATH_MAX], cwd[PATH_MAX];

	if (dir[0] == '/' || !getcwd(cwd, sizeof(cwd)))
		snprintf(path, sizeof(path), "%s", dir);
	else
		snprintf(path, sizeof(path), "%s/%s", cwd, dir);
	if (rt_env_check(RT_ENV_DIR, path, &v, why, sizeof(why)) == 0)
		return 0;
	rt_esc_text_mem(head, 61, path, strlen(path));
	snprintf(err, errlen, "-o %s...: %zu bytes as an absolute path, too long for the rank "
		 "directories and stream files below it (%s, for %s)", head, strlen(path), why,
		 RT_ENV_NAME(DIR));
	return -ENAMETOOLONG;
}
