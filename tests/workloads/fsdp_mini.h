/* SPDX-License-Identifier: MIT */
/* fsdp_mini.h - shared by fsdp_mini.c, fsdp_boot.c and fsdp_watchdog.c. */
#ifndef FSDP_MINI_H
#define FSDP_MINI_H

#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stdint.h>

extern int rank, world;

/* Write the call counts and exit (fsdp_mini.c). */
__attribute__((noreturn)) void die(int code);

/* Rank 0 serves the ncclUniqueId to the others (fsdp_boot.c). */
void share_unique_id(ncclUniqueId *id);

/* PyTorch's NCCL watchdog (fsdp_watchdog.c): every collective is followed by
 * an event on its stream; a thread polls the events and, when one has not
 * completed FSDP_MINI_NCCL_TIMEOUT_S seconds (default 600, as PyTorch's
 * 10 minutes) after it was enqueued, says so as PyTorch does, aborts the
 * communicator and takes the process down with SIGABRT. */
void watchdog_start(ncclComm_t comm);
void watchdog_enqueued(const char *optype, uint64_t numel_in, uint64_t numel_out,
		       cudaStream_t stream);
void watchdog_stop(void);

#endif
