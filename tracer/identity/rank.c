/* SPDX-License-Identifier: MIT */
/* rank.c - rank identity from the launcher's environment, the rank directory.
 *
 * Called under the store's process lock at a process's first event
 * (core/life.c), and from the ncclCommInitRank wrapper's after-hook (rank
 * learned from NCCL when the environment had none). Not on the hot path.
 *
 * A rank directory belongs to one run: its .ranktrace-run file holds the
 * run's id (RANKTRACE_RUN_ID, set by `ranktrace run`), created whole by the
 * rank's first process (written under a private name, then linked into
 * place: link() fails when it exists). A process of another run refuses the
 * directory and continues untraced rather than mix its events into another
 * job's trace (two jobs started into one DIR). The dot keeps babeltrace2 from
 * reading the file as a stream.
 *
 * An elastic launcher's restarts (torchrun --max-restarts: every worker of
 * attempt N has TORCHELASTIC_RESTART_COUNT=N) are attempts of one run: attempt
 * 0 writes DIR/rank-NNNNN as ever, attempt N > 0 DIR/attempt-N/rank-NNNNN, a
 * trace directory of its own (its uuid names the attempt too), so a restarted
 * rank never adds its streams to the failed attempt's. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "identity.h"
#include "inject.h" /* rt_inj_host_rank: answered here */
#include "schema.h" /* RT_PROBE_NONE */

struct rt_tr_config rt_tr_config;
struct rt_tr_rank_info rt_tr_rank = { -1, -1, -1, "pid", "", 0, RT_PROBE_NONE, "" };
static int env_rank = -1; /* the launcher's, parsed at start-up */

static int num(const char *s)
{
	char *end;
	long v;

	if (!s || !*s)
		return -1;
	v = strtol(s, &end, 10);
	return (*end || v < 0 || v > 1 << 24) ? -1 : (int)v;
}

void rt_tr_rank_parse(const char *(*get)(const char *), struct rt_tr_rank_info *r)
{
	/* launcher: rank, local rank, world size; first match wins (torchrun
	 * inside srun sets both RANK and SLURM_PROCID: RANK is the worker's). */
	static const struct {
		const char *rank, *local, *world, *source;
	} launchers[] = {
		{ "RANK", "LOCAL_RANK", "WORLD_SIZE", "env:RANK" },
		{ "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE",
		  "env:OMPI_COMM_WORLD_RANK" },
		{ "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS", "env:SLURM_PROCID" },
		{ "PMIX_RANK", "MPI_LOCALRANKID", "PMIX_SIZE", "env:PMIX_RANK" },
		{ "PMI_RANK", "MPI_LOCALRANKID", "PMI_SIZE", "env:PMI_RANK" },
	};

	r->rank = r->local_rank = r->world_size = -1;
	r->source = "pid";
	r->attempt = num(get("TORCHELASTIC_RESTART_COUNT"));
	if (r->attempt < 0)
		r->attempt = 0;
	for (size_t i = 0; i < sizeof(launchers) / sizeof(launchers[0]); i++) {
		int rank = num(get(launchers[i].rank));

		if (rank < 0)
			continue;
		r->rank = rank;
		r->local_rank = num(get(launchers[i].local));
		r->world_size = num(get(launchers[i].world));
		r->source = launchers[i].source;
		return;
	}
}

static const char *env_get(const char *name)
{
	return getenv(name);
}

void rt_tr_rank_init(void)
{
	rt_tr_rank_parse(env_get, &rt_tr_rank);
}

void rt_tr_rank_env_init(void)
{
	struct rt_tr_rank_info r;

	rt_tr_rank_parse(env_get, &r);
	env_rank = r.rank;
}

/* The injector's rank: from NCCL once known, else from the launcher's
 * environment. */
int rt_inj_host_rank(void)
{
	return rt_tr_rank.rank >= 0 ? rt_tr_rank.rank : env_rank;
}

/* DIR, or DIR/attempt-N for a restarted attempt: where the rank directories go. */
static void attempt_dir_path(char *out, size_t n)
{
	if (rt_tr_rank.attempt > 0)
		snprintf(out, n, "%s/attempt-%d", rt_tr_config.dir, rt_tr_rank.attempt);
	else
		snprintf(out, n, "%s", rt_tr_config.dir);
}

static void rank_dir_path(char *out, size_t n)
{
	char base[4200];

	attempt_dir_path(base, sizeof(base));
	if (rt_tr_rank.rank >= 0)
		snprintf(out, n, "%s/rank-%05d", base, rt_tr_rank.rank);
	else
		snprintf(out, n, "%s/rank-p%d", base, (int)getpid());
}

/* mkdir path, or find it there: a real directory of ours, never a planted
 * symlink (rank-00000 -> elsewhere), which is refused, never followed. */
static int own_dir(const char *path)
{
	struct stat st;

	if (mkdir(path, 0700) != 0 && errno != EEXIST)
		return -errno;
	if (lstat(path, &st) != 0)
		return -errno;
	return S_ISDIR(st.st_mode) && st.st_uid == geteuid() ? 0 : -ENOTDIR;
}

static uint64_t fnv(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

/* dir/.ranktrace-run created with our run id, or found holding it: 0;
 * -EEXIST when another run's; -errno when it cannot be written. Without a
 * run id (the library preloaded by hand) there is nothing to check. */
static int claim_rank_dir(const char *dir)
{
	char path[4200], tmp[4200], have[64];
	int fd, rc = 0;
	ssize_t k;

	if (!rt_tr_config.run_id[0])
		return 0;
	snprintf(path, sizeof(path), "%s/.ranktrace-run", dir);
	snprintf(tmp, sizeof(tmp), "%s/.ranktrace-run.%d", dir, (int)getpid());
	unlink(tmp); /* a stale one of a dead process with our pid */
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	k = write(fd, rt_tr_config.run_id, strlen(rt_tr_config.run_id));
	if (k != (ssize_t)strlen(rt_tr_config.run_id))
		rc = k < 0 ? -errno : -EIO;
	close(fd);
	if (!rc && link(tmp, path) != 0)
		rc = -errno;
	unlink(tmp);
	if (rc != -EEXIST)
		return rc;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	k = fd >= 0 ? read(fd, have, sizeof(have) - 1) : -1;
	if (fd >= 0)
		close(fd);
	have[k > 0 ? k : 0] = '\0';
	/* another run's: the caller warns once ("cannot write the trace in DIR
	 * (File exists)") and the process goes on untraced */
	return strcmp(have, rt_tr_config.run_id) ? -EEXIST : 0;
}

int rt_tr_rank_dir_create(uint8_t uuid[16])
{
	char base[4200];
	uint64_t a, b;
	const char *leaf;
	int err;

	/* a forked child writes into its parent's rank directory */
	if (!rt_tr_rank.dir[0])
		rank_dir_path(rt_tr_rank.dir, sizeof(rt_tr_rank.dir));
	if (mkdir(rt_tr_config.dir, 0700) != 0 && errno != EEXIST)
		return -errno;
	attempt_dir_path(base, sizeof(base));
	if (rt_tr_rank.attempt > 0 && (err = own_dir(base)) != 0)
		return err;
	if ((err = own_dir(rt_tr_rank.dir)) != 0)
		return err;
	err = claim_rank_dir(rt_tr_rank.dir);
	if (err)
		return err;
	/* "/rank-00001", "/attempt-1/rank-00001": babeltrace2 merges traces of one uuid */
	leaf = rt_tr_rank.dir + strlen(rt_tr_config.dir);
	a = fnv(fnv(0xcbf29ce484222325ull, rt_tr_config.run_id), leaf);
	b = fnv(fnv(0x84222325cbf29ce4ull, leaf), rt_tr_config.run_id);
	memcpy(uuid, &a, 8);
	memcpy(uuid + 8, &b, 8);
	uuid[6] = (uint8_t)((uuid[6] & 0x0f) | 0x50); /* name-based uuid */
	uuid[8] = (uint8_t)((uuid[8] & 0x3f) | 0x80);
	return 0;
}

bool rt_tr_rank_learn(int rank, int nranks)
{
	char old[sizeof(rt_tr_rank.dir)];

	if (rt_tr_rank.rank >= 0 || rank < 0 || !rt_tr_rank.dir[0])
		return false;
	memcpy(old, rt_tr_rank.dir, sizeof(old));
	rt_tr_rank.rank = rank;
	rt_tr_rank.world_size = nranks;
	rt_tr_rank.source = "nccl";
	rank_dir_path(rt_tr_rank.dir, sizeof(rt_tr_rank.dir));
	/* keep the pid-named directory if that rank's name is taken */
	if (rename(old, rt_tr_rank.dir) != 0) {
		memcpy(rt_tr_rank.dir, old, sizeof(old));
		return false;
	}
	return true;
}
