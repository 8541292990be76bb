"""How much a placement policy alone can do against fragmentation.

Replays an RMM memory-event log (CSV, optionally .gz) in an address range of
a fixed size, as a non-moving allocator that never grows (the arena's global
arena) would, under several placement policies, and counts the requests that
find no free block although the range has that many bytes free. Sizes are
rounded to 256 bytes; frees merge with their neighbours. It models placement
only: no streams, no superblocks, no caches, so it bounds what choosing
another policy could gain, not what a resource does.

  python3 python/bench/placement_sim.py bench/traces/cupy-pipeline.csv.gz --sizes 1.05,1.1,1.25

Policies: first (lowest address that fits), best (smallest block that fits,
lowest address on ties: the arena's), last (highest address that fits),
split<N> (best fit, but requests of N MiB or more are cut from the end of
their block, so that large and small blocks grow from opposite ends).
Standard library only.
"""

import argparse
import bisect
import gzip

UNIT = 256
POLICIES = ("first", "best", "last", "split4", "split32")


def load(path):
    """The (action, pointer, size) events of an RMM CSV log."""
    opener = gzip.open if path.endswith(".gz") else open
    out = []
    with opener(path, "rt") as f:
        head = next(f).strip().split(",")
        ia, ip, isz = head.index("Action"), head.index("Pointer"), head.index("Size")
        for line in f:
            c = line.strip().split(",")
            if len(c) > isz:
                out.append((c[ia], int(c[ip], 16), int(c[isz])))
    return out


def rounded(n):
    return max(UNIT, (n + UNIT - 1) // UNIT * UNIT)


class Range:
    """Free blocks of one address range, sorted by address."""

    def __init__(self, size, policy):
        self.free = [(0, size)]
        self.policy = policy
        self.large = int(policy[5:]) << 20 if policy.startswith("split") else None

    def _pick(self, n):
        fr, p = self.free, self.policy
        fits = [i for i, (_, z) in enumerate(fr) if z >= n]
        if not fits:
            return None
        if p == "first":
            return fits[0]
        if p == "last":
            return fits[-1]
        return min(fits, key=lambda i: (fr[i][1], fr[i][0]))  # best fit, lowest address on ties

    def alloc(self, n):
        i = self._pick(n)
        if i is None:
            return None
        a, z = self.free[i]
        from_end = self.large is not None and n >= self.large
        if z == n:
            self.free.pop(i)
            return a
        if from_end:
            self.free[i] = (a, z - n)
            return a + z - n
        self.free[i] = (a + n, z - n)
        return a

    def dealloc(self, a, n):
        fr = self.free
        i = bisect.bisect_left(fr, (a, 0))
        if i > 0 and fr[i - 1][0] + fr[i - 1][1] == a:
            i -= 1
            a, n = fr[i][0], fr[i][1] + n
            fr.pop(i)
        if i < len(fr) and a + n == fr[i][0]:
            n += fr.pop(i)[1]
        fr.insert(i, (a, n))


def peak_live(events):
    live = peak = 0
    sizes = {}
    for act, p, s in events:
        if act == "allocate":
            sizes[p] = rounded(s)
            live += sizes[p]
            peak = max(peak, live)
        elif p in sizes:
            live -= sizes.pop(p)
    return peak


def replay(events, size, policy):
    """(failures, failures with the bytes free) of events in a range of size bytes."""
    r, where, live, fails, room = Range(size, policy), {}, 0, 0, 0
    for act, p, s in events:
        if act == "allocate":
            n = rounded(s)
            a = r.alloc(n)
            if a is None:
                fails += 1
                room += size - live >= n
                continue
            where[p] = (a, n)
            live += n
        elif p in where:
            a, n = where.pop(p)
            r.dealloc(a, n)
            live -= n
    return fails, room


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log")
    ap.add_argument("--sizes", default="1.05,1.1,1.25", help="range sizes, as multiples of the log's peak live bytes")
    ap.add_argument("--policies", default=",".join(POLICIES))
    a = ap.parse_args(argv)
    ev = load(a.log)
    peak = peak_live(ev)
    pols = a.policies.split(",")
    print("%s: %d events, peak live %.2f GiB" % (a.log, len(ev), peak / 2**30))
    print("| range / peak live | " + " | ".join(pols) + " |")
    print("| --- |" + " --- |" * len(pols))
    for f in (float(x) for x in a.sizes.split(",")):
        size = int(peak * f) // UNIT * UNIT
        cells = ["%d (%d with room)" % replay(ev, size, p) for p in pols]
        print("| %.2fx | %s |" % (f, " | ".join(cells)))


if __name__ == "__main__":
    main()
