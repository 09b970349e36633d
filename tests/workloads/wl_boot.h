/* SPDX-License-Identifier: MIT */
/* wl_boot.h - the test workloads' bootstrap (wl_boot.c): rank 0 serves NCCL
 * unique ids to the other ranks over TCP, as torch's TCPStore would. */
#ifndef WL_BOOT_H
#define WL_BOOT_H

#include <nccl.h>

/* RANK, WORLD_SIZE and LOCAL_RANK as torchrun (rt-launch) sets them. */
int wl_env_int(const char *name, int dflt);

/* Rank 0 sends its n ids (made with ncclGetUniqueId) to every other rank,
 * which reads them into ids (MASTER_ADDR, MASTER_PORT; waits at most 60 s).
 * 0, or -1 after a message on stderr prefixed with who. */
int wl_share_ids(ncclUniqueId *ids, int n, int rank, int world, const char *who);

#endif
