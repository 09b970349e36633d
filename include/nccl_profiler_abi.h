/* SPDX-License-Identifier: MIT */
/* nccl_profiler_abi.h - NCCL's profiler plugin ABI, versions 5 (NCCL 2.28)
 * and 4 (2.26-2.27), as far as ranktrace uses it.
 *
 * NCCL ships no installed header for its profiler plugins (they live in
 * NVIDIA/nccl's ext-profiler/); the layouts here follow that ABI field for
 * field, since NCCL hands the plugin pointers to them. Used by ranktrace's
 * plugin (tracer/device/nccl_profiler.c) and by the simulated NCCL that loads
 * plugins as NCCL does (sim/nccl_profiler.c). Only the event types and
 * states ranktrace reads are named; the unions keep every member that comes
 * before them, so offsets match. */
#ifndef RT_NCCL_PROFILER_ABI_H
#define RT_NCCL_PROFILER_ABI_H

#include <nccl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* NCCL's logger (ncclDebugLogLevel is an int-sized enum) */
typedef void (*rt_nccl_logger_t)(int level, unsigned long flags, const char *file, int line,
				 const char *fmt, ...);

/* event types (activation mask bits) */
enum {
	RT_NCCL_PROFILE_GROUP = 1 << 0,
	RT_NCCL_PROFILE_COLL = 1 << 1,
	RT_NCCL_PROFILE_P2P = 1 << 2,
	RT_NCCL_PROFILE_KERNEL_CH = 1 << 6,
};

/* event states (ncclProfilerEventState_t; one enum for v1-v5) */
enum { RT_NCCL_KERNEL_CH_STOP = 22 };

struct rt_nccl_coll_v5 {
	uint64_t seqNumber;
	const char *func;
	const void *sendBuff;
	void *recvBuff;
	size_t count;
	int root;
	const char *datatype;
	uint8_t nChannels;
	uint8_t nWarps;
	const char *algo;
	const char *proto;
	void *parentGroup;
};

struct rt_nccl_descr_v5 {
	uint64_t type;
	void *parentObj;
	int rank;
	union {
		struct { int graphCaptured; int groupDepth; } groupApi;
		struct { const char *func; size_t count; const char *datatype; int root;
			 void *stream; bool graphCaptured; } collApi;
		struct { const char *func; size_t count; const char *datatype; void *stream;
			 bool graphCaptured; } p2pApi;
		struct { void *stream; } kernelLaunch;
		struct rt_nccl_coll_v5 coll;
		struct { const char *func; void *buff; const char *datatype; size_t count; int peer;
			 uint8_t nChannels; void *parentGroup; } p2p;
		struct { pid_t pid; uint8_t channelId; int peer; int nSteps; int chunkSize;
			 int isSend; } proxyOp;
		struct { int step; } proxyStep;
		struct { uint8_t channelId; uint64_t pTimer; } kernelCh;
		struct { int64_t id; void *data; } netPlugin;
	};
};

/* v4: type is one byte and the union starts with coll (no parentGroup) */
struct rt_nccl_descr_v4 {
	uint8_t type;
	void *parentObj;
	int rank;
	union {
		struct { uint64_t seqNumber; const char *func; const void *sendBuff; void *recvBuff;
			 size_t count; int root; const char *datatype; uint8_t nChannels;
			 uint8_t nWarps; const char *algo; const char *proto; } coll;
		struct { const char *func; void *buff; const char *datatype; size_t count; int peer;
			 uint8_t nChannels; } p2p;
		struct { pid_t pid; uint8_t channelId; int peer; int nSteps; int chunkSize;
			 int isSend; } proxyOp;
		struct { int step; } proxyStep;
		struct { uint8_t channelId; uint64_t pTimer; } kernelCh;
		struct { int64_t id; void *data; } netPlugin;
	};
};

/* ncclProfilerEventStateArgs_v4_t and _v5_t: the same union */
union rt_nccl_state_args {
	struct { size_t transSize; } proxyStep;
	struct { int appendedProxyOps; } proxyCtrl;
	struct { void *data; } netPlugin;
	struct { uint64_t pTimer; } kernelCh;
};

typedef struct {
	const char *name;
	ncclResult_t (*init)(void **context, uint64_t commId, int *eActivationMask,
			     const char *commName, int nNodes, int nranks, int rank,
			     rt_nccl_logger_t logfn);
	ncclResult_t (*startEvent)(void *context, void **eHandle, struct rt_nccl_descr_v5 *eDescr);
	ncclResult_t (*stopEvent)(void *eHandle);
	ncclResult_t (*recordEventState)(void *eHandle, int eState, union rt_nccl_state_args *args);
	ncclResult_t (*finalize)(void *context);
} rt_nccl_profiler_v5_t;

typedef struct {
	const char *name;
	ncclResult_t (*init)(void **context, int *eActivationMask, const char *commName,
			     uint64_t commHash, int nNodes, int nranks, int rank,
			     rt_nccl_logger_t logfn);
	ncclResult_t (*startEvent)(void *context, void **eHandle, struct rt_nccl_descr_v4 *eDescr);
	ncclResult_t (*stopEvent)(void *eHandle);
	ncclResult_t (*recordEventState)(void *eHandle, int eState, union rt_nccl_state_args *args);
	ncclResult_t (*finalize)(void *context);
} rt_nccl_profiler_v4_t;

/* The hooks libranktrace.so exports for its plugin (tracer/device/device.c);
 * the plugin finds them with dlsym and refuses to load without them. */
/* The call of kind func ("AllReduce", "Send"...) this thread enqueued and
 * not bound yet, with these buffers and count (a Send's or Recv's: its
 * buffer as send or recv, and its peer; -1 for a collective), else the
 * oldest of that kind: its comm_id and seq (0, 0: none). _v2: with the
 * call's buffers and peer (rt_dev_bind had only the kind). */
typedef void (*rt_dev_bind_fn)(const char *func, const void *send, const void *recv,
			       uint64_t count, int peer, uint64_t *comm_id, uint32_t *seq);
/* Record rt_dev_coll (phase 1 started, 2 completed) from the plugin. */
typedef void (*rt_dev_event_fn)(int phase, uint64_t comm_id, uint32_t seq, uint64_t nccl_comm,
				uint64_t nccl_seq, uint64_t gpu_ns);
/* Record rt_dev_p2p for a Send (send 1) or Recv of peer. */
typedef void (*rt_dev_p2p_event_fn)(int phase, uint64_t comm_id, int peer, uint32_t seq, int send,
				    uint64_t nccl_comm, uint64_t gpu_ns);
/* The plugin was taken by NCCL with this API version. */
typedef void (*rt_dev_loaded_fn)(int version);
/* The plugin could not keep a collective's record (reason: enum
 * rt_drop_reason, format/schema.h: its pool was full): the tracer ties it
 * to its call as rt_dev_bind would and records rt_dev_drop. Optional: a
 * tracer without it leaves the drop unsaid. */
typedef void (*rt_dev_dropped_fn)(int reason, const char *func, uint64_t nccl_comm,
				  uint64_t nccl_seq);

#endif
