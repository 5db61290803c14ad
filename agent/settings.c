/* SPDX-License-Identifier: MIT */
/*
 * fleetbench-agent's settings, each declared once: its flag, config key,
 * type, range and help. The config parser, the flag parser and --help are
 * all made from this table (common/cli.h).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cleanup.h"
#include "cmd.h"
#include "tags.h"

#define A(field) offsetof(struct agent_config, field)
#define B(field) offsetof(struct agent_config, bench.field)
#define GiB (1LL << 30)

/* In --help's order; the bench sizes left unset come from the profile. */
const struct config_key agent_settings[] = {
	CLI_FLAG("config", 'c', "FILE", 'c',
		 "agent config (default " DEFAULT_CONFIG " if present)"),
	CLI_FLAG("json", 0, NULL, OPT_JSON, "print JSON instead of a table"),
	CLI_FLAG("root", 0, "DIR", OPT_ROOT,
		 "probe: read kernel files below DIR (default /)"),
	CONFIG_KEY("agent", "provider", CONFIG_STR, A(provider), NULL, 0, 0,
		   "provider", "NAME",
		   "provider label (overrides config and DMI)"),
	CONFIG_KEY("agent", "instance_type", CONFIG_STR, A(instance_type),
		   NULL, 0, 0, "instance-type", "NAME",
		   "instance type label (else inferred from DMI where\n"
		   "it tells)"),
	CONFIG_KEY("agent", "region", CONFIG_STR, A(region), NULL, 0, 0,
		   "region", "NAME", "region label"),
	{
		.section = "agent",
		.name = "tag",
		.type = CONFIG_LINES, /* repeats: one tag per line */
		.offset = A(tags),
		.flag = "tag",
		.arg = "KEY=VALUE",
		.check = tags_check_text,
		.unique_before = '=',
		.help = "run: tag the report (repeat; up to 16; KEY\n"
			"[a-z][a-z0-9_]{0,31}, VALUE 1-64 printable);\n"
			"overrides agent.conf's tag line of the same KEY;\n"
			"a KEY twice in the file, or in the flags, is refused",
	},
	CONFIG_KEY("agent", "work_dir", CONFIG_STR, A(work_dir), "/var/tmp", 0,
		   0, "dir", "PATH",
		   "work directory: its filesystem is probed, benchmark\n"
		   "files go there (default /var/tmp);\n"
		   "keygen: where the keys go (default " DEFAULT_KEY_DIR ")"),
	CONFIG_KEY("agent", "steal_window_ms", CONFIG_INT, A(steal_window_ms),
		   "1000", 0, 60000, "steal-window", "MS",
		   "probe's CPU steal window, 0 skips (default 1000)"),
	CLI_HEADING("bench and run:"),
	CONFIG_KEY("bench", "profile", CONFIG_STR, B(profile), "standard", 0, 0,
		   "profile", "NAME",
		   "quick (<= 30 s), standard (<= 3 min, default), full"),
	CLI_FLAG("only", 0, "NAME[,NAME]", OPT_ONLY,
		 "run only these benchmarks: thp_chase, thp_fault,\n"
		 "randread, seqwrite, false_sharing, core_latency,\n"
		 "writeback, mmap_read, membw; io_scaling, database\n"
		 "(full profile only unless named)"),
	CONFIG_KEY("bench", "repeats", CONFIG_INT, B(repeats), NULL, 1, 1000,
		   "repeats", "N",
		   "exactly N repeats of every variant (default: the\n"
		   "profile's least, then more until the intervals are\n"
		   "tight)"),
	CONFIG_KEY("bench", "target_pct", CONFIG_INT, B(target_pct), NULL, 1,
		   100, "target-pct", "PCT",
		   "repeat until every interval is within PCT% of its\n"
		   "ratio (quick 10, standard and full 5)"),
	CONFIG_KEY("bench", "budget_s", CONFIG_INT, B(budget_s), NULL, 1,
		   86400, "budget", "S",
		   "each benchmark's repeats stop before S seconds\n"
		   "(quick 3, standard 60, full 240)"),
	CONFIG_KEY("bench", "max_repeats", CONFIG_INT, B(max_repeats), NULL, 1,
		   1000, "max-repeats", "N",
		   "at most N repeats (quick 8, standard 20, full 40)"),
	CONFIG_KEY("bench", "max_seconds", CONFIG_INT, B(max_seconds), NULL, 5,
		   604800, "max-seconds", "S",
		   "the whole run within S seconds: each benchmark's\n"
		   "allowance is its share of them (default: the\n"
		   "profile's budget, quick 30, standard 180, full 900)"),
	CONFIG_KEY("bench", "chase_bytes", CONFIG_SIZE, B(chase_bytes), NULL,
		   1 << 20, 256 * GiB, "chase-bytes", "SIZE",
		   "thp_chase buffer size"),
	CONFIG_KEY("bench", "chase_accesses", CONFIG_INT, B(chase_accesses),
		   NULL, 1000, 100000000000LL, "chase-accesses", "N",
		   "thp_chase dependent loads per repeat"),
	CONFIG_KEY("bench", "fault_bytes", CONFIG_SIZE, B(fault_bytes), NULL,
		   4 << 20, 256 * GiB, "fault-bytes", "SIZE",
		   "thp_fault region size"),
	CONFIG_KEY("bench", "file_bytes", CONFIG_SIZE, B(file_bytes), NULL,
		   4 << 20, 16384 * GiB, "file-bytes", "SIZE",
		   "randread file size (written in full first)"),
	CONFIG_KEY("bench", "io_ms", CONFIG_INT, B(io_ms), NULL, 10, 3600000,
		   "io-ms", "MS", "randread time per engine per repeat"),
	CONFIG_KEY("bench", "iodepth", CONFIG_INT, B(iodepth), NULL, 1, 4096,
		   "iodepth", "N", "io_uring and libaio queue depth"),
	CONFIG_KEY("bench", "seq_bytes", CONFIG_SIZE, B(seq_bytes), NULL,
		   1 << 20, 16384 * GiB, "seq-bytes", "SIZE",
		   "seqwrite bytes per engine per repeat"),
	CONFIG_KEY("bench", "seq_block", CONFIG_SIZE, B(seq_block), NULL, 4096,
		   64 << 20, "seq-block", "SIZE",
		   "seqwrite block size (a multiple of 4096)"),
	CONFIG_KEY("bench", "fs_increments", CONFIG_INT, B(fs_increments),
		   NULL, 1000, 100000000000LL, "fs-increments", "N",
		   "false_sharing increments per thread"),
	CONFIG_KEY("bench", "wb_bytes", CONFIG_SIZE, B(wb_bytes), NULL,
		   1 << 20, 16384 * GiB, "wb-bytes", "SIZE",
		   "writeback bytes written per repeat"),
	CONFIG_KEY("bench", "wb_fsync_bytes", CONFIG_SIZE, B(wb_fsync_bytes),
		   NULL, 128 << 10, 16384 * GiB, "wb-fsync-bytes", "SIZE",
		   "writeback: an fsync every SIZE written"),
	CONFIG_KEY("bench", "mmap_bytes", CONFIG_SIZE, B(mmap_bytes), NULL,
		   2 << 20, 256 * GiB, "mmap-bytes", "SIZE",
		   "mmap_read file size (memfd, a multiple of 2 MiB)"),
	CONFIG_KEY("bench", "mmap_accesses", CONFIG_INT, B(mmap_accesses),
		   NULL, 1000, 100000000000LL, "mmap-accesses", "N",
		   "mmap_read dependent loads per repeat"),
	CONFIG_KEY("bench", "scaling_ms", CONFIG_INT, B(scaling_ms), NULL, 10,
		   3600000, "scaling-ms", "MS", "io_scaling time per point per repeat"),
	CONFIG_KEY("bench", "bw_bytes", CONFIG_SIZE, B(bw_bytes), NULL,
		   1 << 20, 256 * GiB, "bw-bytes", "SIZE",
		   "membw array size (x3, raised to 4x the LLC)"),
	CONFIG_KEY("bench", "steal_threshold_pct", CONFIG_INT,
		   B(steal_threshold_pct), "5", 0, 100, "steal-threshold", "PCT",
		   "flag repeats with more steal as noisy (default 5)"),
	CONFIG_KEY("bench", "psi_cpu_threshold_pct", CONFIG_INT,
		   B(psi_cpu_threshold_pct), "50", 0, 100,
		   "psi-cpu-threshold", "PCT",
		   "flag repeats with more CPU pressure (PSI cpu some,\n"
		   "% of the repeat) as noisy (default 50)"),
	CONFIG_KEY("bench", "psi_io_threshold_pct", CONFIG_INT,
		   B(psi_io_threshold_pct), "15", 0, 100000,
		   "psi-io-threshold", "PCT",
		   "I/O benchmarks: flag repeats with more I/O pressure\n"
		   "beyond their own waits (% of a vCPU) as noisy\n"
		   "(default 15; docs/bench.md)"),
	CONFIG_KEY("bench", "seed", CONFIG_INT, B(seed), NULL, 1, INT64_MAX,
		   "seed", "N", "PRNG seed (default: from the clock, reported)"),
	CONFIG_KEY("bench", "reserve_hugetlb", CONFIG_INT, B(reserve_hugetlb),
		   "0", 0, 1 << 24, "reserve-hugetlb", "N",
		   "reserve N 2 MiB pages for the hugetlb variants\n"
		   "(root only; the pool is restored afterwards)"),
	CONFIG_KEY("bench", "writeback_dirty_bytes", CONFIG_SIZE,
		   B(writeback_dirty_bytes), "0", 0, 16384 * GiB,
		   "writeback-dirty-bytes", "BYTES",
		   "writeback: also run variant tuned under vm.dirty_bytes\n"
		   "BYTES, background half (root only; restored)"),
	CONFIG_KEY("bench", "randread_file", CONFIG_STR, B(randread_file), NULL,
		   0, 0, "randread-file", "PATH",
		   "read this existing file instead of writing one\n"
		   "(it is kept)"),
	CONFIG_KEY("bench", "with_database", CONFIG_BOOL, B(with_database),
		   "false", 0, 0, "with-database", NULL,
		   "run the database benchmark (full profile, or --only\n"
		   "database): a throwaway PostgreSQL under each THP mode\n"
		   "(root only; the THP mode is restored afterwards)"),
	CONFIG_KEY("bench", "db_scale", CONFIG_INT, B(db_scale), NULL, 1,
		   100000, "db-scale", "N",
		   "database: pgbench scale (about 15 MB each)"),
	CONFIG_KEY("bench", "db_rate", CONFIG_INT, B(db_rate), NULL, 1,
		   10000000, "db-rate", "TPS",
		   "database: pgbench --rate, transactions per second"),
	CONFIG_KEY("bench", "db_seconds", CONFIG_INT, B(db_seconds), NULL, 1,
		   3600, "db-seconds", "S",
		   "database: pgbench seconds per THP mode per repeat"),
	CONFIG_KEY("bench", "pg_bindir", CONFIG_STR, B(pg_bindir), NULL, 0, 0,
		   "pg-bindir", "DIR",
		   "database: where initdb, postgres and pgbench are\n"
		   "(default /usr/lib/postgresql/15/bin)"),
	/* the per-profile defaults and why: bench_params.c's profiles table */
	CONFIG_KEY("bench", "timeout_s", CONFIG_INT, B(timeout_s), NULL, 1,
		   604800, "bench-timeout", "S",
		   "kill a benchmark running longer, report it failed\n"
		   "(default by profile: 120, 600, 1800)"),
	CLI_HEADING("run, send and spool:"),
	CLI_FLAG("no-send", 0, NULL, OPT_NO_SEND,
		 "run: spool the report, do not send it"),
	CLI_FLAG("if-kernel-changed", 0, NULL, OPT_IF_KERNEL_CHANGED,
		 "run: only when the running kernel (uname release\n"
		 "and version) is not the last delivered report's;\n"
		 "else log it and exit 0 (boot timer, docs/agent.md)"),
	CONFIG_KEY("agent", "spool_dir", CONFIG_STR, A(spool_dir),
		   "/var/lib/fleetbench/spool", 0, 0, "spool-dir", "DIR",
		   "spool directory: reports wait there until the\n"
		   "collector has stored them\n"
		   "(default /var/lib/fleetbench/spool)"),
	CONFIG_KEY("agent", "spool_limit", CONFIG_SIZE, A(spool_limit), "256M",
		   0, 0, "spool-limit", "SIZE",
		   "bytes the spool may hold, 0: no limit (default 256M)"),
	CONFIG_KEY("agent", "state_dir", CONFIG_STR, A(state_dir),
		   "/var/lib/fleetbench/state", 0, 0, "state-dir", "DIR",
		   "state directory: the kernel of the last delivered\n"
		   "report, for --if-kernel-changed (created 0700, not\n"
		   "its parents; default /var/lib/fleetbench/state)"),
	CONFIG_KEY("agent", "textfile_dir", CONFIG_STR, A(textfile_dir), NULL,
		   0, 0, "textfile-dir", "DIR",
		   "run: also write DIR/fleetbench.prom for node_exporter's\n"
		   "textfile collector (checked before the run)"),
	{
		.section = "collector",
		.name = "endpoints",
		.type = CONFIG_STR,
		.offset = A(endpoints),
		.flag = "endpoint",
		.arg = "URL[,URL]",
		.list = true, /* repeats: joined */
		.help = "collector tcp://HOST:PORT; repeat or list several\n"
			"to fail over between them, tried in order",
	},
	CONFIG_KEY("collector", "server_public_key", CONFIG_STR,
		   A(server_public_key), NULL, 0, 0, "server-key", "FILE",
		   "the collector's public key (NAME.pub)"),
	CONFIG_KEY("collector", "agent_key", CONFIG_STR, A(agent_key),
		   DEFAULT_KEY_DIR "/agent.key", 0, 0, "agent-key", "FILE",
		   "this agent's secret key (mode 0600, NAME.pub beside\n"
		   "it; default " DEFAULT_KEY_DIR "/agent.key)"),
	CONFIG_KEY("collector", "send_timeout_ms", CONFIG_INT,
		   A(send_timeout_ms), "5000", 10, 3600000, "send-timeout", "MS",
		   "wait for an Ack this long, then reconnect (default 5000)"),
	CONFIG_KEY("collector", "retries", CONFIG_INT, A(retries), "3", 0, 100,
		   "retries", "N",
		   "reconnects per endpoint before failing over (default 3)"),
	CONFIG_KEY("collector", "backoff_ms", CONFIG_INT, A(backoff_ms), "500",
		   0, 3600000, "backoff", "MS",
		   "first reconnect delay, doubling, with jitter (default 500)"),
	CONFIG_KEY("collector", "backoff_max_ms", CONFIG_INT, A(backoff_max_ms),
		   "30000", 0, 3600000, "backoff-max", "MS",
		   "longest reconnect delay (default 30000)"),
	CONFIG_KEY("collector", "retry_wait_max_ms", CONFIG_INT,
		   A(retry_wait_max_ms), "900000", 0, 86400000, "retry-wait-max",
		   "MS",
		   "wait out a collector's retry-after hint up to this\n"
		   "within the pass; a longer one ends the pass\n"
		   "(default 900000; 0: never wait)"),
	CONFIG_KEY("collector", "endpoint_order", CONFIG_STR, A(endpoint_order),
		   "listed", 0, 0, "endpoint-order", "ORDER",
		   "listed: each pass starts at the first endpoint;\n"
		   "random: at a random one, then in turn (spreads\n"
		   "a fleet over several collectors; default listed)"),
	/* a switch: sets true */
	CONFIG_KEY("collector", "insecure", CONFIG_BOOL, A(insecure), "false", 0,
		   0, "insecure", NULL, "plaintext, no CURVE: for tests only"),
	CLI_HEADING("keygen:"),
	CLI_FLAG("name", 0, "NAME", OPT_NAME, "key file name (default agent)"),
	CLI_FLAG("help", 'h', NULL, 'h', "show this help"),
	CLI_FLAG("version", 'V', NULL, 'V', "show the version"),
};

const size_t agent_n_settings = ARRAY_SIZE(agent_settings);

static const struct cli_help help = {
	.head = "usage: fleetbench-agent COMMAND [OPTIONS]\n"
		"\n"
		"commands:\n"
		"  probe    report what this host's kernel and hypervisor allow (docs/probe.md)\n"
		"  bench    run the benchmark suite (docs/bench.md)\n"
		"  run      probe and bench, in one report; with a collector configured (or\n"
		"           --no-send) the report is spooled, then the spool is sent\n"
		"  send     send the spooled reports to the collector (docs/agent.md)\n"
		"  spool    list the spooled reports and the rejected and quarantined counts\n"
		"  keygen   write this agent's CURVE keypair: DIR/NAME.key (0600), DIR/NAME.pub\n"
		"  show FILE  print a spooled (or rejected, quarantined, bare packed) report\n"
		"           as JSON, every field of the wire Report (docs/wire.md)\n",
	.keys = "SIZE takes K, M, G suffixes (powers of 1024). The options that set a value\n"
		"(but --config, --root, --only and --name) are also keys of the config file,\n"
		"by section, the option in brackets where it is not the key with '_'\n"
		"written '-':\n",
	.tail = "\n"
		"exit status: 0 done (run, send: every report of the pass delivered);\n"
		"1 failure (also: a report was rejected by the collector or found damaged\n"
		"and quarantined); 2 bad usage or config; 3 reports stay spooled because no\n"
		"collector took them (unreachable or RETRY_LATER): `send` delivers them\n"
		"later; 4 bench, run: done (printed, delivered), but a benchmark failed\n"
		"(crashed, timed out, or measured a figure out of bounds: its results\n"
		"say \"failed\"); 130 interrupted.\n",
};

void agent_usage(FILE *f)
{
	cli_usage(f, &help, agent_settings, agent_n_settings);
}
