/* SPDX-License-Identifier: MIT */
/*
 * Replays saved inputs through a fuzz target without libFuzzer (systemd's
 * src/fuzz/fuzz-main.c), so CTest runs the corpus in every build, the
 * sanitizer build included. Arguments are files or directories (every
 * regular file in them, not recursively). Prints "N passed, 0 failed": a
 * failing input aborts inside the target, naming itself first.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rbe");
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0, n;

	if (!f) {
		fprintf(stderr, "cannot open '%s': %s\n", path, strerror(errno));
		return -1;
	}
	do {
		if (len == cap) {
			uint8_t *p = realloc(buf, cap = cap ? 2 * cap : 4096);

			if (!p) {
				fprintf(stderr, "out of memory reading '%s'\n",
					path);
				free(buf);
				fclose(f);
				return -1;
			}
			buf = p;
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
	} while (n);
	if (ferror(f)) {
		fprintf(stderr, "cannot read '%s'\n", path);
		free(buf);
		fclose(f);
		return -1;
	}
	fclose(f);
	/* the name first: an abort in the target then says which input */
	fprintf(stderr, "replay %s (%zu bytes)\n", path, len);
	LLVMFuzzerTestOneInput(buf, len);
	free(buf);
	return 0;
}

static int replay_dir(const char *dir, unsigned *count)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int r = 0;

	if (!d) {
		fprintf(stderr, "cannot open '%s': %s\n", dir, strerror(errno));
		return -1;
	}
	while ((de = readdir(d))) {
		char path[4096];
		struct stat st;

		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
			continue;
		if (replay_file(path) < 0)
			r = -1;
		else
			(*count)++;
	}
	closedir(d);
	return r;
}

int main(int argc, char **argv)
{
	unsigned count = 0;
	int bad = 0;

	for (int i = 1; i < argc; i++) {
		struct stat st;

		if (stat(argv[i], &st) < 0) {
			fprintf(stderr, "cannot stat '%s': %s\n", argv[i],
				strerror(errno));
			bad++;
		} else if (S_ISDIR(st.st_mode)) {
			bad += replay_dir(argv[i], &count) < 0;
		} else if (replay_file(argv[i]) < 0) {
			bad++;
		} else {
			count++;
		}
	}
	if (!count && !bad) {
		fprintf(stderr, "no inputs to replay\n");
		bad++;
	}
	printf("%u passed, %d failed\n", count, bad);
	return bad ? 1 : 0;
}
