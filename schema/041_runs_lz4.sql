-- SPDX-License-Identifier: MIT
-- runs' larger values compressed with LZ4 instead of pglz, as
-- run_results' arrays and the comparisons' values already are (issue 37,
-- the ingest rate). A report's row is about 7 KB before compression,
-- over TOAST's 2 KB target, so every stored run compresses the probe's
-- changing sections, the kernel's command line and version, the io_uring
-- opcodes and features, the tags and the costs: pglz took about 50 us a
-- report more than LZ4 for about 60 bytes fewer (docs/performance.md).
-- The rows stored before keep their compression; PostgreSQL reads both.
ALTER TABLE runs ALTER COLUMN kernel_version SET COMPRESSION lz4,
	ALTER COLUMN kernel_cmdline SET COMPRESSION lz4,
	ALTER COLUMN io_uring_opcodes SET COMPRESSION lz4,
	ALTER COLUMN io_uring_features SET COMPRESSION lz4,
	ALTER COLUMN tags SET COMPRESSION lz4,
	ALTER COLUMN probe_rest SET COMPRESSION lz4,
	ALTER COLUMN cost_benchmark SET COMPRESSION lz4,
	ALTER COLUMN cost_wall_s SET COMPRESSION lz4,
	ALTER COLUMN cost_cpu_s SET COMPRESSION lz4,
	ALTER COLUMN cost_peak_memory_bytes SET COMPRESSION lz4,
	ALTER COLUMN cost_written_bytes SET COMPRESSION lz4,
	ALTER COLUMN cost_allowance_s SET COMPRESSION lz4,
	ALTER COLUMN cost_rounds SET COMPRESSION lz4;
