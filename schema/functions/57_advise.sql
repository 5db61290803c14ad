-- SPDX-License-Identifier: MIT
-- `fleetbench advise` (issue 40): from the stored figures of one instance
-- type on one kernel, what to set (the THP mode, the I/O engine, SQPOLL,
-- registered buffers, a hugetlb reservation), each point with its
-- evidence and how sure it is. A function file (schema/README.md).

-- est's estimate of the figure named name (NULL when not declared).
CREATE OR REPLACE FUNCTION fleetbench_est(est fleetbench_estimate[],
					  name text)
RETURNS fleetbench_estimate
LANGUAGE sql STABLE AS $$
	SELECT est[f.id] FROM figures AS f WHERE f.name = $2
$$;

-- An estimate in words: "1.383 [1.350, 1.410], 9 runs", or its median
-- alone with too few runs for an interval; NULL when not measured.
CREATE OR REPLACE FUNCTION fleetbench_est_text(e fleetbench_estimate)
RETURNS text
LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE WHEN e.median IS NULL THEN NULL
		    WHEN e.ci_low IS NULL THEN format('%s (%s runs, too few for an interval)',
			fleetbench_round(e.median::numeric), e.n)
		    ELSE format('%s [%s, %s], %s runs',
			fleetbench_round(e.median::numeric),
			fleetbench_round(e.ci_low::numeric),
			fleetbench_round(e.ci_high::numeric), e.n) END
$$;

-- How sure an estimate is that it is above (dir 1) or below (dir -1) 1.
CREATE OR REPLACE FUNCTION fleetbench_est_side(e fleetbench_estimate)
RETURNS integer
LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE WHEN e.ci_low > 1 THEN 1 WHEN e.ci_high < 1 THEN -1
		    ELSE 0 END
$$;

-- The advice on a figure too few runs measured (e: NULL, or no interval)
-- to say more: what, its estimate, and why (else: run more).
CREATE OR REPLACE FUNCTION fleetbench_advice_unsure(e fleetbench_estimate,
						    what text, why text,
						    OUT advice text,
						    OUT sure text,
						    OUT evidence text)
LANGUAGE sql IMMUTABLE AS $$
	SELECT 'cannot say yet',
	       CASE WHEN e.median IS NULL THEN 'not measured'
		    ELSE 'too few runs for an interval' END,
	       format('%s %s: %s', what,
		      coalesce(fleetbench_est_text(e), 'not measured'),
		      coalesce(nullif(why, ''),
			       'run the agent on more hosts or more often'))
$$;

/*
 * What to set on provider's instance_type on kernel_release (NULL: its newest,
 * by first run), from the runs of each kernel's default method (or
 * method_key's), as `fleetbench kernels` selects them. One row per topic:
 * thp, io, sqpoll, registered_buffers, hugetlb; advice says what to set,
 * sure how sure (measured beyond noise, within noise, too few runs, not
 * measured), evidence the figures behind it. No row when the instance
 * type has no run on that kernel.
 */
CREATE OR REPLACE FUNCTION fleet_advise(provider text, instance_type text,
					kernel_release text DEFAULT NULL,
					method_key text DEFAULT NULL)
RETURNS TABLE (kernel text, method text, topic text, advice text,
	       sure text, evidence text)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_variable
DECLARE
	k record; -- the kernel's row of fleet_kernels_rows(), and prev_*: the
		  -- kernel before it
	t fleetbench_estimate; -- thp_speedup
	hf fleetbench_estimate; -- thp_huge_fraction
	fp fleetbench_estimate; -- thp_fault_p99_us
	db fleetbench_estimate; -- db_p99_always_vs_never
	vp fleetbench_estimate; -- iouring_vs_pread
	vl fleetbench_estimate; -- iouring_vs_libaio
	sv fleetbench_estimate; -- sqpoll_vs_iouring
	h2 fleetbench_estimate; -- hugetlb_2m_speedup
	h1 fleetbench_estimate; -- hugetlb_1g_speedup
	hb fleetbench_estimate; -- the better of the two
	hb_kb integer;
	refusal text;
	setup text;
	chase bigint;
	not_db constant text := 'database p99 under THP always: not measured: run the full profile with --with-database';
BEGIN
	-- the kernel and, beside it, the one before it as kernels orders them
	SELECT x.*, lag(x.kernel) OVER w AS prev_kernel,
	       lag(x.method) OVER w AS prev_method,
	       lag(x.est) OVER w AS prev_est
	INTO k
	FROM fleet_kernels_rows(jsonb_build_object('provider', provider,
					'instance_type', instance_type),
				NULL, method_key, NULL) AS x
	WINDOW w AS (ORDER BY x.first_run, x.kernel)
	ORDER BY (kernel_release IS NULL OR x.kernel = kernel_release) DESC,
		 x.first_run DESC, x.kernel DESC
	LIMIT 1;
	IF NOT FOUND OR (kernel_release IS NOT NULL
			 AND k.kernel IS DISTINCT FROM kernel_release) THEN
		RETURN;
	END IF;
	kernel := k.kernel;
	method := k.method;
	t := fleetbench_est(k.est, 'thp_speedup');
	hf := fleetbench_est(k.est, 'thp_huge_fraction');
	fp := fleetbench_est(k.est, 'thp_fault_p99_us');
	db := fleetbench_est(k.est, 'db_p99_always_vs_never');
	vp := fleetbench_est(k.est, 'iouring_vs_pread');
	vl := fleetbench_est(k.est, 'iouring_vs_libaio');
	sv := fleetbench_est(k.est, 'sqpoll_vs_iouring');
	h2 := fleetbench_est(k.est, 'hugetlb_2m_speedup');
	h1 := fleetbench_est(k.est, 'hugetlb_1g_speedup');

	-- THP: the database's p99 first, then whether THP is granted, then
	-- the chase's gain
	topic := 'thp';
	IF db.median IS NOT NULL AND db.ci_low > 1 THEN
		advice := 'madvise, not always: the database''s p99 is worse under always';
		sure := 'measured beyond noise';
		evidence := format('database p99 under THP always over never %s; pointer chase with THP %s; the mode now: %s',
				   fleetbench_est_text(db), coalesce(fleetbench_est_text(t), 'not measured'),
				   coalesce(k.thp_mode, 'unknown'));
	ELSIF hf.median = 0 THEN
		advice := 'never (or madvise): THP is never granted here, the mode changes nothing';
		sure := 'measured';
		evidence := format('share of the chase buffer backed by huge pages %s; the mode now: %s',
				   fleetbench_est_text(hf), coalesce(k.thp_mode, 'unknown'));
	ELSIF fleetbench_est_side(t) = 1 THEN
		advice := CASE WHEN db.median IS NOT NULL AND db.ci_high < 1
			       THEN 'always, or madvise: THP speeds memory up and the database''s p99 is not worse under always'
			       ELSE 'madvise, with MADV_HUGEPAGE on large heaps: THP speeds memory up here' END;
		sure := 'measured beyond noise';
		evidence := format('THP speedup of the pointer chase %s; first-touch p99 with THP (us) %s; %s',
				   fleetbench_est_text(t),
				   coalesce(fleetbench_est_text(fp), 'not measured'),
				   CASE WHEN db.median IS NULL THEN not_db
					ELSE format('database p99 always over never %s', fleetbench_est_text(db)) END);
	ELSIF fleetbench_est_side(t) = -1 THEN
		advice := 'never: THP makes memory slower here';
		sure := 'measured beyond noise';
		evidence := format('THP speedup of the pointer chase %s', fleetbench_est_text(t));
	ELSIF t.ci_low IS NULL THEN
		SELECT * INTO advice, sure, evidence
		FROM fleetbench_advice_unsure(t, 'THP speedup of the pointer chase', '');
	ELSE
		advice := format('keep the mode (%s): THP gains nothing beyond noise here',
				 coalesce(k.thp_mode, 'unknown'));
		sure := 'within noise';
		evidence := format('THP speedup of the pointer chase %s', fleetbench_est_text(t));
	END IF;
	RETURN NEXT;

	-- the I/O engine: io_uring where it is usable and beats libaio
	topic := 'io';
	-- the runs' io_uring setup and SQPOLL refusal, most common first
	SELECT mode() WITHIN GROUP (ORDER BY r.io_uring_setup),
	       mode() WITHIN GROUP (ORDER BY r.sqpoll)
		       FILTER (WHERE r.sqpoll IS DISTINCT FROM 'ok')
	INTO setup, refusal
	FROM runs AS r
	WHERE r.provider = fleet_advise.provider
	      AND r.instance_type = fleet_advise.instance_type
	      AND r.kernel_release = k.kernel AND r.method = k.method;
	IF k.iouring_share = 0 THEN
		advice := 'libaio (or pread): io_uring is not usable here';
		sure := 'measured';
		evidence := format('io_uring setup: %s in every run', coalesce(setup, 'unknown'));
	ELSIF k.iouring_share < 1 THEN
		advice := 'libaio: io_uring is usable on some runs only';
		sure := 'measured';
		evidence := format('io_uring usable in %s%% of runs', round(100 * k.iouring_share));
	ELSIF fleetbench_est_side(vl) = -1 THEN
		advice := 'libaio, not io_uring: io_uring is slower than libaio here';
		sure := 'measured beyond noise';
		evidence := format('io_uring over libaio %s; io_uring over pread %s',
				   fleetbench_est_text(vl), coalesce(fleetbench_est_text(vp), 'not measured'));
	ELSIF fleetbench_est_side(vl) = 1 THEN
		advice := 'io_uring: it beats libaio here';
		sure := 'measured beyond noise';
		evidence := format('io_uring over libaio %s; io_uring over pread %s',
				   fleetbench_est_text(vl), coalesce(fleetbench_est_text(vp), 'not measured'));
	ELSIF fleetbench_est_side(vp) = 1 THEN
		advice := 'io_uring or libaio, alike within noise; either beats pread';
		sure := 'measured beyond noise (over pread)';
		evidence := format('io_uring over pread %s; io_uring over libaio %s',
				   fleetbench_est_text(vp), coalesce(fleetbench_est_text(vl), 'not measured'));
	ELSIF vp.ci_low IS NULL THEN
		SELECT * INTO advice, sure, evidence
		FROM fleetbench_advice_unsure(vp, 'io_uring over pread', '');
	ELSE
		advice := 'pread does as well: no asynchronous engine gains beyond noise';
		sure := 'within noise';
		evidence := format('io_uring over pread %s', fleetbench_est_text(vp));
	END IF;
	-- what this kernel did to the gain
	IF k.prev_kernel IS NOT NULL AND k.prev_method = k.method
	   AND (fleetbench_est(k.prev_est, 'iouring_vs_pread')).ci_low > vp.ci_high THEN
		evidence := evidence || format('; the gain over pread fell with this kernel (%s on %s)',
			fleetbench_est_text(fleetbench_est(k.prev_est, 'iouring_vs_pread')), k.prev_kernel);
	END IF;
	RETURN NEXT;

	-- SQPOLL: refused, or worth it only beyond noise
	topic := 'sqpoll';
	IF k.sqpoll_share = 0 THEN
		advice := 'no SQPOLL: the kernel refuses it here';
		sure := 'measured';
		evidence := format('an SQPOLL ring''s setup failed with %s in every run',
				   coalesce(refusal, 'an error'));
	ELSIF k.sqpoll_share < 1 THEN
		advice := 'no SQPOLL: the kernel refuses it on some runs';
		sure := 'measured';
		evidence := format('SQPOLL permitted in %s%% of runs (else %s)',
				   round(100 * k.sqpoll_share), coalesce(refusal, 'an error'));
	ELSIF sv.ci_low IS NULL THEN
		SELECT * INTO advice, sure, evidence
		FROM fleetbench_advice_unsure(sv, 'IOPS with SQPOLL over without',
			CASE WHEN k.failures LIKE '%io_uring_sqpoll%'
			     THEN format('its variant failed (%s)', k.failures)
			     ELSE '' END);
	ELSIF fleetbench_est_side(sv) = 1 THEN
		advice := 'SQPOLL: its polling thread pays here';
		sure := 'measured beyond noise';
		evidence := format('IOPS with SQPOLL over without %s', fleetbench_est_text(sv));
	ELSE
		advice := CASE WHEN sv.ci_high < 1
			       THEN 'no SQPOLL: it is slower here'
			       ELSE 'no SQPOLL: it gains nothing beyond noise here' END;
		sure := CASE WHEN sv.ci_high < 1 THEN 'measured beyond noise'
			     ELSE 'within noise' END;
		evidence := format('IOPS with SQPOLL over without %s',
				   fleetbench_est_text(sv));
	END IF;
	RETURN NEXT;

	topic := 'registered_buffers';
	advice := 'cannot say';
	sure := 'not measured';
	evidence := 'this agent does not measure registered buffers (IORING_REGISTER_BUFFERS)';
	RETURN NEXT;

	-- a hugetlb reservation: worth it where it beats THP beyond noise
	topic := 'hugetlb';
	hb := CASE WHEN coalesce(h1.median, 0) > coalesce(h2.median, 0) THEN h1 ELSE h2 END;
	hb_kb := CASE WHEN coalesce(h1.median, 0) > coalesce(h2.median, 0) THEN 1048576 ELSE 2048 END;
	SELECT m.chase_bytes INTO chase FROM methods AS m WHERE m.key = k.method;
	IF hb.median IS NULL THEN
		advice := 'cannot say';
		sure := 'not measured';
		evidence := 'no hugetlb pool was free on these runs: reserve pages (vm.nr_hugepages) on a host and run the agent there';
	ELSIF hb.ci_low > coalesce(t.ci_high, t.median) THEN
		advice := format('worth it: reserve %s pages, one per %s of memory to back%s',
				 CASE hb_kb WHEN 2048 THEN '2 MiB' ELSE '1 GiB' END,
				 CASE hb_kb WHEN 2048 THEN '2 MiB' ELSE 'GiB' END,
				 CASE WHEN chase > 0 THEN format(' (%s for the chase''s %s MiB)',
					ceil(chase / (hb_kb * 1024.0)), chase / 1048576) ELSE '' END);
		sure := 'measured beyond noise';
		evidence := format('speedup of the pointer chase with %s pages %s, with THP %s',
				   CASE hb_kb WHEN 2048 THEN '2 MiB' ELSE '1 GiB' END,
				   fleetbench_est_text(hb), coalesce(fleetbench_est_text(t), 'not measured'));
	ELSE
		advice := 'not worth it: hugetlb pages gain no more than THP here';
		sure := CASE WHEN hb.ci_low IS NULL THEN 'too few runs for an interval'
			     ELSE 'within noise' END;
		evidence := format('speedup of the pointer chase with %s pages %s, with THP %s',
				   CASE hb_kb WHEN 2048 THEN '2 MiB' ELSE '1 GiB' END,
				   fleetbench_est_text(hb), coalesce(fleetbench_est_text(t), 'not measured'));
	END IF;
	RETURN NEXT;
END
$$;

COMMENT ON FUNCTION fleet_advise IS
	'what to set on one instance type and kernel (THP mode, I/O engine, SQPOLL, registered buffers, hugetlb), each with its evidence and how sure (docs/queries.md, "fleetbench advise")';
