/* SPDX-License-Identifier: MIT */
/*
 * Pack, and unpack under a byte budget: the Report's API, and the arena and
 * packer the Acks and Offers (codec_ack.c) use too. The rules a Report
 * keeps are in codec_walk.c, codec_validate.c and codec_caps.c.
 */
#include "codec.h"

#include <errno.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "clock.h"
#include "codec_internal.h"

int codec_invalid(char err[CODEC_ERR_LEN], const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, CODEC_ERR_LEN, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* ---- unpacking under a budget ---- */

/*
 * One arena per unpacked message: the ProtobufCAllocator that protobuf-c
 * calls for every allocation of that unpack, with its own count, so
 * concurrent unpacks share nothing. Blocks are cut in order from chunks
 * that double in size (the first one fits the message's bytes about twice,
 * what a report needs), and all go at once with the arena: protobuf-c's own
 * frees are no-ops. A malloc() and free() per field was a third of the
 * collector's CPU. Each block starts with a header naming its arena (how
 * codec_free_*() finds it again from the message alone) and its size (how
 * validation learns a string's length on the wire after protobuf-c
 * NUL-terminated it, and so sees an embedded NUL). Blocks and headers are
 * charged to the budget.
 */
struct codec_chunk {
	struct codec_chunk *next;
	size_t size, used;
	alignas(max_align_t) unsigned char data[];
};

struct codec_arena {
	ProtobufCAllocator allocator;
	struct codec_chunk *chunks; /* the newest first */
	size_t next_chunk;
	size_t used;
	size_t budget;
	bool exhausted;
	bool oom;
};

struct codec_block {
	alignas(max_align_t) struct codec_arena *arena;
	size_t size;
};

#define CODEC_CHUNK_MIN 4096u

/* Under AddressSanitizer every block is a chunk of its own, of its exact
 * size, so that a read past its end is caught as before. */
#if defined(__SANITIZE_ADDRESS__)
#define CODEC_CHUNK_EACH 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CODEC_CHUNK_EACH 1
#endif
#endif
#ifndef CODEC_CHUNK_EACH
#define CODEC_CHUNK_EACH 0
#endif

/*
 * Each thread keeps the largest chunk of its last arena, up to
 * CODEC_SPARE_MAX, for its next one: a report's first chunk (about 60 KB)
 * is above the collector's mmap threshold (cmd_serve.c), so without it
 * every report mapped it, faulted its pages in and unmapped it again, 6% of
 * the collector's CPU with the shootdowns of the unmap (docs/performance.md).
 * At most one a thread: what the collector holds at rest grows by that.
 */
#define CODEC_SPARE_MAX (256u << 10)

static pthread_key_t spare_key;
static pthread_once_t spare_once = PTHREAD_ONCE_INIT;

static void spare_make(void)
{
	/* without a key (no memory for one) every chunk is freed */
	if (pthread_key_create(&spare_key, free) != 0)
		spare_key = (pthread_key_t)-1;
}

/* This thread's spare chunk if it holds at least n bytes, taken; NULL
 * otherwise. */
static struct codec_chunk *spare_take(size_t n)
{
	struct codec_chunk *c;

	if (CODEC_CHUNK_EACH)
		return NULL;
	pthread_once(&spare_once, spare_make);
	if (spare_key == (pthread_key_t)-1)
		return NULL;
	c = pthread_getspecific(spare_key);
	if (!c || c->size < n)
		return NULL;
	pthread_setspecific(spare_key, NULL);
	return c;
}

/* Keeps c as this thread's spare when it is the larger, else frees it. */
static void spare_keep(struct codec_chunk *c)
{
	struct codec_chunk *old;

	if (CODEC_CHUNK_EACH || c->size > CODEC_SPARE_MAX) {
		free(c);
		return;
	}
	pthread_once(&spare_once, spare_make);
	if (spare_key == (pthread_key_t)-1) {
		free(c);
		return;
	}
	old = pthread_getspecific(spare_key);
	if (old && old->size >= c->size) {
		free(c);
		return;
	}
	if (pthread_setspecific(spare_key, c) != 0) {
		free(c);
		return;
	}
	free(old);
}

static void *arena_alloc(void *data, size_t size)
{
	struct codec_arena *a = data;
	struct codec_chunk *c = a->chunks;
	struct codec_block *b;
	size_t align = alignof(max_align_t), cost;

	/* used <= budget always holds, so neither side can overflow */
	if (size > a->budget) {
		a->exhausted = true;
		return NULL;
	}
	cost = sizeof(*b) + (size + align - 1) / align * align;
	if (cost > a->budget - a->used) {
		a->exhausted = true;
		return NULL;
	}
	if (CODEC_CHUNK_EACH || !c || c->size - c->used < cost) {
		size_t n = CODEC_CHUNK_EACH	   ? sizeof(*b) + size :
			   a->next_chunk > cost ? a->next_chunk :
						  cost;

		c = spare_take(n);
		if (c)
			n = c->size;
		else
			c = malloc(sizeof(*c) + n);
		if (!c) {
			a->oom = true;
			return NULL;
		}
		c->next = a->chunks;
		c->size = n;
		c->used = 0;
		a->chunks = c;
		a->next_chunk = n * 2;
	}
	b = (struct codec_block *)(c->data + c->used);
	c->used += cost;
	b->arena = a;
	b->size = size;
	a->used += cost;
	return b + 1;
}

/* Blocks go with their arena (arena_release). */
static void arena_free(void *data, void *p)
{
	(void)data;
	(void)p;
}

static void arena_release(struct codec_arena *a)
{
	struct codec_chunk *largest = NULL;

	while (a->chunks) {
		struct codec_chunk *c = a->chunks;

		a->chunks = c->next;
		if (!largest || c->size > largest->size) {
			free(largest);
			largest = c;
		} else {
			free(c);
		}
	}
	if (largest)
		spare_keep(largest);
	free(a);
}

static const struct codec_block *block_of(const void *p)
{
	return (const struct codec_block *)p - 1;
}

size_t codec_block_size(const void *p)
{
	return block_of(p)->size;
}

int codec_unpack_message(const ProtobufCMessageDescriptor *desc,
			 const uint8_t *data, size_t len, size_t budget,
			 ProtobufCMessage **ret, char err[CODEC_ERR_LEN])
{
	struct codec_arena *a = calloc(1, sizeof(*a));
	ProtobufCMessage *m;
	int r = -EBADMSG;

	if (!a)
		return -ENOMEM;
	a->allocator.alloc = arena_alloc;
	a->allocator.free = arena_free;
	a->allocator.allocator_data = a;
	a->budget = budget;
	a->next_chunk = 2 * len > CODEC_CHUNK_MIN ? 2 * len : CODEC_CHUNK_MIN;
	m = protobuf_c_message_unpack(desc, &a->allocator, len, data);
	if (m) {
		*ret = m;
		return 0;
	}
	if (a->oom) {
		snprintf(err, CODEC_ERR_LEN, "out of memory decoding a %s",
			 desc->short_name);
		r = -ENOMEM;
	} else if (a->exhausted) {
		snprintf(err, CODEC_ERR_LEN,
			 "%s needs more than %zu KiB to decode (the unpack budget)",
			 desc->short_name, budget >> 10);
	} else {
		snprintf(err, CODEC_ERR_LEN,
			 "not a %s (malformed or truncated protobuf, or a required field missing)",
			 desc->short_name);
	}
	arena_release(a);
	return r;
}

void codec_free_message(ProtobufCMessage *m)
{
	if (m)
		arena_release(block_of(m)->arena);
}

int codec_pack_message(const ProtobufCMessage *m, size_t max, uint8_t **ret,
		       size_t *ret_len)
{
	size_t len = protobuf_c_message_get_packed_size(m);
	uint8_t *buf;

	if (len > max)
		return -E2BIG;
	buf = malloc(len ? len : 1);
	if (!buf)
		return -ENOMEM;
	if (protobuf_c_message_pack(m, buf) != len) {
		free(buf);
		return -EIO;
	}
	*ret = buf;
	*ret_len = len;
	return 0;
}

/* ---- the API ---- */

int codec_pack_report(const Fleetbench__Report *r, uint8_t **ret,
		      size_t *ret_len)
{
	if (!r || !protobuf_c_message_check(&r->base))
		return -EINVAL;
	return codec_pack_message(&r->base, CODEC_MAX_MESSAGE, ret, ret_len);
}

int codec_validate_report(const Fleetbench__Report *r, int64_t now_ms,
			  char err[CODEC_ERR_LEN])
{
	return codec_check_report(r, now_ms, false, err);
}

int codec_unpack_report(const uint8_t *data, size_t len,
			Fleetbench__Report **ret, char err[CODEC_ERR_LEN])
{
	ProtobufCMessage *m;
	int r;

	*ret = NULL;
	err[0] = '\0';
	if (len > CODEC_MAX_MESSAGE) {
		snprintf(err, CODEC_ERR_LEN,
			 "message of %zu bytes is over the limit of %u bytes",
			 len, CODEC_MAX_MESSAGE);
		return -EMSGSIZE;
	}
	r = codec_unpack_message(&fleetbench__report__descriptor, data, len,
				 CODEC_UNPACK_BUDGET, &m, err);
	if (r < 0)
		return r;
	r = codec_check_report((Fleetbench__Report *)m, wall_ms(), true, err);
	if (r < 0 && r != -EINVAL) {
		codec_free_message(m);
		return r;
	}
	*ret = (Fleetbench__Report *)m;
	return r;
}

void codec_free_report(Fleetbench__Report *r)
{
	codec_free_message(r ? &r->base : NULL);
}
