"""python/bench/placement_sim.py's placement model on small hand-made logs."""

import benchscript

ps = benchscript.load("placement_sim.py", "placement_sim")

MiB = 1 << 20


def ev(*items):
    return [(a, p, s) for a, p, s in items]


def test_fragmentation_counted_with_room():
    # A B C live, A and C freed: 2 MiB free in two 1 MiB holes, 2 MiB request fails with room.
    e = ev(("allocate", 1, MiB), ("allocate", 2, MiB), ("allocate", 3, MiB), ("free", 1, MiB), ("free", 3, MiB),
           ("allocate", 4, 2 * MiB))
    assert ps.peak_live(e) == 3 * MiB
    for p in ps.POLICIES:
        assert ps.replay(e, 3 * MiB, p) == (1, 1), p


def test_frees_merge_and_best_fit_keeps_the_large_hole():
    # Holes of 1 MiB (low) and 3 MiB (high): best fit puts 1 MiB in the small hole, so 3 MiB still fits;
    # first fit does the same here; last fit takes the high hole and then 3 MiB fails.
    e = ev(("allocate", 1, MiB), ("allocate", 2, MiB), ("allocate", 3, 3 * MiB), ("allocate", 9, MiB),
           ("free", 1, MiB), ("free", 3, 3 * MiB), ("allocate", 4, MiB), ("allocate", 5, 3 * MiB))
    size = 6 * MiB
    assert ps.replay(e, size, "best") == (0, 0)
    assert ps.replay(e, size, "last") == (1, 1)


def test_split_cuts_large_from_the_end():
    r = ps.Range(64 * MiB, "split4")
    assert r.alloc(MiB) == 0
    assert r.alloc(8 * MiB) == 56 * MiB, "a large request from the end of its block"
    r.dealloc(0, MiB)
    r.dealloc(56 * MiB, 8 * MiB)
    assert r.free == [(0, 64 * MiB)], "frees merge back into one block"
