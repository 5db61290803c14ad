/* SPDX-License-Identifier: MIT */
/*
 * A fast 64-bit PRNG (xoshiro256**, seeded through splitmix64) and an
 * unbiased bounded draw (Lemire's multiply-and-reject). Not for secrets:
 * for permutations, random offsets and bootstrap resampling, where rand()'s
 * 31 bits and modulo bias would skew a 1 GiB buffer or a 1 GiB file.
 */
#ifndef FLEETBENCH_RAND_H
#define FLEETBENCH_RAND_H

#include <stdint.h>

struct rng {
	uint64_t s[4];
};

static inline uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static inline void rng_seed(struct rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&seed);
}

static inline uint64_t rotl64(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static inline uint64_t rng_next(struct rng *r)
{
	uint64_t *s = r->s;
	uint64_t result = rotl64(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl64(s[3], 45);
	return result;
}

/* Uniform in [0, bound), bound > 0, without modulo bias. */
static inline uint64_t rng_below(struct rng *r, uint64_t bound)
{
	__uint128_t m = (__uint128_t)rng_next(r) * bound;
	uint64_t low = (uint64_t)m;

	if (low < bound) {
		uint64_t threshold = -bound % bound;

		while (low < threshold) {
			m = (__uint128_t)rng_next(r) * bound;
			low = (uint64_t)m;
		}
	}
	return (uint64_t)(m >> 64);
}

/* Uniform double in [0, 1). */
static inline double rng_double(struct rng *r)
{
	return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

#endif
