/* SPDX-License-Identifier: MIT */
/* The block probe: its parsers, every fixture tree and the running machine. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "check.h"
#include "probe_block.h"
#include "probe_test.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* "selected|opt opt" for a { selected, options } item, else jstr(). */
static const char *jsched(struct json_object *root, const char *path)
{
	static char buf[512];
	struct json_object *v = jget(root, path), *sel, *opts;
	size_t len;

	if (!json_object_object_get_ex(v, "selected", &sel) ||
	    !json_object_object_get_ex(v, "options", &opts))
		return jstr(root, path);
	len = (size_t)snprintf(buf, sizeof(buf), "%s|",
			       json_object_get_string(sel));
	for (size_t i = 0; i < json_object_array_length(opts); i++)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s",
					i ? " " : "",
					json_object_get_string(
						json_object_array_get_idx(opts,
									  i)));
	return buf;
}

/* Expected device: every value as jstr() shows it; sched as jsched(). */
struct dev {
	const char *name, *transport, *rotational, *sched, *nr_requests,
		*rq_affinity, *model, *size_bytes, *lbs;
};

static void check_dev(struct json_object *r, int i, const struct dev *d)
{
	char path[128];

#define AT(key) (snprintf(path, sizeof(path), "block.devices[%d]%s", i, key), path)
	CHECK_EQ_INT(jkeys(r, AT("")), 9);
	CHECK_EQ_STR(jstr(r, AT(".name")), d->name);
	CHECK_EQ_STR(jstr(r, AT(".transport")), d->transport);
	CHECK_EQ_STR(jstr(r, AT(".rotational")), d->rotational);
	if (strncmp(d->rotational, "unknown", 7))
		CHECK(jis(r, AT(".rotational"), json_type_boolean));
	CHECK_EQ_STR(jsched(r, AT(".scheduler")), d->sched);
	CHECK_EQ_STR(jstr(r, AT(".nr_requests")), d->nr_requests);
	if (strncmp(d->nr_requests, "unknown", 7))
		CHECK(jis(r, AT(".nr_requests"), json_type_int));
	CHECK_EQ_STR(jstr(r, AT(".rq_affinity")), d->rq_affinity);
	if (strncmp(d->rq_affinity, "unknown", 7))
		CHECK(jis(r, AT(".rq_affinity"), json_type_int));
	CHECK_EQ_STR(jstr(r, AT(".model")), d->model);
	CHECK_EQ_STR(jstr(r, AT(".size_bytes")), d->size_bytes);
	if (strncmp(d->size_bytes, "unknown", 7))
		CHECK(jis(r, AT(".size_bytes"), json_type_int));
	CHECK_EQ_STR(jstr(r, AT(".logical_block_size")), d->lbs);
	if (strncmp(d->lbs, "unknown", 7))
		CHECK(jis(r, AT(".logical_block_size"), json_type_int));
#undef AT
}

struct workdir {
	const char *mount_point, *fstype, *source, *mount_options,
		*super_options, *noatime, *relatime, *device, *disk;
};

static void check_workdir(struct json_object *r, const struct workdir *w)
{
	CHECK_EQ_INT(jkeys(r, "block.workdir"), 10);
	CHECK_EQ_STR(jstr(r, "block.workdir.path"), "/var/lib/fleetbench");
	CHECK_EQ_STR(jstr(r, "block.workdir.mount_point"), w->mount_point);
	CHECK_EQ_STR(jstr(r, "block.workdir.fstype"), w->fstype);
	CHECK_EQ_STR(jstr(r, "block.workdir.source"), w->source);
	CHECK_EQ_STR(jstr(r, "block.workdir.mount_options"), w->mount_options);
	CHECK_EQ_STR(jstr(r, "block.workdir.super_options"), w->super_options);
	CHECK_EQ_STR(jstr(r, "block.workdir.noatime"), w->noatime);
	CHECK_EQ_STR(jstr(r, "block.workdir.relatime"), w->relatime);
	if (strncmp(w->noatime, "unknown", 7)) {
		CHECK(jis(r, "block.workdir.noatime", json_type_boolean));
		CHECK(jis(r, "block.workdir.relatime", json_type_boolean));
	}
	CHECK_EQ_STR(jstr(r, "block.workdir.device"), w->device);
	CHECK_EQ_STR(jstr(r, "block.workdir.disk"), w->disk);
}

#define ABSENT "unknown (absent)"

static void test_kvm_guest(void)
{
	static const struct dev vda = {
		"vda", "virtio", "true", "mq-deadline|mq-deadline none", "256",
		"1", ABSENT, "21474836480", "512",
	};
	static const struct workdir w = {
		"/", "ext4", "/dev/vda1", "rw,noatime",
		"rw,discard,errors=remount-ro", "true", "false", "vda1", "vda",
	};
	struct json_object *r = probe_fixture("kvm-guest", NULL);

	CHECK(r != NULL);
	if (!r)
		return;
	CHECK_EQ_INT(jkeys(r, "block"), 2);
	CHECK_EQ_INT(jlen(r, "block.devices"), 1);
	check_dev(r, 0, &vda);
	check_workdir(r, &w);
	json_object_put(r);
}

static void test_vps(void)
{
	static const struct dev vda = {
		"vda", "virtio", "true", "none|none mq-deadline", "256", "1",
		ABSENT, "85899345920", "512",
	};
	static const struct workdir w = {
		"/", "overlay", "overlay", "rw,relatime",
		"rw,lowerdir=/var/lib/docker/overlay2/l/"
		"6Q3KAXJ2CSZ7TQVMCOB2Z3DPXK:/var/lib/docker/overlay2/l/"
		"QEZ2Z4W2BZBDTRBX3RBCOTB5LA,upperdir=/var/lib/docker/overlay2/"
		"3b1e4a9c0f2d7e6a/diff,workdir=/var/lib/docker/overlay2/"
		"3b1e4a9c0f2d7e6a/work,nouserxattr",
		"false", "true", "unknown (no block device (overlay))",
		"unknown (no block device (overlay))",
	};
	struct fake_sys fs = { .setup_err = -EPERM };
	struct json_object *r = probe_fixture("vps-thp-always", &fs);

	CHECK(r != NULL);
	if (!r)
		return;
	CHECK_EQ_INT(jlen(r, "block.devices"), 1);
	check_dev(r, 0, &vda);
	check_workdir(r, &w);
	json_object_put(r);
}

static void test_baremetal(void)
{
	static const struct dev devs[] = {
		{ "dm-0", "dm", "false", "none|none", "128", "0", ABSENT,
		  "1920380960768", "512" },
		{ "nvme0n1", "nvme", "false", "none|none mq-deadline", "1023",
		  "1", "Dell Ent NVMe CM6 RI 1.92TB", "1920383410176", "512" },
		{ "nvme1n1", "nvme", "false", "none|none mq-deadline", "1023",
		  "1", "Dell Ent NVMe CM6 RI 1.92TB", "1920383410176", "512" },
	};
	/* The work directory is its own mount; the tmpfs below it is not
	 * where it lives. */
	static const struct workdir w = {
		"/var/lib/fleetbench", "xfs", "/dev/nvme1n1p1", "rw,noatime",
		"rw,attr2,inode64,logbufs=8,logbsize=32k,noquota", "true",
		"false", "nvme1n1p1", "nvme1n1",
	};
	struct fake_sys fs = { .hypervisor_bit = -1 };
	struct json_object *r = probe_fixture("baremetal-numa", &fs);

	CHECK(r != NULL);
	if (!r)
		return;
	CHECK_EQ_INT(jlen(r, "block.devices"), ARRAY_SIZE(devs));
	for (size_t i = 0; i < ARRAY_SIZE(devs); i++)
		check_dev(r, (int)i, &devs[i]);
	check_workdir(r, &w);
	json_object_put(r);
}

static void test_old_kernel(void)
{
	/* loop0 (size 0) is an unused slot and skipped; loop1 is a snap. */
	static const struct dev devs[] = {
		{ "loop1", "loop", "true", "mq-deadline|mq-deadline none",
		  "128", "1", ABSENT, "58691584", "512" },
		{ "nvme0n1", "nvme", "false", "none|none mq-deadline", "63",
		  "1", "Amazon Elastic Block Store", "8589934592", "512" },
	};
	static const struct workdir w = {
		"/", "ext4", "/dev/nvme0n1p1", "rw,relatime", "rw,discard",
		"false", "true", "nvme0n1p1", "nvme0n1",
	};
	struct fake_sys fs = { .probe_err = -EINVAL,
			       .features = IORING_FEAT_SINGLE_MMAP };
	struct json_object *r = probe_fixture("old-kernel", &fs);

	CHECK(r != NULL);
	if (!r)
		return;
	CHECK_EQ_INT(jlen(r, "block.devices"), ARRAY_SIZE(devs));
	for (size_t i = 0; i < ARRAY_SIZE(devs); i++)
		check_dev(r, (int)i, &devs[i]);
	check_workdir(r, &w);
	json_object_put(r);
}

static void test_malformed(void)
{
#define Q(dev, f) "unknown (malformed: /sys/block/" dev "/queue/" f
	static const struct dev devs[] = {
		/* A size that is not a number is not "0": reported. */
		{ "loop0", "loop", "true",
		  Q("loop0", "scheduler has no single [selected] value)"),
		  "128", "1", ABSENT,
		  "unknown (malformed: /sys/block/loop0/size is not a sector "
		  "count)",
		  "512" },
		/* A plain directory (no link): transport from the name. */
		{ "sdb", "scsi", ABSENT, ABSENT, ABSENT, ABSENT,
		  "unknown (malformed: /sys/block/sdb/device/model empty)",
		  "1000204886016", ABSENT },
		{ "vda", "virtio", Q("vda", "rotational is not 0 or 1)"),
		  Q("vda", "scheduler has no single [selected] value)"),
		  Q("vda", "nr_requests is not an integer)"),
		  Q("vda", "rq_affinity empty)"), ABSENT,
		  "unknown (malformed: /sys/block/vda/size empty)",
		  Q("vda", "logical_block_size is not an integer)") },
	};
#undef Q
#define BAD "unknown (malformed: /proc/self/mountinfo line 2)"
	static const struct workdir w = {
		BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD,
	};
#undef BAD
	struct json_object *r = probe_fixture("malformed", NULL);

	CHECK(r != NULL);
	if (!r)
		return;
	CHECK_EQ_INT(jlen(r, "block.devices"), ARRAY_SIZE(devs));
	for (size_t i = 0; i < ARRAY_SIZE(devs); i++)
		check_dev(r, (int)i, &devs[i]);
	check_workdir(r, &w);
	json_object_put(r);
}

static void test_transport(void)
{
	static const struct {
		const char *name, *link, *want;
	} cases[] = {
		{ "vda", "../devices/pci0000:00/0000:00:02.0/virtio1/block/vda",
		  "virtio" },
		{ "nvme0n1",
		  "../devices/pci0000:00/0000:00:04.0/nvme/nvme0/nvme0n1",
		  "nvme" },
		{ "nvme0n1",
		  "../devices/virtual/nvme-subsystem/nvme-subsys0/nvme0n1",
		  "nvme" },
		{ "sda",
		  "../devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/"
		  "0:0:0:0/block/sda",
		  "sata" },
		{ "sda",
		  "../devices/LNXSYSTM:00/LNXSYBUS:00/ACPI0004:00/VMBUS:00/"
		  "f8b3781b-1e82-4818-a1c3-63d806ec15bb/host0/target0:0:0/"
		  "0:0:0:0/block/sda",
		  "scsi" },
		{ "sdb",
		  "../devices/pci0000:00/0000:00:14.0/usb2/2-1/2-1:1.0/host2/"
		  "target2:0:0/2:0:0:0/block/sdb",
		  "usb" },
		{ "sda",
		  "../devices/pci0000:00/0000:00:03.0/virtio0/host0/"
		  "target0:0:1/0:0:1:0/block/sda",
		  "virtio" },
		{ "xvda", "../devices/vbd-51712/block/xvda", "xen" },
		{ "mmcblk0",
		  "../devices/platform/fe340000.mmc/mmc_host/mmc0/mmc0:0001/"
		  "block/mmcblk0",
		  "mmc" },
		{ "loop3", "../devices/virtual/block/loop3", "loop" },
		{ "zram0", "../devices/virtual/block/zram0", "zram" },
		{ "dm-2", "../devices/virtual/block/dm-2", "dm" },
		{ "md127", "../devices/virtual/block/md127", "md" },
		{ "nbd0", "../devices/virtual/block/nbd0", "other" },
		{ "ram0", "../devices/virtual/block/ram0", "other" },
		/* No link (CONFIG_SYSFS_DEPRECATED, damaged sysfs). */
		{ "vdb", NULL, "virtio" },
		{ "xvdb", NULL, "xen" },
		{ "sdc", NULL, "scsi" },
		{ "nvme2n1", NULL, "nvme" },
		{ "mmcblk1", NULL, "mmc" },
		{ "sr0", NULL, "other" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
		CHECK_EQ_STR(block_transport(cases[i].name, cases[i].link),
			     cases[i].want);
}

static const char *sched(const char *text)
{
	static char buf[256];
	struct probe_bracket b;
	struct json_object *v;
	int r = block_parse_scheduler(text, &b);

	if (r < 0) {
		snprintf(buf, sizeof(buf), "error %d", r);
		return buf;
	}
	v = probe_bracket_json(&b);
	probe_bracket_release(&b);
	snprintf(buf, sizeof(buf), "%s", jsched(v, ""));
	json_object_put(v);
	return buf;
}

static void test_scheduler(void)
{
	CHECK_EQ_STR(sched("none [mq-deadline] kyber bfq"),
		     "mq-deadline|none mq-deadline kyber bfq");
	CHECK_EQ_STR(sched("[none] mq-deadline"), "none|none mq-deadline");
	CHECK_EQ_STR(sched("[none]"), "none|none");
	CHECK_EQ_STR(sched("none"), "none|none");
	CHECK_EQ_STR(sched("mq-deadline kyber"), "error -74");
	CHECK_EQ_STR(sched("[none] [kyber]"), "error -74");
	CHECK_EQ_STR(sched("[none"), "error -74");
	CHECK_EQ_STR(sched("none]"), "error -74");
	CHECK_EQ_STR(sched(""), "error -74");
}

/* Runs block_mountinfo_find on a copy of text; "mp|fstype|source|opts|
 * super|major:minor", or "ENOENT", or "EBADMSG line N". */
static const char *find(const char *text, const char *path)
{
	static char buf[1024];
	char *copy = strdup(text);
	struct block_mount m;
	unsigned int line = 99;
	int r;

	if (!copy)
		return "ENOMEM";
	r = block_mountinfo_find(copy, path, &m, &line);
	if (r == -ENOENT)
		snprintf(buf, sizeof(buf), "ENOENT");
	else if (r == -EBADMSG)
		snprintf(buf, sizeof(buf), "EBADMSG line %u", line);
	else if (r < 0)
		snprintf(buf, sizeof(buf), "error %d", r);
	else
		snprintf(buf, sizeof(buf), "%s|%s|%s|%s|%s|%u:%u",
			 m.mount_point, m.fstype, m.source, m.mount_options,
			 m.super_options, m.major, m.minor);
	free(copy);
	return buf;
}

static void test_mountinfo(void)
{
	static const char mi[] =
		"27 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw\n"
		"30 27 0:30 / /var/lib/fleet rw shared:5 - tmpfs tmpfs rw\n"
		"31 27 8:17 / /mnt/my\\040data rw,noatime - ext4 "
		"/dev/disk\\040one rw,data=ordered\n"
		"32 27 0:31 / /var/lib/fleetbench rw master:3 shared:9 "
		"propagate_from:2 - tmpfs tmpfs rw,size=4k\n"
		/* Mounted on top of 32: the later line wins. */
		"33 32 8:33 / /var/lib/fleetbench rw,noatime - xfs /dev/sdc1 "
		"rw,noquota\n"
		"34 33 0:32 / /var/lib/fleetbench/sub rw - tmpfs tmpfs rw\n"
		/* No source: two spaces (mnt_devname ""). */
		"35 27 0:33 / /srv rw - fuse.x  rw,user_id=0\n"
		"36 27 0:34 / /back\\134slash rw - tmpfs tmpfs rw\n";

	CHECK_EQ_STR(find(mi, "/"), "/|ext4|/dev/vda1|rw,relatime|rw|254:1");
	CHECK_EQ_STR(find(mi, "/var/lib/fleetbench"),
		     "/var/lib/fleetbench|xfs|/dev/sdc1|rw,noatime|rw,noquota|"
		     "8:33");
	CHECK_EQ_STR(find(mi, "/var/lib/fleetbench/x/y"),
		     "/var/lib/fleetbench|xfs|/dev/sdc1|rw,noatime|rw,noquota|"
		     "8:33");
	CHECK_EQ_STR(find(mi, "/var/lib/fleetbench/sub/z"),
		     "/var/lib/fleetbench/sub|tmpfs|tmpfs|rw|rw|0:32");
	/* A mount point is a whole component: /var/lib/fleet does not hold
	 * /var/lib/fleetbench2. */
	CHECK_EQ_STR(find(mi, "/var/lib/fleetbench2"),
		     "/|ext4|/dev/vda1|rw,relatime|rw|254:1");
	CHECK_EQ_STR(find(mi, "/var/lib/fleet/a"),
		     "/var/lib/fleet|tmpfs|tmpfs|rw|rw|0:30");
	CHECK_EQ_STR(find(mi, "/mnt/my data/run"),
		     "/mnt/my data|ext4|/dev/disk one|rw,noatime|"
		     "rw,data=ordered|8:17");
	CHECK_EQ_STR(find(mi, "/srv"), "/srv|fuse.x||rw|rw,user_id=0|0:33");
	CHECK_EQ_STR(find(mi, "/back\\slash"),
		     "/back\\slash|tmpfs|tmpfs|rw|rw|0:34");

	CHECK_EQ_STR(find("30 27 0:30 / /var rw - tmpfs tmpfs rw\n", "/etc"),
		     "ENOENT");
	CHECK_EQ_STR(find("", "/"), "EBADMSG line 0");
	CHECK_EQ_STR(find("27 1 254:1 / / rw - ext4 /dev/vda1 rw", "/"),
		     "EBADMSG line 1");
	CHECK_EQ_STR(find("27 1 254:1 / / rw - ext4 /dev/vda1 rw\n"
			  "28 27 0:5 / /dev rw,nosuid,rel\n",
			  "/"),
		     "EBADMSG line 2");
	CHECK_EQ_STR(find("27 1 254:1 / / rw - ext4 /dev/vda1 rw\n\n", "/"),
		     "EBADMSG line 2");
	/* Wrong field counts and values. */
	CHECK_EQ_STR(find("27 1 254:1 / / rw - ext4 /dev/vda1\n", "/"),
		     "EBADMSG line 1");
	CHECK_EQ_STR(find("27 1 254:1 / / rw - ext4 /dev/vda1 rw x\n", "/"),
		     "EBADMSG line 1");
	CHECK_EQ_STR(find("27 1 254 / / rw - ext4 /dev/vda1 rw\n", "/"),
		     "EBADMSG line 1");
	CHECK_EQ_STR(find("27 1 254:x / / rw - ext4 /dev/vda1 rw\n", "/"),
		     "EBADMSG line 1");
	CHECK_EQ_STR(find("x 1 254:1 / / rw - ext4 /dev/vda1 rw\n", "/"),
		     "EBADMSG line 1");
	CHECK_EQ_STR(find("27 1 254:1 / rel rw - ext4 /dev/vda1 rw\n", "/"),
		     "EBADMSG line 1");
	CHECK_EQ_STR(find("27 1 254:1 / /a\\09 rw - ext4 /dev/vda1 rw\n",
			  "/"),
		     "EBADMSG line 1");
	CHECK_EQ_STR(find("27 1 254:1 / /a\\ rw - ext4 /dev/vda1 rw\n", "/"),
		     "EBADMSG line 1");
}

/* The first line of a file, trailing white space removed. */
static int read_str(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "re");
	size_t len;

	if (!f)
		return -errno;
	if (!fgets(buf, (int)size, f)) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	len = strlen(buf);
	while (len && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
		buf[--len] = '\0';
	return 0;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* /sys/block as readdir shows it, minus unused loop and RAM disk slots,
 * sorted; sizes from /sys/class/block/<name>/size. */
static void check_real_devices(struct json_object *r)
{
	DIR *d = opendir("/sys/block");
	char *names[1024];
	size_t n = 0;
	struct dirent *de;

	CHECK(d != NULL);
	if (!d)
		return;
	while ((de = readdir(d)) && n < ARRAY_SIZE(names)) {
		char path[PATH_MAX], buf[64];
		long long sectors = -1;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/class/block/%s/size",
			 de->d_name);
		if (read_str(path, buf, sizeof(buf)) == 0)
			sectors = strtoll(buf, NULL, 10);
		if (sectors == 0 && (!strncmp(de->d_name, "loop", 4) ||
				     !strncmp(de->d_name, "ram", 3)))
			continue;
		names[n++] = strdup(de->d_name);
	}
	closedir(d);
	qsort(names, n, sizeof(names[0]), name_cmp);
	printf("real machine: %zu block devices reported\n", n);
	CHECK_EQ_INT(jlen(r, "block.devices"), n);
	for (size_t i = 0; i < n; i++) {
		char path[128], file[PATH_MAX], buf[64];

		snprintf(path, sizeof(path), "block.devices[%zu].name", i);
		CHECK_EQ_STR(jstr(r, path), names[i]);
		snprintf(path, sizeof(path), "block.devices[%zu].size_bytes",
			 i);
		snprintf(file, sizeof(file), "/sys/class/block/%s/size",
			 names[i]);
		if (read_str(file, buf, sizeof(buf)) == 0)
			CHECK_EQ_INT(jint(r, path),
				     strtoll(buf, NULL, 10) * 512);
		snprintf(path, sizeof(path), "block.devices[%zu].rotational",
			 i);
		CHECK(jis(r, path, json_type_boolean) ||
		      item_is_unknown(jget(r, path)));
		free(names[i]);
	}
}

/* statfs magic to the mountinfo fstype names that may carry it. */
static const char *fstype_for_magic(long magic)
{
	switch (magic) {
	case EXT4_SUPER_MAGIC: /* ext2, ext3 and ext4 share it */
		return "ext2 ext3 ext4";
	case XFS_SUPER_MAGIC:
		return "xfs";
	case TMPFS_MAGIC:
		return "tmpfs";
	case OVERLAYFS_SUPER_MAGIC:
		return "overlay";
	case BTRFS_SUPER_MAGIC:
		return "btrfs";
	default:
		return NULL;
	}
}

static bool word_in(const char *word, const char *list)
{
	size_t len = strlen(word);

	for (const char *p = list; (p = strstr(p, word)); p += len)
		if ((p == list || p[-1] == ' ') &&
		    (p[len] == ' ' || p[len] == '\0'))
			return true;
	return false;
}

/*
 * The work directory on the running machine, checked with other system
 * calls than the probe uses: statfs for the type, stat for the device
 * number and the mount point, statvfs for the atime flags.
 */
static void check_real_workdir(struct json_object *r, const char *dir)
{
	char real[PATH_MAX], buf[64], mp[PATH_MAX], dev[256];
	const char *types;
	struct stat st, mst;
	struct statfs sfs;
	struct statvfs svfs;

	CHECK_EQ_STR(jstr(r, "block.workdir.path"), dir);
	CHECK(realpath(dir, real) != NULL);
	CHECK_OK(stat(dir, &st) < 0 ? -errno : 0);
	CHECK_OK(statfs(dir, &sfs) < 0 ? -errno : 0);
	CHECK_OK(statvfs(dir, &svfs) < 0 ? -errno : 0);

	/* jstr() reuses its buffer: keep copies. */
	snprintf(mp, sizeof(mp), "%s", jstr(r, "block.workdir.mount_point"));
	printf("real machine: work dir %s on %s (%s)\n", real, mp,
	       jstr(r, "block.workdir.fstype"));
	if (strcmp(mp, "/")) {
		size_t len = strlen(mp);

		CHECK(!strncmp(real, mp, len) &&
		      (real[len] == '/' || real[len] == '\0'));
	}
	CHECK(stat(mp, &mst) == 0 && mst.st_dev == st.st_dev);

	types = fstype_for_magic((long)sfs.f_type);
	if (types)
		CHECK(word_in(jstr(r, "block.workdir.fstype"), types));
	else
		printf("real machine: statfs type %#lx not mapped, fstype "
		       "not compared\n",
		       (unsigned long)sfs.f_type);

	CHECK_EQ_STR(jstr(r, "block.workdir.noatime"),
		     svfs.f_flag & ST_NOATIME ? "true" : "false");
	CHECK_EQ_STR(jstr(r, "block.workdir.relatime"),
		     svfs.f_flag & ST_RELATIME ? "true" : "false");
	CHECK(!item_is_unknown(jget(r, "block.workdir.source")));
	CHECK(!item_is_unknown(jget(r, "block.workdir.mount_options")));
	CHECK(!item_is_unknown(jget(r, "block.workdir.super_options")));

	snprintf(dev, sizeof(dev), "%s", jstr(r, "block.workdir.device"));
	if (major(st.st_dev) == 0) {
		char want[128];

		snprintf(want, sizeof(want), "unknown (no block device (%s))",
			 jstr(r, "block.workdir.fstype"));
		CHECK_EQ_STR(jstr(r, "block.workdir.device"), want);
		CHECK_EQ_STR(jstr(r, "block.workdir.disk"), want);
	} else {
		char path[PATH_MAX], want[64], part[PATH_MAX];
		struct stat pst;

		snprintf(path, sizeof(path), "/sys/class/block/%s/dev", dev);
		snprintf(want, sizeof(want), "%u:%u", major(st.st_dev),
			 minor(st.st_dev));
		CHECK(read_str(path, buf, sizeof(buf)) == 0);
		CHECK_EQ_STR(buf, want);
		snprintf(path, sizeof(path), "/sys/class/block/%s/partition",
			 dev);
		if (access(path, F_OK) == 0) {
			/* The partition's directory is inside its disk's. */
			snprintf(part, sizeof(part), "/sys/block/%s/%s",
				 jstr(r, "block.workdir.disk"), dev);
			CHECK(stat(part, &pst) == 0);
		} else {
			CHECK_EQ_STR(jstr(r, "block.workdir.disk"), dev);
		}
	}
}

static void test_real(void)
{
	char dir[] = "/var/tmp/fbtest-block-XXXXXX";
	char tdir[] = "/tmp/fbtest-block-XXXXXX";
	char *wd = mkdtemp(dir);
	struct probe_opts opts = {
		.root = "/",
		.steal_window_ms = 0,
		.sys = &probe_sys_real,
	};
	struct json_object *r = NULL;

	if (!wd)
		wd = mkdtemp(tdir);
	CHECK(wd != NULL);
	if (!wd)
		return;
	opts.work_dir = wd;
	CHECK_OK(probe_run(&opts, &r));
	if (r) {
		check_real_devices(r);
		check_real_workdir(r, wd);
		json_object_put(r);
	}
	/* A work directory that does not exist yet lives where its nearest
	 * existing parent does. */
	{
		char missing[PATH_MAX];

		snprintf(missing, sizeof(missing), "%s/not/yet", wd);
		opts.work_dir = missing;
		r = NULL;
		CHECK_OK(probe_run(&opts, &r));
		if (r) {
			struct json_object *r2 = NULL;

			CHECK_EQ_STR(jstr(r, "block.workdir.path"), missing);
			opts.work_dir = wd;
			CHECK_OK(probe_run(&opts, &r2));
			if (r2) {
				char a[512];

				snprintf(a, sizeof(a), "%s",
					 jstr(r, "block.workdir.mount_point"));
				CHECK_EQ_STR(a,
					     jstr(r2,
						  "block.workdir.mount_point"));
				snprintf(a, sizeof(a), "%s",
					 jstr(r, "block.workdir.device"));
				CHECK_EQ_STR(a, jstr(r2,
						     "block.workdir.device"));
				json_object_put(r2);
			}
			json_object_put(r);
		}
	}
	CHECK_OK(rmdir(wd) < 0 ? -errno : 0);

	/* Usually a tmpfs: no block device behind it. */
	if (access("/dev/shm", F_OK) == 0) {
		opts.work_dir = "/dev/shm";
		r = NULL;
		CHECK_OK(probe_run(&opts, &r));
		if (r) {
			check_real_workdir(r, "/dev/shm");
			json_object_put(r);
		}
	}
}

int main(void)
{
	test_transport();
	test_scheduler();
	test_mountinfo();
	test_kvm_guest();
	test_vps();
	test_baremetal();
	test_old_kernel();
	test_malformed();
	test_real();
	return check_summary();
}
