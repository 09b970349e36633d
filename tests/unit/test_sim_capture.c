/* SPDX-License-Identifier: MIT */
/* test_sim_capture.c - the simulated runtime keeps the CUDA state a tracer
 * must leave alone as CUDA documents it, so that "traced and untraced are
 * identical" means something: stream capture (work recorded, not run; the
 * capture modes' rules for potentially unsafe calls, which invalidate the
 * capture; captured events), an event's device, and the pending error
 * (set by a failed call, kept by cudaPeekAtLastError, taken by
 * cudaGetLastError, untouched by cudaErrorNotReady). */
#include <criterion/criterion.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct other {
	cudaEvent_t ev;
	enum cudaStreamCaptureMode mode; /* the other thread's interaction mode */
	cudaError_t query, malloc;
};

/* Another thread queries an event (done long ago) and allocates. */
static void *other_thread(void *arg)
{
	struct other *o = arg;
	enum cudaStreamCaptureMode mode = o->mode;
	void *p = NULL;

	cr_assert_eq(cudaThreadExchangeStreamCaptureMode(&mode), cudaSuccess);
	cr_assert_eq(mode, cudaStreamCaptureModeGlobal, "a thread starts in global mode");
	o->query = cudaEventQuery(o->ev);
	o->malloc = cudaMalloc(&p, 64);
	if (p)
		cudaFree(p);
	cudaGetLastError();
	return NULL;
}

/* Capture in mode cap on this thread while another thread (in mode other)
 * makes unsafe calls; what EndCapture says. */
static cudaError_t capture_beside(enum cudaStreamCaptureMode cap, enum cudaStreamCaptureMode other,
				  struct other *o)
{
	cudaStream_t s;
	cudaGraph_t g = NULL;
	pthread_t th;
	cudaError_t e;

	cr_assert_eq(cudaStreamCreate(&s), cudaSuccess);
	cr_assert_eq(cudaEventCreate(&o->ev), cudaSuccess);
	cr_assert_eq(cudaEventRecord(o->ev, s), cudaSuccess);
	cr_assert_eq(cudaStreamSynchronize(s), cudaSuccess);
	o->mode = other;
	cr_assert_eq(cudaStreamBeginCapture(s, cap), cudaSuccess);
	pthread_create(&th, NULL, other_thread, o);
	pthread_join(th, NULL);
	e = cudaStreamEndCapture(s, &g);
	if (g)
		cudaGraphDestroy(g);
	cudaGetLastError();
	cudaEventDestroy(o->ev);
	cudaStreamDestroy(s);
	return e;
}

Test(sim_capture, a_global_capture_is_invalidated_by_another_threads_query)
{
	struct other o;

	cr_assert_eq(capture_beside(cudaStreamCaptureModeGlobal, cudaStreamCaptureModeGlobal, &o),
		     cudaErrorStreamCaptureInvalidated);
	cr_assert_eq(o.query, cudaErrorStreamCaptureUnsupported);
	cr_assert_eq(o.malloc, cudaErrorStreamCaptureUnsupported);
}

Test(sim_capture, a_relaxed_or_thread_local_thread_leaves_a_global_capture_alone)
{
	struct other o;

	cr_assert_eq(capture_beside(cudaStreamCaptureModeGlobal, cudaStreamCaptureModeRelaxed, &o),
		     cudaSuccess);
	cr_assert_eq(o.query, cudaSuccess);
	cr_assert_eq(capture_beside(cudaStreamCaptureModeGlobal, cudaStreamCaptureModeThreadLocal, &o),
		     cudaSuccess);
	cr_assert_eq(o.malloc, cudaSuccess);
}

Test(sim_capture, a_thread_local_capture_minds_only_its_own_thread)
{
	struct other o;
	cudaStream_t s;
	cudaGraph_t g = NULL;
	void *p;

	cr_assert_eq(capture_beside(cudaStreamCaptureModeThreadLocal, cudaStreamCaptureModeGlobal, &o),
		     cudaSuccess);
	cr_assert_eq(cudaStreamCreate(&s), cudaSuccess);
	cr_assert_eq(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
	cr_assert_eq(cudaMalloc(&p, 64), cudaErrorStreamCaptureUnsupported);
	cr_assert_eq(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);
	cr_assert_null(g);
	cr_assert_eq(cudaGetLastError(), cudaErrorStreamCaptureInvalidated);
}

Test(sim_capture, captured_work_is_recorded_not_run_and_its_event_not_queried)
{
	cudaStream_t s;
	cudaEvent_t ev;
	cudaGraph_t g = NULL;
	enum cudaStreamCaptureStatus st;
	char *d, h[16] = { 1 };

	cr_assert_eq(cudaMalloc((void **)&d, 16), cudaSuccess);
	cr_assert_eq(cudaMemset(d, 0, 16), cudaSuccess);
	cr_assert_eq(cudaStreamCreate(&s), cudaSuccess);
	cr_assert_eq(cudaEventCreate(&ev), cudaSuccess);
	cr_assert_eq(cudaStreamIsCapturing(s, &st), cudaSuccess);
	cr_assert_eq(st, cudaStreamCaptureStatusNone);
	cr_assert_eq(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
	cr_assert_eq(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaErrorIllegalState);
	cudaGetLastError();
	cr_assert_eq(cudaStreamIsCapturing(s, &st), cudaSuccess);
	cr_assert_eq(st, cudaStreamCaptureStatusActive);
	cr_assert_eq(cudaMemsetAsync(d, 7, 16, s), cudaSuccess);
	cr_assert_eq(cudaEventRecord(ev, s), cudaSuccess);
	cr_assert_eq(cudaEventQuery(ev), cudaErrorCapturedEvent);
	cudaGetLastError();
	cr_assert_eq(cudaStreamEndCapture(s, &g), cudaSuccess);
	cr_assert_not_null(g);
	cr_assert_eq(cudaStreamIsCapturing(s, &st), cudaSuccess);
	cr_assert_eq(st, cudaStreamCaptureStatusNone);
	cr_assert_eq(cudaStreamSynchronize(s), cudaSuccess);
	cr_assert_eq(cudaMemcpy(h, d, 16, cudaMemcpyDeviceToHost), cudaSuccess);
	cr_assert_eq(h[0], 0, "the captured memset did not run");
	cr_assert_eq(cudaGraphDestroy(g), cudaSuccess);
	cr_assert_eq(cudaStreamBeginCapture(NULL, cudaStreamCaptureModeGlobal),
		     cudaErrorStreamCaptureUnsupported, "the legacy stream cannot be captured");
	cudaGetLastError();
}

Test(sim_capture, an_event_is_recorded_on_its_own_devices_streams_only)
{
	cudaStream_t s0;
	cudaEvent_t e1;

	cr_assert_eq(cudaSetDevice(0), cudaSuccess);
	cr_assert_eq(cudaStreamCreate(&s0), cudaSuccess);
	cr_assert_eq(cudaSetDevice(1), cudaSuccess);
	cr_assert_eq(cudaEventCreate(&e1), cudaSuccess);
	cr_assert_eq(cudaEventRecord(e1, s0), cudaErrorInvalidResourceHandle);
	cr_assert_eq(cudaGetLastError(), cudaErrorInvalidResourceHandle);
	cr_assert_eq(cudaSetDevice(0), cudaSuccess);
	cr_assert_eq(cudaEventRecord(e1, s0), cudaErrorInvalidResourceHandle,
		     "the current device does not matter: the event's does");
	cudaGetLastError();
}

Test(sim_capture, the_pending_error_is_set_peeked_and_taken_as_cuda_does)
{
	cudaStream_t s;
	cudaEvent_t ev;

	cr_assert_eq(cudaGetLastError(), cudaSuccess);
	cr_assert_eq(cudaEventCreate(NULL), cudaErrorInvalidValue);
	cr_assert_eq(cudaPeekAtLastError(), cudaErrorInvalidValue, "peek keeps it");
	cr_assert_eq(cudaPeekAtLastError(), cudaErrorInvalidValue);
	cr_assert_eq(cudaStreamCreate(&s), cudaSuccess, "a success leaves it");
	cr_assert_eq(cudaPeekAtLastError(), cudaErrorInvalidValue);
	cr_assert_eq(cudaGetLastError(), cudaErrorInvalidValue, "get takes it");
	cr_assert_eq(cudaGetLastError(), cudaSuccess);
	cr_assert_eq(cudaEventCreate(&ev), cudaSuccess);
	cr_assert_eq(cudaEventRecord(ev, s), cudaSuccess);
	(void)cudaEventQuery(ev); /* cudaErrorNotReady or success: no error either way */
	cr_assert_eq(cudaPeekAtLastError(), cudaSuccess);
}
