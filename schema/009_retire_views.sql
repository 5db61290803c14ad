-- SPDX-License-Identifier: MIT
-- Retires the views of 002_views.sql, which 004's fleet_compare and
-- run_figures replaced: thp_gain and iouring_gain (per run: run_figures
-- holds the same figures, comparisons and bench_metrics their intervals
-- and medians) and fleet_comparison (per group: fleet_compare, with
-- intervals, per method). A view of the database's users over one of them
-- makes this migration fail, naming it: drop it first.
--
-- From here on, functions and views live in schema/functions, re-applied
-- by migrate when they change (schema/README.md); migrations create and
-- change tables.

DROP VIEW IF EXISTS fleet_comparison, iouring_gain, thp_gain;
