/* SPDX-License-Identifier: MIT */
/* version.h - `ranktrace --version` (version.c). */
#ifndef RT_CLI_VERSION_H
#define RT_CLI_VERSION_H

#include <stdio.h>

/* Version, git revision, CUDA/NCCL header versions, on f. Returns 0. */
int rt_cli_version(FILE *f);

#endif
