#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""New metrics in spooled reports, and the figures compare --metric owes.

tests/integration/test_metric.sh: a newer agent's benchmark measures
metrics that nothing in schema/ or collector/ names. This puts them into
the reports fleetgen spooled (docs/spool.md: a 64-byte header, then the
packed protobuf Report), so that `fleetbench-agent send` delivers them
through the real collector, and computes on its own what `fleetbench
compare --metric` must answer.

  spool_metric.py add SPOOL_ADD_METRIC SPOOL_DIR MANIFEST SAMPLES_JSON
      draws for every run of the manifest the samples of the metric
      zz_new_metric (widgets, 4 or 5 samples) of its randread/io_uring
      variant, and for the runs of provider gcp those of a new benchmark
      zz_new_bench, variant a, measuring zz_new_metric (widgets) and
      zz_other (s); writes them as {run_id: {"BENCH/VARIANT/METRIC":
      [samples]}}; then SPOOL_ADD_METRIC (tests/integration/
      spool_add_metric.c) puts them into the spooled reports with the
      project's spool and codec
  spool_metric.py expect SAMPLES_JSON MANIFEST NAME KEY[,KEY...]
      prints per group of the keys (provider, instance_type, kernel,
      host), in key order: the keys, hosts, runs, few_runs (t/f), median,
      median_lo, median_hi, comma-separated as psql --csv prints them
  spool_metric.py cols CSV_FILE COLUMN...
      prints those columns of each row of a CSV file (RFC 4180, as
      fleetbench --format csv writes it) but the header, comma-separated

The samples are drawn here (random.Random(run_id): the same on every run);
the reports are read, changed, validated and written back by the C tool
alone, with protobuf-c and agent/ship/spool.c, never by hand.
"""
import csv
import json
import math
import random
import subprocess
import sys
from decimal import ROUND_HALF_UP, Decimal

# name: unit, of every metric `add` puts into the reports
UNITS = {
    "randread/io_uring/zz_new_metric": "widgets",
    "zz_new_bench/a/zz_new_metric": "widgets",
    "zz_new_bench/a/zz_other": "s",
}


def manifest(path):
    """run_id: (provider, instance_type, host, kernel)"""
    runs = {}
    with open(path) as f:
        for line in f:
            run_id, provider, itype, host, kernel = line.split("\t")[:5]
            runs[run_id] = (provider, itype, host, kernel)
    return runs


def add(tool, spool, manifest_path, out_path):
    runs = manifest(manifest_path)
    samples = {}
    for run_id, (provider, _, _, _) in runs.items():
        rnd = random.Random(run_id)
        mine = {}
        # 4 or 5 samples, multiples of 0.25: every median is exact
        n = rnd.choice((4, 5))
        mine["randread/io_uring/zz_new_metric"] = [
            rnd.randint(40, 4000) / 4 for _ in range(n)]
        if provider == "gcp":
            mine["zz_new_bench/a/zz_new_metric"] = [
                rnd.randint(10, 99) for _ in range(3)]
            mine["zz_new_bench/a/zz_other"] = [
                rnd.randint(10, 99) / 10000 for _ in range(3)]
        samples[run_id] = mine
    with open(out_path, "w") as f:
        json.dump(samples, f, indent=1, sort_keys=True)
    units = ["--unit=%s=%s" % u for u in sorted(UNITS.items())]
    # its "N reports changed" to stderr: fleetgen's stdout is the manifest
    r = subprocess.run([tool] + units + [spool, out_path], stdout=sys.stderr)
    if r.returncode:
        sys.exit(r.returncode)


def median(sorted_values):
    n = len(sorted_values)
    return (sorted_values[(n + 1) // 2 - 1] + sorted_values[n // 2]) / 2


def median_rank(n):
    """The largest k with P(B < k) <= 0.025, B ~ Binomial(n, 1/2)."""
    k = 0
    cdf = 0.0
    for i in range(n + 1):
        cdf += math.comb(n, i) / 2 ** n
        if cdf > 0.025:
            break
        k = i + 1
    return k


def shown(x):
    """As the SQL rounds: three decimals, three significant digits
    below 0.1."""
    if x is None:
        return ""
    d = Decimal(repr(x))
    places = 3 if x == 0 or abs(x) >= 0.1 else \
        2 - math.floor(math.log10(abs(x)))
    return str(d.quantize(Decimal(1).scaleb(-places), ROUND_HALF_UP))


def expect(samples_path, manifest_path, name, keys):
    runs = manifest(manifest_path)
    with open(samples_path) as f:
        samples = json.load(f)
    index = {"provider": 0, "instance_type": 1, "host": 2, "kernel": 3}
    groups = {}
    for run_id, mine in samples.items():
        if name not in mine:
            continue
        group = tuple(runs[run_id][index[k]] for k in keys)
        groups.setdefault(group, []).append(
            (median(sorted(mine[name])), runs[run_id][2]))
    for group in sorted(groups):
        values = sorted(v for v, _ in groups[group])
        n = len(values)
        k = median_rank(n)
        lo, hi = (values[k - 1], values[n - k]) if k else (None, None)
        print(",".join(list(group) + [
            str(len({h for _, h in groups[group]})), str(n),
            "t" if n < 6 else "f", shown(median(values)), shown(lo),
            shown(hi)]))


def cols(path, names):
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            print(",".join(row[n] for n in names))


def main():
    if len(sys.argv) == 6 and sys.argv[1] == "add":
        add(*sys.argv[2:])
    elif len(sys.argv) == 6 and sys.argv[1] == "expect":
        expect(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5].split(","))
    elif len(sys.argv) >= 4 and sys.argv[1] == "cols":
        cols(sys.argv[2], sys.argv[3:])
    else:
        sys.stderr.write(__doc__)
        sys.exit(2)


if __name__ == "__main__":
    main()
