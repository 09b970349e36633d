/* SPDX-License-Identifier: MIT */
/* fsdp_mini.c - bin/fsdp_mini: FSDP v1 as accelerate + transformers drive it,
 * in C, on the real CUDA runtime and NCCL APIs.
 *
 * The model is an embedding (tied to the output head) plus L residual tanh
 * blocks; each is an FSDP unit with one flat fp32 parameter. The run goes
 * through the same stages as a transformers Trainer with FSDP v1:
 *   from_pretrained with cpu_ram_efficient_loading: rank 0 builds weights in
 *     pinned host memory, the other ranks hold them on "meta" (no storage);
 *   FSDP wrap: per unit, materialise on device LOCAL_RANK, broadcast from
 *     rank 0 (sync_module_states), keep a 1/N shard and free the full storage:
 *     the module's original parameters now point at freed storage;
 *   train step: root forward (lazy init creates the FSDP streams, all-gather
 *     each unit before use), loss (all-reduce), backward (all-gather again,
 *     reduce-scatter gradients), SGD on the shards.
 * Arithmetic is done on the host on data copied back from the device, so the
 * same binary is valid on a real GPU. --trainer-version picks the transformers
 * behaviour: 4.53.0 trains the unwrapped module, as transformers 4.53.0 did.
 * --mesh shares the model as 3-D parallel jobs do (fsdp_mesh.c): HSDP (the
 * shards within a group, the gradients all-reduced across groups), tensor +
 * data parallel (fsdp_tp.c), pipeline parallel (fsdp_pp.c); every mode
 * prints the same losses. --nonblocking-init makes the communicators as
 * TORCH_NCCL_USE_COMM_NONBLOCKING does.
 *
 * Environment: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT (rank 0
 * serves the ncclUniqueId over TCP, as torch's TCPStore would). */
#include <cuda_runtime_api.h>
#include <errno.h>
#include <math.h>
#include <nccl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fsdp_mini.h"
#include "ranktrace.h" /* weak: no-ops without libranktrace.so */

int rank, world = 1;
static int local_rank;

/* ---- the model ---- */

static uint64_t lcg_state;

static double lcg_uniform(void)
{
	lcg_state = lcg_state * 6364136223846793005ull + 1442695040888963407ull;
	return (double)(lcg_state >> 11) / 9007199254740992.0;
}

static void build_units(struct model *m)
{
	int D = m->cfg.hidden, V = m->cfg.vocab;

	m->nunits = 1 + m->cfg.layers;
	m->units = calloc((size_t)m->nunits, sizeof(*m->units));
	if (!m->units)
		die(1);
	m->units[0].params[0] = (struct param){ .numel = (size_t)V * D, .ndim = 2, .shape = { V, D } };
	snprintf(m->units[0].params[0].name, 64, "model.embed_tokens.weight");
	m->units[0].nparams = 1;
	for (int l = 1; l < m->nunits; l++) {
		struct unit *u = &m->units[l];

		u->params[0] = (struct param){ .numel = (size_t)D * D, .ndim = 2, .shape = { D, D } };
		u->params[1] = (struct param){ .offset = (size_t)D * D, .numel = (size_t)D, .ndim = 1,
					       .shape = { D } };
		snprintf(u->params[0].name, 64, "model.layers.%d.mlp.weight", l - 1);
		snprintf(u->params[1].name, 64, "model.layers.%d.mlp.bias", l - 1);
		u->nparams = 2;
	}
	for (int i = 0; i < m->nunits; i++) {
		struct unit *u = &m->units[i];

		for (int p = 0; p < u->nparams; p++)
			u->numel += u->params[p].numel;
		u->shard = (u->numel + (size_t)m->shard_size - 1) / (size_t)m->shard_size;
		u->padded = u->shard * (size_t)m->shard_size;
		u->host_full = calloc(u->padded, sizeof(float));
		u->grad = calloc(u->padded, sizeof(double));
		if (!u->host_full || !u->grad)
			die(1);
	}
}

/* transformers from_pretrained with fsdp_cpu_ram_efficient_loading. */
static void from_pretrained(struct model *m)
{
	int D = m->cfg.hidden;

	lcg_state = 42;
	for (int i = 0; i < m->nunits; i++) {
		struct unit *u = &m->units[i];

		if (rank != 0) {
			u->on_meta = true;
			continue;
		}
		CUDA(cudaMallocHost, (void **)&u->host_init, u->numel * sizeof(float));
		for (size_t k = 0; k < u->numel; k++) {
			double scale = i == 0 ? 1.0 : 1.0 / sqrt((double)D);
			bool bias = i > 0 && k >= (size_t)D * D;

			u->host_init[k] = bias ? 0.0f : (float)((lcg_uniform() * 2 - 1) * scale);
		}
	}
}

/* FSDP(model, sync_module_states=True, param_init_fn=...) per unit. */
static void fsdp_wrap(struct model *m)
{
	for (int i = 0; i < m->nunits; i++) {
		struct unit *u = &m->units[i];

		CUDA(cudaMalloc, (void **)&u->storage, u->padded * sizeof(float));
		u->storage_bytes = u->padded * sizeof(float);
		if (u->on_meta)
			CUDA(cudaMemset, u->storage, 0, u->padded * sizeof(float));
		else
			CUDA(cudaMemcpy, u->storage, u->host_init, u->numel * sizeof(float),
			     cudaMemcpyHostToDevice);
		NCCL(m->comm, ncclBroadcast, u->storage, u->storage, u->numel, ncclFloat32, 0,
		     m->comm, NULL);
		watchdog_enqueued("BROADCAST", u->numel, u->numel, NULL);
		CUDA(cudaMalloc, (void **)&u->shard_dev, u->shard * sizeof(float));
		CUDA(cudaMalloc, (void **)&u->grad_shard_dev, u->shard * sizeof(float));
		CUDA(cudaMemcpy, u->shard_dev, u->storage + (size_t)m->shard_rank * u->shard,
		     u->shard * sizeof(float), cudaMemcpyDeviceToDevice);
		/* FSDP frees the full storage: the module's parameters keep their
		 * shapes but their storage is resized to 0 bytes. */
		CUDA(cudaFree, u->storage);
		u->storage = NULL; /* never report a freed pointer: it may hold another allocation */
		u->storage_bytes = 0;
		u->on_meta = false;
		CUDA_SYNC(cudaEventCreateWithFlags, &u->gathered, cudaEventDisableTiming);
		if (u->host_init) {
			CUDA(cudaFreeHost, u->host_init);
			u->host_init = NULL;
		}
	}
	CUDA(cudaMalloc, (void **)&m->scalar_dev, sizeof(double));
	CUDA_SYNC(cudaEventCreateWithFlags, &m->compute_ready, cudaEventDisableTiming);
	CUDA_SYNC(cudaEventCreateWithFlags, &m->reduced, cudaEventDisableTiming);
}

/* FSDP reshard: free the gathered flat parameter. */
static void reshard(struct unit *u)
{
	if (u->storage)
		CUDA(cudaFree, u->storage);
	u->storage = NULL;
	u->storage_bytes = 0;
}

/* FSDP unshard, first half: the all-gather is enqueued on the unshard stream
 * (a separate NCCL stream, as PyTorch's) and an event recorded after it. The
 * call returns at once; a prefetch is this half alone. */
static void unshard_issue(struct model *m, struct unit *u)
{
	if (u->gathering)
		return; /* prefetched */
	CUDA(cudaMalloc, (void **)&u->gathering, u->padded * sizeof(float));
	NCCL(m->shard_comm, ncclAllGather, u->shard_dev, u->gathering, u->shard, ncclFloat32,
	     m->shard_comm, m->unshard_stream);
	watchdog_enqueued("_ALLGATHER_BASE", u->shard, u->padded, m->unshard_stream);
	CUDA_SYNC(cudaEventRecord, u->gathered, m->unshard_stream);
}

/* Second half: the compute stream (the legacy default stream) waits for the
 * event, then the parameter comes to the host (a synchronous copy). */
static void unshard_wait(struct model *m, struct unit *u)
{
	(void)m;
	CUDA_SYNC(cudaStreamWaitEvent, NULL, u->gathered, 0);
	CUDA(cudaMemcpy, u->host_full, u->gathering, u->padded * sizeof(float),
	     cudaMemcpyDeviceToHost);
	/* the parameters are views of the gathered flat parameter until reshard() */
	if (u->storage)
		CUDA(cudaFree, u->storage);
	u->storage = u->gathering;
	u->gathering = NULL;
}

static void unshard(struct model *m, struct unit *u)
{
	unshard_issue(m, u);
	unshard_wait(m, u);
}

/* A module's own parameter access: what PyTorch checks at the first op. */
static const float *param_data(const struct unit *u, int p)
{
	if (u->storage_bytes == 0 && u->params[p].numel > 0) {
		fprintf(stderr, "fsdp_mini: rank %d: %s has %zu elements and no storage\n", rank,
			u->params[p].name, u->params[p].numel);
		fprintf(stderr, "RuntimeError: The tensor has a non-zero number of elements, but its data is not allocated yet.\n");
		die(1);
	}
	return u->host_full + u->params[p].offset;
}

/* Tell ranktrace where every parameter of the original module lives now. */
static void report_params(const struct model *m, int devtype)
{
	for (int i = 0; i < m->nunits; i++) {
		const struct unit *u = &m->units[i];

		for (int p = 0; p < u->nparams; p++) {
			const struct param *pr = &u->params[p];
			int type = devtype, dev = type == RT_DEV_CUDA ? local_rank : -1;
			const void *data = u->storage ? u->storage + pr->offset : NULL;

			if (devtype < 0) /* after from_pretrained: rank 0 on cpu, the others on meta */
				type = u->on_meta ? RT_DEV_META : RT_DEV_CPU;
			if (type != RT_DEV_CUDA) {
				dev = -1;
				data = u->host_init ? u->host_init + pr->offset : NULL;
			}
			rt_param_shape_if_traced(pr->name, pr->ndim, pr->shape);
			rt_param_if_traced(pr->name, type, dev, 0 /* fp32 */, pr->numel,
					   type == RT_DEV_META ? 0
					   : type == RT_DEV_CPU ? pr->numel * sizeof(float)
					   : u->storage_bytes ? pr->numel * sizeof(float) : 0,
					   data);
		}
	}
}

/* ---- arithmetic on the host (the rest: fsdp_math.c) ---- */

/* Forward through the blocks with the gathered parameters; returns nothing,
 * fills b->h. Called by the root forward after unsharding. */
static void blocks_forward(struct model *m, struct batch *b)
{
	int D = m->cfg.hidden, N = b->n * b->T;
	const float *E = param_data(&m->units[0], 0);

	for (int i = 0; i < N; i++)
		for (int d = 0; d < D; d++)
			b->h[(size_t)i * D + d] = E[(size_t)b->tok[i] * D + d];
	for (int l = 1; l < m->nunits; l++) {
		struct unit *u = &m->units[l];
		double *hin = b->h + (size_t)(l - 1) * N * D, *hout = b->h + (size_t)l * N * D;

		unshard(m, u);
		const float *W = param_data(u, 0), *bias = param_data(u, 1);

		for (int i = 0; i < N; i++)
			for (int o = 0; o < D; o++) {
				double z = bias[o];

				for (int k = 0; k < D; k++)
					z += (double)W[(size_t)o * D + k] * hin[(size_t)i * D + k];
				hout[(size_t)i * D + o] = hin[(size_t)i * D + o] + tanh(z);
			}
	}
}

/* FSDP post-backward hook: reduce-scatter the unit's gradient. */
static void reduce_gradient(struct model *m, struct unit *u)
{
	float *full_grad, *tmp = malloc(u->padded * sizeof(float));

	if (!tmp)
		die(1);
	for (size_t k = 0; k < u->padded; k++)
		tmp[k] = (float)u->grad[k];
	CUDA(cudaMalloc, (void **)&full_grad, u->padded * sizeof(float));
	CUDA(cudaMemcpy, full_grad, tmp, u->padded * sizeof(float), cudaMemcpyHostToDevice);
	/* post_backward_stream.wait_stream(current_stream) */
	CUDA_SYNC(cudaEventRecord, m->compute_ready, NULL);
	CUDA_SYNC(cudaStreamWaitEvent, m->post_backward_stream, m->compute_ready, 0);
	NCCL(m->shard_comm, ncclReduceScatter, full_grad, u->grad_shard_dev, u->shard, ncclFloat32,
	     ncclSum, m->shard_comm, m->post_backward_stream);
	watchdog_enqueued("_REDUCE_SCATTER_BASE", u->padded, u->shard, m->post_backward_stream);
	if (m->repl_comm) /* HYBRID_SHARD: then across the replicas */
		mesh_replicate_grad(m, u->grad_shard_dev, u->shard, m->post_backward_stream);
	CUDA(cudaFree, full_grad);
	free(tmp);
	memset(u->grad, 0, u->padded * sizeof(double));
}

static void sgd_step(struct model *m)
{
	for (int i = 0; i < m->nunits; i++) {
		struct unit *u = &m->units[i];
		float *w = malloc(u->shard * sizeof(float)), *g = malloc(u->shard * sizeof(float));

		if (!w || !g)
			die(1);
		CUDA(cudaMemcpy, w, u->shard_dev, u->shard * sizeof(float), cudaMemcpyDeviceToHost);
		CUDA(cudaMemcpy, g, u->grad_shard_dev, u->shard * sizeof(float),
		     cudaMemcpyDeviceToHost);
		for (size_t k = 0; k < u->shard; k++)
			w[k] -= (float)(m->cfg.lr * g[k]);
		CUDA(cudaMemcpy, u->shard_dev, w, u->shard * sizeof(float), cudaMemcpyHostToDevice);
		free(w);
		free(g);
	}
}

/* Global mean loss: all-reduce of this rank's sum. */
static double global_loss(struct model *m, struct batch *b)
{
	double v = b->loss_sum;

	CUDA(cudaMemcpy, m->scalar_dev, &v, sizeof(v), cudaMemcpyHostToDevice);
	NCCL(m->comm, ncclAllReduce, m->scalar_dev, m->scalar_dev, 1, ncclFloat64, ncclSum,
	     m->comm, NULL);
	watchdog_enqueued("ALLREDUCE", 1, 1, NULL);
	CUDA(cudaMemcpy, &v, m->scalar_dev, sizeof(v), cudaMemcpyDeviceToHost);
	return v / (double)b->predictions;
}

/* FullyShardedDataParallel.forward of the root: lazy init on the first call,
 * then unshard the root unit; the inner units unshard themselves. While the
 * root runs, the module's parameters are views of the gathered data. */
static void fsdp_root_forward(struct model *m, struct batch *b)
{
	if (!m->lazy_init_done) {
		int least, greatest;

		CUDA(cudaDeviceGetStreamPriorityRange, &least, &greatest);
		CUDA(cudaStreamCreateWithPriority, &m->unshard_stream, cudaStreamNonBlocking, greatest);
		CUDA(cudaStreamCreateWithFlags, &m->post_backward_stream, cudaStreamNonBlocking);
		m->lazy_init_done = true;
	}
	m->root_forwards++;
	rt_fsdp_forward_if_traced(0, m->nunits);
	unshard(m, &m->units[0]);
	for (int i = 0; i < m->nunits; i++)
		m->units[i].storage_bytes = m->units[i].padded * sizeof(float);
	/* report point (viewer/model/model.h): the first forward, then root forwards */
	rt_marker_if_traced("rt.params", m->root_forwards == 1 ? 2 : 3);
	report_params(m, RT_DEV_CUDA);
	blocks_forward(m, b);
	rt_fsdp_forward_if_traced(1, m->nunits);
}

/* The unwrapped module's forward: its parameters' storage was freed by FSDP. */
static void module_forward(struct model *m, struct batch *b)
{
	rt_marker_if_traced("rt.params", 2); /* report point: first forward */
	report_params(m, RT_DEV_CUDA); /* first forward of the top-level module */
	blocks_forward(m, b);
}

static void train_step(struct model *m, bool wrapped, int step, struct batch *b)
{
	int D = m->cfg.hidden, N = b->n * b->T;
	double *dh = malloc(sizeof(double) * (size_t)N * D), loss;

	if (!dh)
		die(1);
	make_batch(m, step, b);
	rt_marker_if_traced("step", step);
	/* The failure point: with `bypass` the trainer calls the unwrapped module,
	 * exactly what transformers 4.53.0 did, on any version. */
	if (wrapped && rt_fault_point_or_pass("fsdp.root_forward") != RT_FAULT_BYPASS)
		fsdp_root_forward(m, b);
	else
		module_forward(m, b);
	head_loss_backward(m, b, dh);
	loss = global_loss(m, b);
	for (int l = m->nunits - 1; l >= 1; l--) {
		/* FULL_SHARD re-gathers in backward; BACKWARD_PRE (FSDP's default)
		 * enqueues the next unit's all-gather before this unit computes */
		unshard_issue(m, &m->units[l]);
		if (l > 1)
			unshard_issue(m, &m->units[l - 1]);
		unshard_wait(m, &m->units[l]);
		block_backward(m, b, l, dh);
		reduce_gradient(m, &m->units[l]);
	}
	/* the embedding's input-side gradient */
	for (int i = 0; i < N; i++)
		for (int d = 0; d < D; d++)
			m->units[0].grad[(size_t)b->tok[i] * D + d] += dh[(size_t)i * D + d];
	reduce_gradient(m, &m->units[0]);
	for (int i = 0; i < m->nunits; i++)
		reshard(&m->units[i]);
	/* FSDP's _wait_for_post_backward: current_stream.wait_stream(post_backward) */
	CUDA_SYNC(cudaEventRecord, m->reduced, m->post_backward_stream);
	CUDA_SYNC(cudaStreamWaitEvent, NULL, m->reduced, 0);
	sgd_step(m);
	if (rank == 0)
		printf("step %d loss %.4f\n", step, loss);
	fflush(stdout);
	free(dh);
}

/* Environment, device, the mesh and the watchdog: 0, or an exit status. */
static int setup(struct model *m)
{
	ncclUniqueId id;
	const char *s;

	if ((s = getenv("RANK")))
		rank = atoi(s);
	if ((s = getenv("WORLD_SIZE")))
		world = atoi(s);
	local_rank = (s = getenv("LOCAL_RANK")) ? atoi(s) : rank;
	if (world < 1 || rank < 0 || rank >= world) {
		fprintf(stderr, "fsdp_mini: bad RANK=%d / WORLD_SIZE=%d\n", rank, world);
		return 2;
	}
	if (m->cfg.batch % world) {
		fprintf(stderr, "fsdp_mini: --batch %d is not divisible by WORLD_SIZE %d\n",
			m->cfg.batch, world);
		return 2;
	}
	calls_configure(&m->cfg);
	/* accelerate: torch.cuda.set_device(LOCAL_RANK) */
	CUDA(cudaSetDevice, m->cfg.device >= 0 ? m->cfg.device : local_rank);
	if (rank == 0)
		NCCL(NULL, ncclGetUniqueId, &id);
	if (world > 1)
		share_unique_ids(&id, 1);
	mesh_init(m, &id);
	watchdog_start(m->comm);
	return 0;
}

/* The model as the mode holds it, and the batch's buffers. */
static void prepare(struct model *m, struct batch *b)
{
	build_units(m);
	from_pretrained(m);
	rt_marker_if_traced("rt.params", 1); /* report point: handed to FSDP */
	report_params(m, -1);
	if (m->cfg.mesh == MESH_TP || m->cfg.mesh == MESH_PP)
		replicate_wrap(m); /* every rank holds the whole model on its device */
	else
		fsdp_wrap(m); /* sharded: the full storage freed */
	report_params(m, RT_DEV_CUDA);
	b->n = m->cfg.batch / m->dp_size;
	b->T = m->cfg.seq;
	b->tok = calloc((size_t)b->n * m->cfg.seq, sizeof(int));
	b->h = calloc((size_t)(m->nunits) * b->n * m->cfg.seq * m->cfg.hidden, sizeof(double));
	if (!b->tok || !b->h)
		die(1);
}

static double elapsed_ms(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) * 1e3 + (double)(b->tv_nsec - a->tv_nsec) / 1e6;
}

static void train(struct model *m, struct batch *b)
{
	bool wrapped = trainer_uses_wrapped(m->cfg.version);
	struct timespec t0, t1, c0, c1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
	for (int step = 1; step <= m->cfg.steps; step++)
		if (m->cfg.mesh == MESH_TP)
			tp_train_step(m, step, b);
		else if (m->cfg.mesh == MESH_PP)
			pp_train_step(m, step, b);
		else
			train_step(m, wrapped, step, b);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
	if (m->cfg.time && rank == 0 && m->cfg.steps > 0)
		fprintf(stderr, "fsdp_mini: ms_per_step=%.3f cpu_ms_per_step=%.3f\n",
			elapsed_ms(&t0, &t1) / m->cfg.steps, elapsed_ms(&c0, &c1) / m->cfg.steps);
}

static void teardown(struct model *m)
{
	for (int i = 0; i < m->nunits; i++) {
		if (m->units[i].shard_dev)
			CUDA(cudaFree, m->units[i].shard_dev);
		if (m->units[i].grad_shard_dev)
			CUDA(cudaFree, m->units[i].grad_shard_dev);
		if (m->units[i].storage)
			CUDA(cudaFree, m->units[i].storage);
	}
	CUDA(cudaFree, m->scalar_dev);
	if (m->lazy_init_done) {
		CUDA(cudaStreamDestroy, m->unshard_stream);
		CUDA(cudaStreamDestroy, m->post_backward_stream);
	}
	watchdog_stop();
	mesh_destroy(m);
}

int main(int argc, char **argv)
{
	struct model m = { 0 };
	struct batch b;
	int rc;

	if (!parse_args(argc, argv, &m.cfg))
		return 2;
	rc = setup(&m);
	if (rc)
		return rc;
	prepare(&m, &b);
	train(&m, &b);
	teardown(&m);
	die(0);
}
