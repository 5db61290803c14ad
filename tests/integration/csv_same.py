#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Checks that two CSV tables say the same in the columns they share.

usage: csv_same.py OLD.csv NEW.csv KEY[,KEY...] [IGNORED[,IGNORED...]]

Rows are matched by the KEY columns; every column of OLD but the IGNORED
ones must be in NEW with the same text in the matched row, and both must
have the same keys. Columns only NEW has are allowed (a newer version
shows more). Prints each difference and exits 1, else prints what it
compared and exits 0.
"""
import csv
import sys


def rows(path, keys):
    with open(path, newline='') as f:
        table = list(csv.DictReader(f))
    return {tuple(r[k] for k in keys): r for r in table}, table


def main():
    if len(sys.argv) not in (4, 5):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    keys = sys.argv[3].split(',')
    ignored = set(sys.argv[4].split(',')) if len(sys.argv) == 5 else set()
    old, old_table = rows(sys.argv[1], keys)
    new, new_table = rows(sys.argv[2], keys)
    cols = [c for c in (old_table[0].keys() if old_table else [])
            if c not in ignored]
    bad = []
    missing = [c for c in cols if new_table and c not in new_table[0]]
    if missing:
        bad.append('columns missing in %s: %s' % (sys.argv[2],
                                                  ', '.join(missing)))
    if set(old) != set(new):
        bad.append('rows differ: only old %s, only new %s' % (
            sorted(set(old) - set(new)), sorted(set(new) - set(old))))
    for k in sorted(set(old) & set(new)):
        for c in cols:
            if c in missing:
                continue
            if old[k][c] != new[k][c]:
                bad.append('%s %s: %r, now %r' % ('/'.join(k), c,
                                                   old[k][c], new[k][c]))
    if not old:
        bad.append('%s has no rows' % sys.argv[1])
    for b in bad:
        print(b)
    if bad:
        return 1
    print('%d rows, %d columns the same' % (len(old), len(cols)))
    return 0


if __name__ == '__main__':
    sys.exit(main())
