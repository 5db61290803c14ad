#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks what node_exporter serves of fleetbench.prom against the run.

    textfile_check.py RUN_JSON METRICS PROVIDER INSTANCE_TYPE SINCE

RUN_JSON is `fleetbench-agent run --json`'s output (the probe report with
the bench run under "bench"), METRICS node_exporter's /metrics as curl got
it, PROVIDER and INSTANCE_TYPE the labels the run was given, SINCE the Unix
time before the run. Every fleetbench_* series must carry the host labels
(provider, instance_type, kernel = the probe's kernel.release); the
figures must be the medians of the run's samples, one series for each
metric of each variant that measured it and none else; the failed and
skipped variants, the comparisons, the capabilities and the run's time,
profile and method must be those of the run; node_textfile_scrape_error
must be 0. Prints each mismatch and a last line "N checks, N mismatches";
exit status 0 when there is none. Used by
tests/integration/test_textfile.sh.
"""
import json
import math
import re
import statistics
import sys
import time

# one sample line of the text format; a label's value with its escapes
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?')
UNESCAPE = {'\\\\': '\\', '\\"': '"', '\\n': '\n'}

checks = 0
mismatches = []


def check(cond, what):
    global checks
    checks += 1
    if not cond:
        mismatches.append(what)


def unescape(v):
    return re.sub(r'\\[\\"n]', lambda m: UNESCAPE[m.group(0)], v)


def read_metrics(path):
    """{name: [(labels dict, value)]} of every sample line."""
    series = {}
    with open(path, encoding='utf-8') as f:
        for line in f:
            line = line.rstrip('\n')
            if not line or line.startswith('#'):
                continue
            m = SAMPLE.match(line)
            if not m:
                mismatches.append(f'not a sample line: {line!r}')
                continue
            labels = {k: unescape(v) for k, v in LABEL.findall(m.group(2) or '')}
            series.setdefault(m.group(1), []).append((labels, float(m.group(3))))
    return series


def by(series, name, *keys):
    """The samples of name as {(label values of keys): value}."""
    out = {}
    for labels, value in series.get(name, []):
        key = tuple(labels.get(k) for k in keys)
        check(key not in out, f'{name}{key}: served twice')
        out[key] = value
    return out


def close(a, b):
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=0)


def main():
    run_json, metrics, provider, instance_type, since = sys.argv[1:6]
    with open(run_json, encoding='utf-8') as f:
        run = json.load(f)
    series = read_metrics(metrics)
    bench = run['bench']
    host = {'provider': provider, 'instance_type': instance_type,
            'kernel': run['kernel']['release']}

    err = by(series, 'node_textfile_scrape_error')
    check(err == {(): 0.0}, f'node_textfile_scrape_error: {err}')
    fleet = [n for n in series if n.startswith('fleetbench_')]
    check(len(fleet) >= 8, f'fleetbench families served: {fleet}')
    for name in fleet:
        for labels, _ in series[name]:
            got = {k: labels.get(k) for k in host}
            check(got == host, f'{name}: host labels {got}, expected {host}')

    # the figures: medians of the samples, nothing more, nothing less
    want = {}
    for b in bench['benchmarks']:
        for m in b.get('metrics') or []:
            if m.get('samples'):
                key = (b['benchmark'], b['variant'], m['metric'], m['unit'])
                want[key] = statistics.median(m['samples'])
    got = by(series, 'fleetbench_figure', 'bench', 'variant', 'figure', 'unit')
    check(len(want) > 0, 'the run measured no figure')
    check(set(got) == set(want),
          f'figures served but not measured: {sorted(set(got) - set(want))}; '
          f'measured but not served: {sorted(set(want) - set(got))}')
    for key, value in want.items():
        if key in got:
            check(close(got[key], value),
                  f'fleetbench_figure{key} = {got[key]!r}, median {value!r}')
    repeats = by(series, 'fleetbench_figure_repeats', 'bench', 'variant',
                 'figure')
    for b in bench['benchmarks']:
        for m in b.get('metrics') or []:
            if m.get('samples'):
                key = (b['benchmark'], b['variant'], m['metric'])
                check(repeats.get(key) == len(m['samples']),
                      f'fleetbench_figure_repeats{key} = {repeats.get(key)}')

    failed = {(b['benchmark'], b['variant'], b['failure']): 1.0
              for b in bench['benchmarks'] if b.get('failure')}
    got = by(series, 'fleetbench_bench_failed', 'bench', 'variant', 'reason')
    check(got == failed, f'failed: served {got}, run {failed}')
    skipped = {(b['benchmark'], b['variant'], b['skip_reason']): 1.0
               for b in bench['benchmarks']
               if b.get('skip_reason') and not b.get('failure')}
    got = by(series, 'fleetbench_bench_skipped', 'bench', 'variant', 'reason')
    check(got == skipped, f'skipped: served {got}, run {skipped}')

    ratios = {(c['name'], c['benchmark'], c['metric']): c['ratio']
              for c in bench.get('comparisons') or [] if 'ratio' in c}
    got = by(series, 'fleetbench_comparison_ratio', 'name', 'bench', 'figure')
    check(set(got) == set(ratios), f'comparisons: served {sorted(got)}, '
          f'run {sorted(ratios)}')
    for key, value in ratios.items():
        if key in got:
            check(close(got[key], value),
                  f'fleetbench_comparison_ratio{key} = {got[key]}, run {value}')

    # the headline figures (proto/figures.def): a comparison of a
    # figure's name is served under it, with its ratio
    heads = by(series, 'fleetbench_headline', 'figure')
    for (name, _, _), value in ratios.items():
        if (name,) in heads:
            check(close(heads[(name,)], value),
                  f'fleetbench_headline{{figure="{name}"}} = '
                  f'{heads[(name,)]}, run {value}')
    if any(name == 'thp_speedup' for name, _, _ in ratios):
        check(('thp_speedup',) in heads,
              f'no fleetbench_headline for thp_speedup: {sorted(heads)}')

    # the capabilities, as the probe found them
    caps = by(series, 'fleetbench_capability', 'name', 'value')
    for name, item in (('thp_enabled', run['thp']['enabled']),
                       ('thp_defrag', run['thp']['defrag']),
                       ('thp_shmem_enabled', run['thp']['shmem_enabled'])):
        if isinstance(item, dict) and isinstance(item.get('selected'), str):
            check(caps.get((name, item['selected'])) == 1.0,
                  f'capability {name}={item["selected"]}: {caps}')
    io = run['io_uring']
    for name, item in (('fleetbench_io_uring_setup', io.get('setup')),
                       ('fleetbench_io_uring_sqpoll', io.get('sqpoll'))):
        if isinstance(item, str):
            got = by(series, name, 'result')
            check(got == {(item,): 1.0}, f'{name}: served {got}, probe {item}')
    if isinstance(io.get('opcodes'), list):
        got = by(series, 'fleetbench_io_uring_opcode', 'opcode')
        check(set(got) == {(o,) for o in io['opcodes']},
              f'opcodes: served {sorted(got)}, probe {io["opcodes"]}')
    if isinstance(run['host'].get('vcpus_online'), int):
        got = by(series, 'fleetbench_vcpus')
        check(got == {(): float(run['host']['vcpus_online'])},
              f'fleetbench_vcpus: {got}')
    if isinstance(run['host'].get('memory_total_kb'), int):
        got = by(series, 'fleetbench_memory_bytes')
        check(got == {(): float(run['host']['memory_total_kb'] * 1024)},
              f'fleetbench_memory_bytes: {got}')

    # the run itself
    got = by(series, 'fleetbench_last_run_timestamp_seconds')
    stamp = got.get(())
    check(stamp is not None and float(since) <= stamp <= time.time(),
          f'fleetbench_last_run_timestamp_seconds {stamp}, run after {since}')
    got = by(series, 'fleetbench_run_info', 'profile', 'method')
    want = {(bench['profile'], bench['method']['key']): 1.0}
    check(got == want, f'fleetbench_run_info: served {got}, run {want}')

    for m in mismatches:
        print(m)
    print(f'{checks} checks, {len(mismatches)} mismatches')
    return 1 if mismatches else 0


if __name__ == '__main__':
    sys.exit(main())
