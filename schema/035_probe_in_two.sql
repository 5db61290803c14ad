-- SPDX-License-Identifier: MIT
-- The probe in two from the writer (issue 37, the ingest rate). Since 031
-- a run keeps its probe as probe_part (a row of probe_parts, keyed by its
-- digest) and probe_rest; fleetbench_ingest_run() parsed each report's
-- whole probe, split it, and wrote the part back to text for its digest:
-- about 0.4 ms of the backend's 2 ms a report. The collector, which
-- writes the probe's JSON from the typed probe anyway, now writes the two
-- pieces apart: probe_part, whose digest is the SHA-256 of that text
-- (parsed only when no part has that digest), and probe_rest. A writer
-- gives either probe (whole, split by the function as before) or both
-- of these; the function checks the split.

ALTER TYPE fleetbench_report
	ADD ATTRIBUTE probe_part text,
	ADD ATTRIBUTE probe_rest text;
