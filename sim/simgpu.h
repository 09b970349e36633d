/* SPDX-License-Identifier: MIT */
/* simgpu.h - private interface between the simulated libcudart and libnccl.
 *
 * The simulated NCCL must not call the public CUDA runtime for its own needs:
 * real NCCL links cudart statically, so its internal calls are invisible to an
 * LD_PRELOAD tracer, and ours must be too. These entry points are exported by
 * sim/libcudart.so.13 under a name no tracer interposes. */
#ifndef SIMGPU_H
#define SIMGPU_H

#include <stddef.h>
#include <stdint.h>

/* Device of the calling thread (cudaGetDevice without the API call). */
int simgpu_current_device(void);

/* Number of simulated devices (SIMGPU_DEVICES). */
int simgpu_device_count(void);

/* Which device memory holds [ptr, ptr+len): the device index, or -1 when the
 * range is not inside one live device (or managed) allocation. */
int simgpu_range_device(const void *ptr, size_t len);

/* Seconds a collective or init waits for missing ranks (SIMGPU_TIMEOUT). */
double simgpu_timeout_s(void);

#endif
