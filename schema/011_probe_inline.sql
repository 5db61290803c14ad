-- SPDX-License-Identifier: MIT
-- A run's probe stays in its runs row, compressed, instead of in TOAST
-- chunks (issue 13, bytes on disk).
--
-- The probe is most of a run's bytes: about 10 KB of jsonb. With lz4 and
-- the default toast_tuple_target (2 KB) every row's probe went out of
-- line, 5.4 KB compressed in three TOAST chunks that took about 8.5 KB
-- with their index and the space they left on pages. pglz compresses this
-- JSON to about 4.7 KB, and with toast_tuple_target at its maximum the
-- compressed probe stays in the row as long as the row fits a page: a run
-- then takes about 8.8 KB of runs instead of 11 KB (docs/performance.md).
-- A larger probe (larger hosts) is still moved out of line when the row
-- would not fit, as before.
--
-- Rows already stored keep their layout until they are rewritten
-- (VACUUM FULL runs, or pg_repack); new rows get the new one.

ALTER TABLE runs ALTER COLUMN probe SET COMPRESSION pglz;
ALTER TABLE runs SET (toast_tuple_target = 8160);
