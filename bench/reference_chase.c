/* SPDX-License-Identifier: MIT */
/*
 * A textbook pointer chase, sharing no code with fleetbench: the reference
 * that thp_chase is checked against (vs_reference_chase).
 *
 *   reference_chase BYTES ACCESSES 4k|thp [SEED]
 *
 * Maps BYTES of anonymous memory on a 2 MiB boundary, advises it
 * MADV_NOHUGEPAGE (4k) or MADV_HUGEPAGE (thp), fills it, links its 64-byte
 * slots into one random cycle (Sattolo, xorshift64* seeded by splitmix64),
 * then times ACCESSES iterations of p = next[p] and prints
 *   ns_per_access <ns>
 *   anon_huge_kb <AnonHugePages of the process>
 *   end <final slot>
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define ALIGN (2UL << 20)

struct slot {
	uint64_t next;
	char pad[56];
};

static uint64_t prng;

static uint64_t xorshift64s(void)
{
	prng ^= prng >> 12;
	prng ^= prng << 25;
	prng ^= prng >> 27;
	return prng * 0x2545F4914F6CDD1DULL;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static long anon_huge_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/smaps_rollup", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "AnonHugePages: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

int main(int argc, char **argv)
{
	uint64_t bytes, accesses, n, p, seed = 1;
	size_t len;
	char *raw, *buf;
	struct slot *s;
	int thp;
	double t0, t1;

	if (argc < 4 || (strcmp(argv[3], "4k") && strcmp(argv[3], "thp"))) {
		fprintf(stderr,
			"usage: reference_chase BYTES ACCESSES 4k|thp [SEED]\n");
		return 2;
	}
	bytes = strtoull(argv[1], NULL, 0);
	accesses = strtoull(argv[2], NULL, 0);
	thp = !strcmp(argv[3], "thp");
	if (argc > 4)
		seed = strtoull(argv[4], NULL, 0);
	n = bytes / sizeof(struct slot);
	if (n < 2 || accesses == 0) {
		fprintf(stderr, "reference_chase: too small\n");
		return 2;
	}
	/* splitmix64 of the seed, never 0 for xorshift */
	prng = seed + 0x9e3779b97f4a7c15ULL;
	prng = (prng ^ (prng >> 30)) * 0xbf58476d1ce4e5b9ULL;
	prng = (prng ^ (prng >> 27)) * 0x94d049bb133111ebULL;
	prng ^= prng >> 31;
	if (!prng)
		prng = 1;

	len = (n * sizeof(struct slot) + ALIGN - 1) & ~(ALIGN - 1);
	raw = mmap(NULL, len + ALIGN, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED) {
		perror("reference_chase: mmap");
		return 1;
	}
	buf = (char *)(((uintptr_t)raw + ALIGN - 1) & ~(uintptr_t)(ALIGN - 1));
	if ((buf > raw && munmap(raw, (size_t)(buf - raw)) < 0) ||
	    (buf + len < raw + len + ALIGN &&
	     munmap(buf + len, (size_t)(raw + len + ALIGN - (buf + len))) < 0)) {
		perror("reference_chase: munmap");
		return 1;
	}
	if (madvise(buf, len, thp ? MADV_HUGEPAGE : MADV_NOHUGEPAGE) < 0) {
		perror("reference_chase: madvise");
		return 1;
	}
	memset(buf, 0, len);

	s = (struct slot *)buf;
	for (uint64_t i = 0; i < n; i++)
		s[i].next = i;
	for (uint64_t i = n - 1; i > 0; i--) {
		uint64_t j = xorshift64s() % i, t = s[i].next;

		s[i].next = s[j].next;
		s[j].next = t;
	}

	p = 0;
	t0 = now();
	for (uint64_t k = 0; k < accesses; k++)
		p = s[p].next;
	t1 = now();

	printf("ns_per_access %.3f\n", (t1 - t0) / (double)accesses);
	printf("anon_huge_kb %ld\n", anon_huge_kb());
	printf("end %llu\n", (unsigned long long)p);
	return 0;
}
