# SPDX-License-Identifier: MIT
"""One report of a synthetic host, for the tests of the fleet-level test
and of drift (test_fleet_change.sh, test_drift.sh): the fixture report
base (tests/fixtures/reports, pbjson's form) as host name of instance
type itype ran it on kernel, starting at started_ms, with run id number n
and its iouring_vs_pread comparison (ratio and interval) times scale."""
import copy
import hashlib


def scaled_report(base, n, name, itype, kernel, started_ms, scale):
    rep = copy.deepcopy(base)
    took = base["finished_unix_ms"] - base["started_unix_ms"]
    rep["run_id"] = "00000000-0000-4000-8000-%012d" % n
    rep["host"]["hostname"] = name
    rep["host"]["instance_type"] = itype
    rep["host"]["machine_id"] = hashlib.md5(name.encode()).hexdigest()
    rep["kernel"]["release"] = kernel
    rep["started_unix_ms"] = started_ms
    rep["finished_unix_ms"] = started_ms + took
    for c in rep["comparisons"]:
        if c["name"] == "iouring_vs_pread":
            for key in ("ratio", "ci_low", "ci_high"):
                c[key] *= scale
    return rep
