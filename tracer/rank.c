/* SPDX-License-Identifier: MIT */
/* rank.c - rank identity from the launcher's environment, the rank directory.
 *
 * Called under writer.c's process lock at a process's first event, and from
 * the ncclCommInitRank wrapper's after-hook (rank learned from NCCL when the
 * environment had none). Not on the hot path. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rank.h"

struct rt_tr_config rt_tr_config;
struct rt_tr_rank_info rt_tr_rank = { -1, -1, -1, "pid", "" };

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

static void rank_dir_path(char *out, size_t n)
{
	if (rt_tr_rank.rank >= 0)
		snprintf(out, n, "%s/rank-%05d", rt_tr_config.dir, rt_tr_rank.rank);
	else
		snprintf(out, n, "%s/rank-p%d", rt_tr_config.dir, (int)getpid());
}

static uint64_t fnv(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

int rt_tr_rank_dir_create(uint8_t uuid[16])
{
	uint64_t a, b;
	const char *leaf;
	struct stat st;

	/* a forked child writes into its parent's rank directory */
	if (!rt_tr_rank.dir[0])
		rank_dir_path(rt_tr_rank.dir, sizeof(rt_tr_rank.dir));
	if (mkdir(rt_tr_config.dir, 0700) != 0 && errno != EEXIST)
		return -errno;
	if (mkdir(rt_tr_rank.dir, 0700) != 0 && errno != EEXIST)
		return -errno;
	/* an existing rank directory must be a real one of ours: a planted
	 * symlink (rank-00000 -> elsewhere) is refused, never followed */
	if (lstat(rt_tr_rank.dir, &st) != 0)
		return -errno;
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid())
		return -ENOTDIR;
	leaf = strrchr(rt_tr_rank.dir, '/');
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
