#!/usr/bin/env python3
"""Derive the min/max networks of examples/median3.pxl and examples/median5.pxl.

The median of n = k*k values (k = 3, 5) as a fixed network of min/max operations:

1. Batcher's odd-even merge sort on N = the next power of two (16, 32) values.
2. The n real values sit on wires L..L+n-1; the L wires below them hold -inf and the
   N-n-L wires above them +inf. A comparator with an end on a padding wire never moves
   anything (min goes to the lower wire), so it is dropped. Every L is tried and the
   smallest network after step 3 is kept.
3. Backward liveness from the median's wire (L + n/2): walking the comparators from
   the last, a comparator whose two outputs are both dead is dropped; one with only its
   min output live becomes a = min(a, b) (and b's value before it becomes live), one
   with only its max output live b = max(a, b); one with both live stays a full
   compare-exchange.
4. A comparator that never moves anything (a <= b before it on every input) is
   dropped, and step 3 rerun. Found by step 5's bit-parallel run: a <= b on every
   input iff it holds on every 0-1 input.
5. The 0-1 principle: min and max commute with every monotone map, so the network
   outputs the median of every input iff it does for every input of 0s and 1s. All 2^n
   binary inputs are run bit-parallel: wire i carries one bit per input (bit t of the
   bit string is bit i of t), min is AND, max is OR, and the median of t is 1 iff t
   has more than n/2 ones.

Usage: gen_median_network.py [--write DIR]   prints the counts and checks both
networks; with --write, rewrites DIR/median3.pxl and DIR/median5.pxl.
"""
import sys
import textwrap

import numpy as np


def batcher(N):
    """Comparators (lo, hi) of Batcher's odd-even merge sort of N = 2^m wires, in order."""
    net = []
    p = 1
    while p < N:
        k = p
        while k >= 1:
            j = k % p
            while j + k < N:
                for i in range(min(k, N - j - k)):
                    # merge only within one block of 2p wires
                    if (i + j) // (2 * p) == (i + j + k) // (2 * p):
                        net.append((i + j, i + j + k))
                j += 2 * k
            k //= 2
        p *= 2
    return net


def liveness(comps, out):
    """The comparators (a, b) (a gets the min) that wire `out` depends on, as
    [(kind, a, b)]: kind 'cx' (both outputs used), 'min' (a = min(a, b)) or 'max'
    (b = max(a, b))."""
    live = {out}
    kept = []
    for a, b in reversed(comps):
        la, lb = a in live, b in live
        if la and lb:
            kept.append(('cx', a, b))
        elif la:
            kept.append(('min', a, b))
        elif lb:
            kept.append(('max', a, b))
        else:
            continue
        live |= {a, b}
    kept.reverse()
    return kept


def prune(net, n, L, out):
    """Drops the padding comparators (wires L..L+n-1 renumbered 0..n-1), then the ones
    `out` does not depend on; returns the ops and the count after dropping padding."""
    real = [(a - L, b - L) for a, b in net if L <= a and b < L + n]
    return liveness(real, out), len(real)


def layers(ops, n):
    """Group ops into layers: each op one past the last layer touching its wires."""
    depth = [0] * n
    out = []
    for op in ops:
        _, a, b = op
        d = max(depth[a], depth[b])
        depth[a] = depth[b] = d + 1
        if d == len(out):
            out.append([])
        out[d].append(op)
    return out


def inputs01(n):
    """Wires 0..n-1 carrying all 2^n inputs of 0s and 1s, 64 to a uint64 word."""
    words = 1 << max(n - 6, 0)
    idx = np.arange(words, dtype=np.uint64)
    wires = []
    for i in range(n):
        if i < 6:  # bit i of input t = 64 * word + lane, within a word
            lane = sum(1 << t for t in range(64) if (t >> i) & 1)
            wires.append(np.full(words, lane, dtype=np.uint64))
        else:
            wires.append(np.where((idx >> np.uint64(i - 6)) & np.uint64(1),
                                  np.uint64(2**64 - 1), np.uint64(0)))
    return wires


def run01(ops, n, on_op=None):
    """Runs ops on all 0-1 inputs (min is AND, max OR); on_op(i, a, b) sees the inputs."""
    wires = inputs01(n)
    for i, (kind, a, b) in enumerate(ops):
        if on_op:
            on_op(i, wires[a], wires[b])
        lo, hi = wires[a] & wires[b], wires[a] | wires[b]
        if kind != 'max':
            wires[a] = lo
        if kind != 'min':
            wires[b] = hi
    return wires


def check01(ops, n, out):
    """True iff the network's wire `out` is the median of every 0-1 input (all 2^n)."""
    got = run01(ops, n)[out].view(np.uint8)
    # expected: popcount(t) > n/2, packed the same way
    t = np.arange(1 << n, dtype=np.uint32)
    pc = np.zeros(1 << n, dtype=np.uint8)
    for i in range(n):
        pc += ((t >> np.uint32(i)) & np.uint32(1)).astype(np.uint8)
    want = np.packbits(pc > n // 2, bitorder='little')
    return bool(np.array_equal(got[:len(want)], want))


def drop_idle(ops, n, out):
    """Drops the ops that never move anything (a <= b on every 0-1 input, hence on every
    input), then the ones that made live, until none is left; returns the new ops."""
    while True:
        idle = set()

        def see(i, a, b):
            if not np.any(a & ~b):
                idle.add(i)
        run01(ops, n, see)
        if not idle:
            return ops
        comps = [(a, b) for i, (_, a, b) in enumerate(ops) if i not in idle]
        ops = liveness(comps, out)


def best(k):
    """The smallest pruned network for the k x k median over every padding split."""
    n = k * k
    N = 1 << (n - 1).bit_length()
    net = batcher(N)
    cands = []
    for L in range(N - n + 1):
        ops, unpadded = prune(net, n, L, n // 2)
        cost = sum(2 if op[0] == 'cx' else 1 for op in ops)
        cands.append((cost, len(ops), L, ops, unpadded))
    cost, _, L, ops, unpadded = min(cands, key=lambda c: (c[0], c[1]))
    live = len(ops)
    ops = drop_idle(ops, n, n // 2)
    cost = sum(2 if op[0] == 'cx' else 1 for op in ops)
    return dict(n=n, N=N, full=len(net), unpadded=unpadded, live=live, L=L, ops=ops,
                cx=sum(op[0] == 'cx' for op in ops),
                half=sum(op[0] != 'cx' for op in ops), minmax=cost)


def emit(k, r):
    """The text of examples/median<k>.pxl for the network r."""
    n, h = r['n'], k // 2
    width = len(str(n - 1))
    name = lambda i: 'p%0*d' % (width, i)
    lines = []
    for dy in range(-h, h + 1):
        decl = ', '.join('%s = in(%d, %d)' % (name((dy + h) * k + dx + h), dx, dy)
                         for dx in range(-h, h + 1))
        lines.append('    u8 %s;' % decl)
    lines.append('    u8 t;')
    for d, layer in enumerate(layers(r['ops'], n)):
        stmts = []
        for kind, a, b in layer:
            A, B = name(a), name(b)
            if kind == 'cx':
                stmts.append('t = min(%s, %s); %s = max(%s, %s); %s = t;' % (A, B, B, A, B, A))
            elif kind == 'min':
                stmts.append('%s = min(%s, %s);' % (A, A, B))
            else:
                stmts.append('%s = max(%s, %s);' % (B, A, B))
        lines.append('    // layer %d' % (d + 1))
        line = '   '
        for s in stmts:
            if len(line) + 1 + len(s) > 92:
                lines.append(line)
                line = '   '
            line += ' ' + s
        lines.append(line)
    lines.append('    return %s;' % name(n // 2))
    nlayers = len(layers(r['ops'], n))
    idle = r['live'] - len(r['ops'])
    idle = ', and %d that never moves anything' % idle if idle else ''
    para1 = (f"median{k}: {k}x{k} median, as cv::medianBlur(src, dst, {k}) (whose border "
             f"repeats the edge pixel: pxl's clamp). The {n} window values go through a "
             f"fixed network of min/max on scalar variables, straight-line code with no "
             f"array and no data-dependent index, so C compilers, NVRTC and OpenCL keep it "
             f"in registers and can vectorise it.")
    para2 = (f"Generated by tools/gen_median_network.py: Batcher's odd-even merge sort of "
             f"{r['N']} wires ({r['full']} comparators), the {n} values on wires "
             f"{r['L']}..{r['L'] + n - 1} and -inf/+inf padding on the others, whose "
             f"comparators move nothing and are dropped ({r['unpadded']} left); then every "
             f"comparator output the median (wire {n // 2}) does not depend on is dropped "
             f"({r['live']} left){idle}: {r['cx']} full compare-exchanges (t = min; b = max; "
             f"a = t) and {r['half']} single min or max, {r['minmax']} min/max operations in "
             f"{nlayers} layers. Checked by the 0-1 principle on all 2^{n} inputs of 0s and 1s.")
    wrap = lambda p: textwrap.fill(p, 88, initial_indent='// ', subsequent_indent='// ',
                                   break_on_hyphens=False)
    head = wrap(para1) + '\n//\n' + wrap(para2) + f"\nkernel u8 median{k}(image u8 in) {{\n"
    return head + '\n'.join(lines) + '\n}\n'


def main(argv):
    outdir = argv[2] if len(argv) > 2 and argv[1] == '--write' else None
    ok = True
    for k in (3, 5):
        r = best(k)
        good = check01(r['ops'], r['n'], r['n'] // 2)
        ok &= good
        print('median%d: batcher(%d) %d comparators, %d without padding, %d live, %d '
              'moving (%d full + %d half) = %d min/max, %d layers, padding L=%d; 0-1 check '
              'on 2^%d inputs: %s' % (k, r['N'], r['full'], r['unpadded'], r['live'], len(r['ops']),
                                      r['cx'], r['half'], r['minmax'],
                                      len(layers(r['ops'], r['n'])), r['L'], r['n'],
                                      'ok' if good else 'FAILED'))
        if outdir and good:
            with open('%s/median%d.pxl' % (outdir, k), 'w') as f:
                f.write(emit(k, r))
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main(sys.argv))
