#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""New metrics in spooled reports, and the figures compare --metric owes.

tests/integration/test_metric.sh: a newer agent's benchmark measures
metrics that nothing in schema/ or collector/ names. This puts them into
the reports fleetgen spooled (docs/spool.md: a 64-byte header, then the
packed protobuf Report), so that `fleetbench-agent send` delivers them
through the real collector, and computes on its own what `fleetbench
compare --metric` must answer.

  spool_metric.py add SPOOL_DIR MANIFEST SAMPLES_JSON
      adds to every report's randread/io_uring variant the metric
      zz_new_metric (widgets, 4 or 5 samples), and to the reports of
      provider gcp a new benchmark zz_new_bench, variant a, measuring
      zz_new_metric (widgets) and zz_other (s); writes the samples as
      {run_id: {"BENCH/VARIANT/METRIC": [samples]}}
  spool_metric.py expect SAMPLES_JSON MANIFEST NAME KEY[,KEY...]
      prints per group of the keys (provider, instance_type, kernel,
      host), in key order: the keys, hosts, runs, few_runs (t/f), median,
      median_lo, median_hi, comma-separated as psql --csv prints them
  spool_metric.py cols CSV_FILE COLUMN...
      prints those columns of each row of a CSV file (RFC 4180, as
      fleetbench --format csv writes it) but the header, comma-separated

Only the protobuf wire format is needed to add a repeated field: a
Benchmark is field 9 of Report (length-delimited), a Metric field 5 of
Benchmark; a Metric is metric = 1, unit = 2, samples = 3 (packed double).
"""
import csv
import json
import math
import os
import random
import struct
import sys
import zlib
from decimal import ROUND_HALF_UP, Decimal

HEADER = 64
MAGIC = b"FBSPOOL1"


def read_varint(b, i):
    x = s = 0
    while True:
        c = b[i]
        i += 1
        x |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return x, i


def varint(x):
    out = bytearray()
    while True:
        c = x & 0x7F
        x >>= 7
        if x:
            out.append(c | 0x80)
        else:
            out.append(c)
            return bytes(out)


def field(num, payload):
    """A length-delimited field."""
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def fields(b):
    """(number, wire type, raw bytes of the whole field, value) of b."""
    i = 0
    while i < len(b):
        start = i
        key, i = read_varint(b, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            _, i = read_varint(b, i)
            value = None
        elif wt == 1:
            i += 8
            value = None
        elif wt == 5:
            i += 4
            value = None
        elif wt == 2:
            n, i = read_varint(b, i)
            value = b[i:i + n]
            i += n
        else:
            raise ValueError("wire type %d" % wt)
        yield num, wt, b[start:i], value


def metric(name, unit, samples):
    return field(1, name.encode()) + field(2, unit.encode()) + \
        field(3, struct.pack("<%dd" % len(samples), *samples))


def add_to_report(payload, added):
    """payload with the metrics of added {bench/variant: [(metric, unit,
    samples)]}: into the Benchmark that is there, else a new one."""
    out = bytearray()
    todo = dict(added)
    for num, wt, raw, value in fields(payload):
        if num == 9 and wt == 2:
            strings = {n: v.decode() for n, w, _, v in fields(value)
                       if n in (1, 2) and w == 2}
            key = "%s/%s" % (strings[1], strings[2])
            if key in todo:
                value = value + b"".join(field(5, metric(*m))
                                         for m in todo.pop(key))
                raw = field(9, value)
        out += raw
    for key, ms in todo.items():
        bench, variant = key.split("/")
        out += field(9, field(1, bench.encode()) + field(2, variant.encode())
                     + b"".join(field(5, metric(*m)) for m in ms))
    return bytes(out)


def manifest(path):
    """run_id: (provider, instance_type, host, kernel)"""
    runs = {}
    with open(path) as f:
        for line in f:
            run_id, provider, itype, host, kernel = line.split("\t")[:5]
            runs[run_id] = (provider, itype, host, kernel)
    return runs


def add(spool, manifest_path, out_path):
    runs = manifest(manifest_path)
    samples = {}
    for name in sorted(os.listdir(spool)):
        if not name.endswith(".fbr"):
            continue
        path = os.path.join(spool, name)
        with open(path, "rb") as f:
            data = f.read()
        if data[:8] != MAGIC:
            raise ValueError("%s: not a spool file" % path)
        run_id = data[20:56].decode()
        rnd = random.Random(run_id)
        mine = {}
        # 4 or 5 samples, multiples of 0.25: every median is exact
        n = rnd.choice((4, 5))
        mine["randread/io_uring/zz_new_metric"] = (
            "widgets", [rnd.randint(40, 4000) / 4 for _ in range(n)])
        if runs[run_id][0] == "gcp":
            mine["zz_new_bench/a/zz_new_metric"] = (
                "widgets", [rnd.randint(10, 99) for _ in range(3)])
            mine["zz_new_bench/a/zz_other"] = (
                "s", [rnd.randint(10, 99) / 10000 for _ in range(3)])
        added = {}
        for full, (unit, values) in mine.items():
            bench, variant, m = full.split("/")
            added.setdefault(bench + "/" + variant, []).append(
                (m, unit, values))
        payload = add_to_report(data[HEADER:], added)
        header = bytearray(data[:HEADER])
        struct.pack_into("<II", header, 12, len(payload),
                         zlib.crc32(payload))
        with open(path, "wb") as f:
            f.write(bytes(header) + payload)
        samples[run_id] = {k: v[1] for k, v in mine.items()}
    with open(out_path, "w") as f:
        json.dump(samples, f, indent=1, sort_keys=True)


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
    if len(sys.argv) == 5 and sys.argv[1] == "add":
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
