/* SPDX-License-Identifier: MIT */
/* version.c - `ranktrace --version`: what this build is and what it was built against.
 *
 * The CUDA and NCCL versions are those of the headers the wrappers were
 * compiled with (the library resolves NVIDIA's functions at run time, so the
 * runtime found then may differ; `ranktrace run` records what it finds). The
 * git revision is written at build time by cmake/version.cmake. */
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stdio.h>

#include "rt_git_revision.h"
#include "version.h"

int rt_cli_version(FILE *f)
{
	fprintf(f, "ranktrace %s (git %s)\n", RT_VERSION, RT_GIT_REVISION);
	fprintf(f, "built against CUDA runtime headers %d.%d, NCCL headers %d.%d.%d%s\n",
		CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10, NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH,
		NCCL_SUFFIX);
	return 0;
}
