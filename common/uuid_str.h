/* SPDX-License-Identifier: MIT */
/*
 * Run ids as text, written once over libuuid (uuid-dev): the canonical
 * form is lowercase 8-4-4-4-12, 36 characters.
 */
#ifndef FLEETBENCH_UUID_STR_H
#define FLEETBENCH_UUID_STR_H

#include <stdbool.h>
#include <stddef.h>

#define UUID_TEXT_LEN 36

/* Whether s[0..len) is a canonical lowercase UUID. */
bool uuid_text_valid_n(const char *s, size_t len);

/* Whether the string s is one (NUL right after the 36 characters). */
bool uuid_text_valid(const char *s);

/* A new random (version 4) UUID in canonical form: 0, or -errno. */
int uuid_text_new(char out[UUID_TEXT_LEN + 1]);

#endif
