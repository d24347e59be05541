#!/usr/bin/env python3
"""Per-second states of a Go execution trace, for `toolhub bench --hop --hop-trace FILE`.

    go tool trace -d=parsed FILE.<pid> | python3 scripts/tracestats.py [FROM TO]

Prints, for each second of the trace, the seconds spent (summed over goroutines) running, runnable
(waiting for a P) and in syscalls, the Ps' running time, the GC's concurrent mark phase,
stop-the-world pauses and mark assists; then, with FROM and TO (seconds since the trace began, TO
excluded), the totals over that window as shares of its wall time. Pick the window of the measured
phase from the per-second rows (the hub runs last in each round).
"""
import collections
import re
import sys

B = 1_000_000_000  # one-second buckets, in trace nanoseconds
state = re.compile(r'^M=\S+ P=\S+ G=\S+ StateTransition Time=(\d+) (GoID|ProcID)=(\d+) (\w+)->(\w+)')
rng = re.compile(r'^M=\S+ P=\S+ G=\S+ Range(Begin|End) Time=(\d+) Name="([^"]+)"')
cols = ['g_running', 'g_runnable', 'g_syscall', 'p_running', 'gc_mark', 'stw', 'assist']

t0 = None
gs, ps, open_ranges = {}, {}, {}
acc = collections.defaultdict(lambda: collections.defaultdict(int))


def add(kind, a, b):
    while a < b:
        k = (a - t0) // B
        end = min(b, t0 + (k + 1) * B)
        acc[k][kind] += end - a
        a = end


for line in sys.stdin:
    if not line.startswith('M='):
        continue
    m = state.match(line)
    if m:
        t = int(m.group(1))
        t0 = t if t0 is None else t0
        kind, i, to = m.group(2), int(m.group(3)), m.group(5)
        d = gs if kind == 'GoID' else ps
        prev = d.get(i)
        if prev:
            s, since = prev
            if kind == 'GoID' and s in ('Running', 'Runnable', 'Syscall'):
                add('g_' + s.lower(), since, t)
            if kind == 'ProcID' and s == 'Running':
                add('p_running', since, t)
        d[i] = (to, t)
        continue
    m = rng.match(line)
    if m:
        t, name = int(m.group(2)), m.group(3)
        t0 = t if t0 is None else t0
        if m.group(1) == 'Begin':
            open_ranges[name] = t
        elif name in open_ranges:
            a = open_ranges.pop(name)
            if name.startswith('GC concurrent mark'):
                add('gc_mark', a, t)
            elif name.startswith('stop-the-world'):
                add('stw', a, t)
            elif 'mark assist' in name:
                add('assist', a, t)

print('second', *cols, sep='\t')
for k in sorted(acc):
    print(k, *('%.3f' % (acc[k][c] / 1e9) for c in cols), sep='\t')
if len(sys.argv) == 3:
    lo, hi = int(sys.argv[1]), int(sys.argv[2])
    wall = hi - lo
    print(f'\nseconds {lo}..{hi} ({wall} s): share of wall time')
    for c in cols:
        v = sum(acc[k][c] for k in range(lo, hi)) / 1e9
        print(f'{c}\t{v:.3f} s\t{100 * v / wall:.1f} %')
