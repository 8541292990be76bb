"""python/bench/snapshot_svg.py draws a real snapshot (a fragmented pool on
whatever device the tests use) as SVG: one bar per segment, a rectangle per
block, live ones coloured, and the live-bytes line of the trace."""

import xml.etree.ElementTree as ET

import pytest

import benchscript

import rmmgo as rmm

svg = benchscript.load("snapshot_svg.py", "snapshot_svg")

MiB = 1 << 20
NS = "{http://www.w3.org/2000/svg}"


@pytest.mark.parametrize("suffix", [".pickle", ".json"])
def test_draws_a_fragmented_pool(tmp_path, suffix):
    pool = rmm.mr.PoolMemoryResource(rmm.mr.CudaMemoryResource(), 64 * MiB, 64 * MiB)
    bufs = [rmm.DeviceBuffer(size=2 * MiB, mr=pool) for _ in range(32)]
    live = bufs[1::2]
    del bufs
    snap = tmp_path / ("s" + suffix)
    rmm.memory_snapshot(pool, path=snap)
    out = tmp_path / "s.svg"
    svg.main([str(snap), "-o", str(out)])
    root = ET.parse(out).getroot()
    rects = root.findall(NS + "rect")
    blocks = [r for r in rects if r.find(NS + "title") is not None]
    titles = [r.find(NS + "title").text for r in blocks]
    assert sum(t.startswith("active_allocated 2.0 MiB") for t in titles) == 16
    assert all(t.startswith(("active_allocated", "inactive")) for t in titles)
    # Blocks tile the 64 MiB segment: their widths add up to the bar's.
    bar = [r for r in rects if r.get("stroke") == "#888" and r.get("height") == "28"]
    assert len(bar) == 1
    total = sum(float(r.get("width")) for r in blocks)
    assert abs(total - float(bar[0].get("width"))) < 1.0
    texts = " ".join(t.text for t in root.iter(NS + "text"))
    assert "32.0 MiB live" in texts and "64.0 MiB" in texts
    del live
