/* SPDX-License-Identifier: MIT */
/* ranktrace.h - what a program (or the PyTorch probe) can tell ranktrace, and
 * the failure points it can ask about.
 *
 * Every function is a weak reference: a program built with this header runs
 * normally without libranktrace.so (the calls become no-ops and every failure
 * point says "pass"), so trainers can ship the points permanently. Under
 * `ranktrace run` the preloaded library provides them. Use the rt_*_or_pass
 * helpers below rather than calling the weak symbols directly. */
#ifndef RANKTRACE_H
#define RANKTRACE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifdef RANKTRACE_IMPLEMENTATION /* libranktrace.so defines them */
#define RT_WEAK
#else
#define RT_WEAK __attribute__((weak))
#endif

/* rt_fault_point(): proceed, skip the guarded step, or (error=N) a program-
 * defined error N (N >= 2). */
#define RT_FAULT_PASS 0
#define RT_FAULT_BYPASS 1

/* Where a parameter's storage lives, for rt_param(). */
#define RT_DEV_CUDA 0
#define RT_DEV_CPU 1
#define RT_DEV_META 2

/* rt_param_dtensor()'s placement of a mesh dimension other than a shard
 * (a shard: the tensor dimension it splits, 0 or more). */
#define RT_PLACE_REPLICATE (-1)
#define RT_PLACE_PARTIAL (-2)
#define RT_PLACE_OTHER (-3)

/* A named failure point, e.g. "fsdp.root_forward": what the fault plan says
 * to do here. Records the fault when one fires. */
int rt_fault_point(const char *name) RT_WEAK;

/* Report a parameter: name, device type and index, dtype (a program-defined
 * code), element count, bytes of storage actually allocated (0 when freed,
 * e.g. by FSDP sharding) and its data pointer. */
void rt_param(const char *name, int devtype, int device, int dtype, uint64_t numel,
	      uint64_t storage_bytes, const void *data) RT_WEAK;

/* The shape of the tensor the next rt_param() of the same name reports (call
 * it just before): ndim sizes in dims. The first RT_PARAM_MAX_DIMS are kept. */
#define RT_PARAM_MAX_DIMS 6
void rt_param_shape(const char *name, int ndim, const int64_t *dims) RT_WEAK;

/* The layout of a DTensor parameter (FSDP2's fully_shard, tensor parallel)
 * the next rt_param() of the same name reports (call it just before, after
 * rt_param_shape(), which gives the global shape; rt_param() then gives the
 * local shard's device, storage and pointer): its device mesh (mesh_ndim
 * sizes in mesh, the first 3 kept), per mesh dimension its placement
 * (placements: the tensor dimension it shards, or RT_PLACE_*), and the local
 * shard's shape (ndim sizes in dims, the first RT_PARAM_MAX_DIMS kept). */
void rt_param_dtensor(const char *name, int mesh_ndim, const int64_t *mesh, const int *placements,
		      int ndim, const int64_t *dims) RT_WEAK;

/* An exception left a call reported with rt_unwrapped_call() (whatever the
 * program does with it next): the module, the exception's type, its message
 * (the first 126 bytes are kept). */
void rt_exception(const char *module, const char *type, const char *message) RT_WEAK;

/* The program's optimizer took step `step` (1-based; report the 1st, 2nd,
 * 4th, ...): the parameters it updated, how many of them are sharded (FSDP,
 * DTensor) and synchronised (DDP), and the reductions (all-reduce, reduce,
 * reduce-scatter) the program asked its collectives library for so far. The
 * evidence of a model trained on several ranks that nobody prepared. */
void rt_optim_step(uint64_t step, uint64_t params, uint64_t sharded, uint64_t synced,
		   uint64_t reductions) RT_WEAK;

/* The FSDP root module's forward begins (phase 0) or ends (phase 1). */
void rt_fsdp_forward(int phase, int units) RT_WEAK;

/* A named marker with a value (a step, an epoch). */
void rt_marker(const char *name, int64_t value) RT_WEAK;

/* A module the FSDP root wraps (or one below it) was called while no root
 * forward ran: its name, the caller ("file.py:LINE function"), and the calls
 * of that module from that caller so far. The evidence `skipped-fsdp-root`
 * rests on; report it once per (module, caller), or again with a count. */
void rt_unwrapped_call(const char *module, const char *caller, uint64_t calls) RT_WEAK;

#ifndef RANKTRACE_IMPLEMENTATION
static inline void rt_param_dtensor_if_traced(const char *name, int mesh_ndim, const int64_t *mesh,
					      const int *placements, int ndim, const int64_t *dims)
{
	if (rt_param_dtensor)
		rt_param_dtensor(name, mesh_ndim, mesh, placements, ndim, dims);
}

static inline void rt_exception_if_traced(const char *module, const char *type, const char *message)
{
	if (rt_exception)
		rt_exception(module, type, message);
}

static inline void rt_optim_step_if_traced(uint64_t step, uint64_t params, uint64_t sharded,
					   uint64_t synced, uint64_t reductions)
{
	if (rt_optim_step)
		rt_optim_step(step, params, sharded, synced, reductions);
}

static inline int rt_fault_point_or_pass(const char *name)
{
	return rt_fault_point ? rt_fault_point(name) : RT_FAULT_PASS;
}

static inline void rt_param_if_traced(const char *name, int devtype, int device, int dtype,
				      uint64_t numel, uint64_t bytes, const void *data)
{
	if (rt_param)
		rt_param(name, devtype, device, dtype, numel, bytes, data);
}

static inline void rt_param_shape_if_traced(const char *name, int ndim, const int64_t *dims)
{
	if (rt_param_shape)
		rt_param_shape(name, ndim, dims);
}

static inline void rt_fsdp_forward_if_traced(int phase, int units)
{
	if (rt_fsdp_forward)
		rt_fsdp_forward(phase, units);
}

static inline void rt_marker_if_traced(const char *name, int64_t value)
{
	if (rt_marker)
		rt_marker(name, value);
}

static inline void rt_unwrapped_call_if_traced(const char *module, const char *caller,
					       uint64_t calls)
{
	if (rt_unwrapped_call)
		rt_unwrapped_call(module, caller, calls);
}
#endif

#ifdef __cplusplus
}
#endif
#endif
