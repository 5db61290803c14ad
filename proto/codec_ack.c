/* SPDX-License-Identifier: MIT */
/*
 * The small messages: the Ack a collector answers with and the Offer an
 * agent asks with (docs/wire.md, "Offer and grant"), packed and unpacked
 * under their own limits.
 */
#include "codec.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "codec_internal.h"

int codec_pack_ack(const char *run_id, Fleetbench__Ack__Status status,
		   const char *reason, uint8_t **ret, size_t *ret_len)
{
	return codec_pack_ack_after(run_id, status, reason, 0, ret, ret_len);
}

int codec_pack_ack_after(const char *run_id, Fleetbench__Ack__Status status,
			 const char *reason, uint32_t retry_after_ms,
			 uint8_t **ret, size_t *ret_len)
{
	Fleetbench__Ack a = FLEETBENCH__ACK__INIT;
	_cleanup_free_ char *cut = NULL;

	/* a run_id that is not a UUID "could not be read": send it empty */
	a.run_id = (char *)(codec_uuid_valid(run_id) ? run_id : "");
	a.status = status;
	if (retry_after_ms && status == FLEETBENCH__ACK__STATUS__RETRY_LATER) {
		a.has_retry_after_ms = true;
		a.retry_after_ms = retry_after_ms < CODEC_MAX_RETRY_AFTER_MS ?
					   retry_after_ms :
					   CODEC_MAX_RETRY_AFTER_MS;
	}
	if (reason) {
		size_t len = strnlen(reason, CODEC_MAX_REASON);
		ssize_t bad = codec_utf8_invalid_at(reason, len);

		/* cut before the first invalid byte, or a split character */
		cut = strndup(reason, bad >= 0 ? (size_t)bad : len);
		if (!cut)
			return -ENOMEM;
		a.reason = cut;
	}
	return codec_pack_message(&a.base, CODEC_MAX_ACK, ret, ret_len);
}

int codec_unpack_ack(const uint8_t *data, size_t len, Fleetbench__Ack **ret)
{
	char err[CODEC_ERR_LEN];
	ProtobufCMessage *m;
	Fleetbench__Ack *a;
	int r;

	if (len > CODEC_MAX_ACK)
		return -EBADMSG;
	r = codec_unpack_message(&fleetbench__ack__descriptor, data, len,
				 CODEC_ACK_BUDGET, &m, err);
	if (r < 0)
		return r;
	a = (Fleetbench__Ack *)m;
	/* an Ack's run_id is empty when the Report's could not be read */
	if (codec_walk(m, true, false, err) < 0 ||
	    a->status < FLEETBENCH__ACK__STATUS__COMMITTED ||
	    a->status > FLEETBENCH__ACK__STATUS__GRANTED ||
	    (*a->run_id && !codec_uuid_valid(a->run_id)) ||
	    (a->has_retry_after_ms &&
	     (a->status != FLEETBENCH__ACK__STATUS__RETRY_LATER ||
	      a->retry_after_ms > CODEC_MAX_RETRY_AFTER_MS))) {
		codec_free_message(m);
		return -EBADMSG;
	}
	*ret = a;
	return 0;
}

void codec_free_ack(Fleetbench__Ack *a)
{
	codec_free_message(a ? &a->base : NULL);
}

/* field 100, length-delimited: (100 << 3 | 2) as a varint */
static const uint8_t offer_tag[2] = { 0xa2, 0x06 };

int codec_pack_offer(const char *run_id, size_t bytes, unsigned flags,
		     uint8_t **ret, size_t *ret_len)
{
	Fleetbench__Offer o = FLEETBENCH__OFFER__INIT;

	if (!codec_uuid_valid(run_id) || bytes < 1 || bytes > CODEC_MAX_MESSAGE)
		return -EINVAL;
	o.offer_run_id = (char *)run_id;
	o.offer_bytes = (uint32_t)bytes;
	o.has_offer_hints = o.offer_hints = !!(flags & CODEC_OFFER_HINTS);
	o.has_offer_returning = o.offer_returning =
		!!(flags & CODEC_OFFER_RETURNING);
	return codec_pack_message(&o.base, CODEC_MAX_OFFER, ret, ret_len);
}

bool codec_is_offer(const uint8_t *data, size_t len)
{
	return len >= sizeof(offer_tag) &&
	       !memcmp(data, offer_tag, sizeof(offer_tag));
}

int codec_unpack_offer(const uint8_t *data, size_t len, char ret_run_id[37],
		       uint32_t *ret_bytes, unsigned *ret_flags,
		       char err[CODEC_ERR_LEN])
{
	ProtobufCMessage *m;
	Fleetbench__Offer *o;
	int r;

	if (len > CODEC_MAX_OFFER) {
		snprintf(err, CODEC_ERR_LEN, "an Offer of %zu bytes (at most %d)",
			 len, CODEC_MAX_OFFER);
		return -EBADMSG;
	}
	r = codec_unpack_message(&fleetbench__offer__descriptor, data, len,
				 CODEC_ACK_BUDGET, &m, err);
	if (r < 0)
		return r == -ENOMEM ? r : -EBADMSG;
	o = (Fleetbench__Offer *)m;
	r = -EBADMSG;
	if (m->n_unknown_fields)
		snprintf(err, CODEC_ERR_LEN,
			 "an Offer with fields it does not have");
	else if (!codec_uuid_valid(o->offer_run_id))
		snprintf(err, CODEC_ERR_LEN,
			 "offer_run_id: not a canonical lowercase UUID");
	else if (o->offer_bytes < 1 || o->offer_bytes > CODEC_MAX_MESSAGE)
		snprintf(err, CODEC_ERR_LEN,
			 "offer_bytes: %" PRIu32 " is outside 1 to %u",
			 o->offer_bytes, CODEC_MAX_MESSAGE);
	else
		r = 0;
	if (r == 0) {
		memcpy(ret_run_id, o->offer_run_id, 37);
		*ret_bytes = o->offer_bytes;
		*ret_flags = (o->has_offer_hints && o->offer_hints ?
				      CODEC_OFFER_HINTS :
				      0) |
			     (o->has_offer_returning && o->offer_returning ?
				      CODEC_OFFER_RETURNING :
				      0);
	}
	codec_free_message(m);
	return r;
}
