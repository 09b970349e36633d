/* SPDX-License-Identifier: MIT */
/* test_rank.c - rank identity and attempt from each launcher's environment
 * (table-driven). */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <string.h>

#include "identity.h"

/* Strings inline: Criterion runs each parameter in a fresh process, where
 * pointers into the parent's data would be meaningless. */
struct env_case {
	char env[4][48]; /* NAME=VALUE */
	int rank, local_rank, world;
	char source[32];
};

static const struct env_case *current;

static const char *get(const char *name)
{
	size_t n = strlen(name);

	for (int i = 0; i < 4 && current->env[i][0]; i++)
		if (!strncmp(current->env[i], name, n) && current->env[i][n] == '=')
			return current->env[i] + n + 1;
	return NULL;
}

ParameterizedTestParameters(rank, from_launcher_environment)
{
	static struct env_case cases[] = {
		{ { "RANK=3", "LOCAL_RANK=1", "WORLD_SIZE=8" }, 3, 1, 8, "env:RANK" },
		{ { "SLURM_PROCID=12", "SLURM_LOCALID=4", "SLURM_NTASKS=16" }, 12, 4, 16, "env:SLURM_PROCID" },
		{ { "OMPI_COMM_WORLD_RANK=5", "OMPI_COMM_WORLD_LOCAL_RANK=1", "OMPI_COMM_WORLD_SIZE=6" }, 5, 1, 6, "env:OMPI_COMM_WORLD_RANK" },
		{ { "PMI_RANK=2", "PMI_SIZE=4", "MPI_LOCALRANKID=0" }, 2, 0, 4, "env:PMI_RANK" },
		{ { "PMIX_RANK=7", "PMIX_SIZE=8" }, 7, -1, 8, "env:PMIX_RANK" },
		/* torchrun inside srun: the worker's RANK, not the task's */
		{ { "SLURM_PROCID=0", "RANK=6", "LOCAL_RANK=6", "WORLD_SIZE=8" }, 6, 6, 8, "env:RANK" },
		/* garbage is not a rank */
		{ { "RANK=abc", "SLURM_PROCID=1" }, 1, -1, -1, "env:SLURM_PROCID" },
		{ { "RANK=-4" }, -1, -1, -1, "pid" },
		{ { "" }, -1, -1, -1, "pid" },
	};
	return cr_make_param_array(struct env_case, cases, sizeof(cases) / sizeof(cases[0]));
}

ParameterizedTest(struct env_case *c, rank, from_launcher_environment)
{
	struct rt_tr_rank_info r;

	current = c;
	rt_tr_rank_parse(get, &r);
	cr_assert_eq(r.rank, c->rank);
	cr_assert_eq(r.local_rank, c->local_rank);
	cr_assert_eq(r.world_size, c->world);
	cr_assert_str_eq(r.source, c->source);
}

/* An elastic launcher's restart count is the attempt (0 without one, or garbage). */
ParameterizedTestParameters(rank, attempt_from_the_restart_count)
{
	static struct env_case cases[] = {
		{ { "RANK=1", "TORCHELASTIC_RESTART_COUNT=2" }, 2, 0, 0, "" },
		{ { "RANK=1", "TORCHELASTIC_RESTART_COUNT=0" }, 0, 0, 0, "" },
		{ { "RANK=1" }, 0, 0, 0, "" },
		{ { "TORCHELASTIC_RESTART_COUNT=x" }, 0, 0, 0, "" },
		{ { "TORCHELASTIC_RESTART_COUNT=-1" }, 0, 0, 0, "" },
	};
	return cr_make_param_array(struct env_case, cases, sizeof(cases) / sizeof(cases[0]));
}

ParameterizedTest(struct env_case *c, rank, attempt_from_the_restart_count)
{
	struct rt_tr_rank_info r;

	current = c;
	rt_tr_rank_parse(get, &r);
	cr_assert_eq(r.attempt, c->rank, "%s: attempt %d", c->env[1], r.attempt);
}
