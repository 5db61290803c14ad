-- SPDX-License-Identifier: MIT
-- The probe's unchanging part stored once (issue 37, bytes on disk). Of
-- a probe's sections only meta, host, steal, psi and vmstat change from
-- one run of a host to the next (times, free memory, counters); the
-- others (kernel, virt, labels, thp, hugetlb, io_uring, cpufreq, block,
-- sysctl, pmu, topology: about 7 of its 9.6 KB) are the same in every run
-- of a host on a kernel, and across the hosts of one image and instance
-- type. They move to probe_parts, one row per distinct value keyed by its
-- SHA-256, and runs keeps probe_part (the row) and probe_rest (the
-- changing sections). runs.probe reads as before through the function
-- probe(runs) (functions/15_results.sql): `r.probe` is PostgreSQL's
-- functional notation for probe(r); an unqualified `probe` needs its
-- table's name or alias before it from now on.
--
-- The split is fleetbench_probe_split()'s (functions/20_ingest.sql),
-- spelled here once more for the rows already stored: were the two to
-- differ, a part would be stored twice, and every probe still read whole.

CREATE TABLE probe_parts (
	part_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	digest bytea NOT NULL UNIQUE,
	body jsonb NOT NULL,
	CONSTRAINT probe_parts_body_is_object CHECK (jsonb_typeof(body) = 'object')
);
COMMENT ON TABLE probe_parts IS
	'the sections of probes that do not change between runs of a host, stored once per distinct value (031); runs.probe_part refers to one';

CREATE TEMPORARY TABLE fleetbench_split ON COMMIT DROP AS
SELECT r.run_id, s.part, r.probe - ARRAY(SELECT jsonb_object_keys(s.part)) AS rest,
       sha256(convert_to(s.part::text, 'UTF8')) AS digest
FROM runs AS r,
     LATERAL (SELECT r.probe - '{meta,host,steal,psi,vmstat}'::text[] AS part) AS s;

INSERT INTO probe_parts (digest, body)
SELECT DISTINCT ON (digest) digest, part FROM fleetbench_split;

ALTER TABLE runs ADD COLUMN probe_part bigint, ADD COLUMN probe_rest jsonb;
UPDATE runs AS r SET probe_part = p.part_id, probe_rest = s.rest
FROM fleetbench_split AS s JOIN probe_parts AS p USING (digest)
WHERE s.run_id = r.run_id;
ALTER TABLE runs DROP COLUMN probe,
	ALTER COLUMN probe_part SET NOT NULL,
	ALTER COLUMN probe_rest SET NOT NULL,
	ADD CONSTRAINT runs_probe_part_fkey FOREIGN KEY (probe_part)
		REFERENCES probe_parts (part_id),
	ADD CONSTRAINT runs_probe_rest_is_object
		CHECK (jsonb_typeof(probe_rest) = 'object');
COMMENT ON COLUMN runs.probe_part IS
	'the probe''s sections that do not change between runs (probe_parts); r.probe is the whole probe (probe(runs))';
COMMENT ON COLUMN runs.probe_rest IS
	'the probe''s sections that change between runs: meta, host, steal, psi, vmstat';

-- 011 kept runs' rows whole up to a page (toast_tuple_target = 8160) so
-- that the probe, its largest value, stayed in the row compressed; the
-- row left is about 7 KB of arrays and text uncompressed, one a page.
-- PostgreSQL's default (2 KB) compresses them, in the row or in TOAST:
-- 8.6 -> 5.7 KB a run of bench/ingest's (docs/performance.md).
ALTER TABLE runs RESET (toast_tuple_target);
