/* SPDX-License-Identifier: MIT */
/* nccl_reduce.c - simulated NCCL data types and reductions: element sizes,
 * fp16/bf16 conversions and the reduction loops. Split out of nccl.c. */
#include <nccl.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "nccl_int.h"
#include "simgpu.h"

/* ---- reductions ---- */

size_t dtype_size(ncclDataType_t t)
{
	switch (t) {
	case ncclInt8: case ncclUint8: return 1;
	case ncclFloat16: case ncclBfloat16: return 2;
	case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
	case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
	default: return 0;
	}
}

static float half_to_float(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
	uint32_t bits;
	float f;

	if (exp == 0) {
		f = ldexpf((float)man, -24);
		return sign ? -f : f;
	}
	if (exp == 31)
		bits = sign | 0x7f800000u | (man << 13);
	else
		bits = sign | ((exp + 112) << 23) | (man << 13);
	memcpy(&f, &bits, 4);
	return f;
}

static uint16_t float_to_half(float f)
{
	uint32_t x, sign, man;
	int exp;

	memcpy(&x, &f, 4);
	sign = (x >> 16) & 0x8000;
	exp = (int)((x >> 23) & 0xff) - 127 + 15;
	man = x & 0x7fffff;
	if (((x >> 23) & 0xff) == 0xff)
		return (uint16_t)(sign | 0x7c00 | (man ? 0x200 : 0));
	if (exp >= 31)
		return (uint16_t)(sign | 0x7c00);
	if (exp <= 0) {
		if (exp < -10)
			return (uint16_t)sign;
		man |= 0x800000;
		uint32_t shift = (uint32_t)(14 - exp);
		uint32_t h = man >> shift, rem = man & ((1u << shift) - 1), half = 1u << (shift - 1);

		if (rem > half || (rem == half && (h & 1)))
			h++;
		return (uint16_t)(sign | h);
	}
	uint32_t h = sign | ((uint32_t)exp << 10) | (man >> 13), rem = man & 0x1fff;

	if (rem > 0x1000 || (rem == 0x1000 && (h & 1)))
		h++;
	return (uint16_t)h;
}

static float bf16_to_float(uint16_t b)
{
	uint32_t x = (uint32_t)b << 16;
	float f;

	memcpy(&f, &x, 4);
	return f;
}

static uint16_t float_to_bf16(float f)
{
	uint32_t x;

	memcpy(&x, &f, 4);
	if ((x & 0x7fffffff) > 0x7f800000)
		return (uint16_t)((x >> 16) | 0x40);
	x += 0x7fff + ((x >> 16) & 1);
	return (uint16_t)(x >> 16);
}

/* Combine element i of every rank's staging area (rank order, as all ranks
 * must agree) into out[i]. src(r) gives rank r's first element. */
#define REDUCE_LOOP(T, ACC, LOAD, STORE, DIV)                                                  \
	for (size_t i = 0; i < n; i++) {                                                       \
		ACC acc = LOAD(((const T *)src[0])[i]);                                        \
		for (int r = 1; r < nr; r++) {                                                 \
			ACC v = LOAD(((const T *)src[r])[i]);                                  \
			switch (op) {                                                          \
			case ncclProd: acc = (ACC)(acc * v); break;                            \
			case ncclMax: acc = v > acc ? v : acc; break;                          \
			case ncclMin: acc = v < acc ? v : acc; break;                          \
			default: acc = (ACC)(acc + v); break;                                  \
			}                                                                      \
		}                                                                              \
		if (op == ncclAvg)                                                             \
			acc = DIV(acc, nr);                                                    \
		((T *)out)[i] = STORE(acc);                                                    \
	}

#define ID(x) (x)
#define FDIV(a, n) ((a) / (n))
#define IDIV(a, n) ((a) / (n))

void reduce(void *out, const char *const *src, int nr, size_t n, ncclDataType_t t,
	    ncclRedOp_t op)
{
	switch (t) {
	case ncclInt8: REDUCE_LOOP(int8_t, int32_t, ID, (int8_t), IDIV) break;
	case ncclUint8: REDUCE_LOOP(uint8_t, uint32_t, ID, (uint8_t), IDIV) break;
	case ncclInt32: REDUCE_LOOP(int32_t, int64_t, ID, (int32_t), IDIV) break;
	case ncclUint32: REDUCE_LOOP(uint32_t, uint32_t, ID, ID, IDIV) break;
	case ncclInt64: REDUCE_LOOP(int64_t, int64_t, ID, ID, IDIV) break; /* -fwrapv */
	case ncclUint64: REDUCE_LOOP(uint64_t, uint64_t, ID, ID, IDIV) break;
	case ncclFloat16: REDUCE_LOOP(uint16_t, float, half_to_float, float_to_half, FDIV) break;
	case ncclBfloat16: REDUCE_LOOP(uint16_t, float, bf16_to_float, float_to_bf16, FDIV) break;
	case ncclFloat32: REDUCE_LOOP(float, float, ID, ID, FDIV) break;
	case ncclFloat64: REDUCE_LOOP(double, double, ID, ID, FDIV) break;
	default: break;
	}
}
