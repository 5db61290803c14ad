#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The fleet tests' statistics by brute force, for test_stats.sh: every
sign pattern (Wilcoxon's signed-rank test) and every split of the pooled
values (Mann-Whitney) enumerated, so that nothing here shares a formula
with schema/functions/12_stats.sql. Reads cases from standard input, one
per line: "sr V,V,..." or "hl X,X,...;Y,Y,..." or "bh P,P,...", and
prints the results one line each, numbers rounded to 9 digits, "NULL"
where there is none. With a file argument, the database's answers to the
same cases (one line each, fields separated by "|"), it prints instead one
line per case that differs (beyond a relative 1e-9) and exits 1 if any
does."""
import itertools
import sys


def fmt(v):
    return "NULL" if v is None else "%.9g" % v


def median(s):
    s = sorted(s)
    n = len(s)
    return (s[(n - 1) // 2] + s[n // 2]) / 2


def interval_k(dist, alpha=0.05):
    """largest k with P(S <= k - 1) <= alpha / 2, dist: the statistic of
    every equally likely arrangement"""
    total = len(dist)
    k = 0
    for s in range(0, max(dist) + 1):
        if sum(1 for v in dist if v <= s) / total > alpha / 2:
            break
        k = s + 1
    return k


def signed_rank(d):
    x = [v for v in d if v != 0]
    n = len(x)
    order = sorted(range(n), key=lambda i: abs(x[i]))
    rank = [0] * n
    for r, i in enumerate(order):
        rank[i] = r + 1
    w = sum(rank[i] for i in range(n) if x[i] > 0)
    # every sign pattern
    dist = [sum(r for r, s in zip(range(1, n + 1), signs) if s)
            for signs in itertools.product((0, 1), repeat=n)]
    top = n * (n + 1) // 2
    low = min(w, top - w)
    p = min(1.0, 2 * sum(1 for v in dist if v <= low) / len(dist))
    walsh = sorted((x[i] + x[j]) / 2 for i in range(n) for j in range(i, n))
    k = interval_k(dist)
    lo = walsh[k - 1] if k >= 1 else None
    hi = walsh[len(walsh) - k] if k >= 1 else None
    return [n, w, p, median(walsh), lo, hi]


def hodges_lehmann(x, y):
    m, n = len(x), len(y)
    pooled = x + y
    # U of every way to pick which m of the pooled values are "x"
    dist = []
    for pick in itertools.combinations(range(m + n), m):
        xs = [pooled[i] for i in pick]
        ys = [pooled[i] for i in range(m + n) if i not in pick]
        dist.append(sum(1 for a in xs for b in ys if a > b))
    diff = sorted(b - a for a in x for b in y)
    k = interval_k(dist)
    lo = diff[k - 1] if k >= 1 else None
    hi = diff[len(diff) - k] if k >= 1 else None
    return [median(diff), lo, hi]


def bh(p):
    m = len(p)
    order = sorted(range(m), key=lambda i: (p[i], i))
    q = [None] * m
    for r, i in enumerate(order):
        q[i] = min(1.0, min(p[order[j]] * m / (j + 1) for j in range(r, m)))
    return q


def answer(line):
    kind, _, args = line.strip().partition(" ")
    if kind == "sr":
        out = signed_rank([float(v) for v in args.split(",")])
    elif kind == "hl":
        xs, ys = args.split(";")
        out = hodges_lehmann([float(v) for v in xs.split(",")],
                             [float(v) for v in ys.split(",")])
    elif kind == "bh":
        out = bh([float(v) for v in args.split(",")])
    else:
        sys.exit("stats_oracle: unknown case %r" % kind)
    return out


def same(a, b):
    if a is None or b == "NULL":
        return a is None and b == "NULL"
    v = float(b)
    return abs(a - v) <= 1e-9 * max(1.0, abs(a))


cases = [line for line in sys.stdin if line.strip()]
if len(sys.argv) < 2:
    for line in cases:
        print("|".join(fmt(v) for v in answer(line)))
    sys.exit(0)
with open(sys.argv[1]) as f:
    got = [line.rstrip("\n") for line in f]
bad = 0
if len(got) != len(cases):
    print("%d cases, %d answers" % (len(cases), len(got)))
    sys.exit(1)
for line, g in zip(cases, got):
    want = answer(line)
    fields = g.split("|")
    if len(fields) != len(want) or not all(
            same(a, b) for a, b in zip(want, fields)):
        bad += 1
        print("%s: database %s, brute force %s" % (
            line.strip()[:60], g, "|".join(fmt(v) for v in want)))
sys.exit(1 if bad else 0)
