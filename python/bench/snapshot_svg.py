#!/usr/bin/env python3
"""Draw a memory snapshot as an SVG picture, with the standard library only.

PyTorch's memory viewer (torch.cuda._memory_viz's segment_plot and trace_plot,
pytorch.org/memory_viz) draws rmmgo's snapshots in a browser, from a script it
loads from a CDN. This draws the same snapshot as a static picture that docs can
show: the segments (each resource chunk, blocks live or free, to scale) and the
bytes live over the trace's events.

  python3 python/bench/snapshot_svg.py snapshot.pickle -o snapshot.svg
  python3 python/bench/snapshot_svg.py segments.html -o snapshot.svg   # the viewer's HTML

The input is rmmgo.memory_snapshot()'s pickle or JSON (PyTorch's format), or an
HTML file _memory_viz wrote (the snapshot is embedded in it).
"""

import argparse
import base64
import html
import json
import pickle
import re
import sys

MiB = 1 << 20


def load(path):
    if path.endswith(".json"):
        with open(path) as f:
            return json.load(f)
    with open(path, "rb") as f:
        data = f.read()
    if path.endswith(".html"):
        m = re.search(rb'"base64": "([^"]+)"', data)
        if not m:
            raise SystemExit("%s: no embedded snapshot" % path)
        data = base64.b64decode(m.group(1))
    return pickle.loads(data)


def colour(i):
    # Distinct hues for neighbouring live blocks.
    return "hsl(%d, 65%%, 55%%)" % ((i * 137) % 360)


def fmt(n):
    return "%.1f GiB" % (n / (1 << 30)) if n >= 1 << 30 else "%.1f MiB" % (n / MiB)


def segments_panel(segs, x0, y0, width):
    out, y = [], y0
    for k, s in enumerate(segs):
        total = s["total_size"]
        live = sum(b["size"] for b in s["blocks"] if b["state"] == "active_allocated")
        out.append('<text x="%d" y="%d" font-size="12">segment %d (%s, stream %s): %s, %s live in %d blocks</text>'
                   % (x0, y + 12, k, html.escape(str(s.get("resource", s.get("segment_type", "")))), s.get("stream", 0),
                      fmt(total), fmt(live), len(s["blocks"])))
        y += 18
        out.append('<rect x="%d" y="%d" width="%d" height="28" fill="#e8e8e8" stroke="#888"/>' % (x0, y, width))
        for i, b in enumerate(s["blocks"]):
            bx = x0 + (b["address"] - s["address"]) * width / total
            bw = max(b["size"] * width / total, 0.5)
            fill = colour(i) if b["state"] == "active_allocated" else "#e8e8e8"
            out.append('<rect x="%.2f" y="%d" width="%.2f" height="28" fill="%s"><title>%s %s at %#x</title></rect>'
                       % (bx, y, bw, fill, b["state"], fmt(b["size"]), b["address"]))
        y += 38
    return out, y


def trace_panel(events, x0, y0, width, height):
    live, pts, sizes = 0, [(0, 0)], {}
    for e in events:
        a = e.get("action")
        if a == "alloc":
            live += e["size"]
            sizes[e["addr"]] = e["size"]
        elif a in ("free_completed", "free"):
            live -= sizes.pop(e["addr"], e["size"])
        else:
            continue
        pts.append((len(pts), live))
    top = max(p[1] for p in pts) or 1
    n = max(len(pts) - 1, 1)
    line = " ".join("%.1f,%.1f" % (x0 + i * width / n, y0 + height - v * height / top) for i, v in pts)
    out = ['<text x="%d" y="%d" font-size="12">bytes live over %d allocations and frees (peak %s)</text>'
           % (x0, y0 - 6, len(pts) - 1, fmt(top)),
           '<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#888"/>' % (x0, y0, width, height),
           '<polyline points="%s" fill="none" stroke="hsl(210, 70%%, 45%%)" stroke-width="1.5"/>' % line]
    return out, y0 + height


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("snapshot", help="snapshot .pickle or .json, or an HTML file _memory_viz wrote")
    ap.add_argument("-o", "--out", required=True, help="the SVG file to write")
    ap.add_argument("--width", type=int, default=900)
    a = ap.parse_args(argv)
    snap = load(a.snapshot)
    segs = sorted(snap.get("segments", []), key=lambda s: s["address"])
    settings = snap.get("allocator_settings", {})
    title = "%s: %s" % (settings.get("allocator", "snapshot"), settings.get("resources", ""))
    body = ['<text x="10" y="18" font-size="14" font-weight="bold">%s</text>' % html.escape(title)]
    part, y = segments_panel(segs, 10, 30, a.width - 20)
    body += part
    events = [e for t in snap.get("device_traces", []) for e in t]
    if events:
        part, y = trace_panel(events, 10, y + 24, a.width - 20, 160)
        body += part
    svg = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif">' % (a.width, y + 12),
           '<rect width="100%" height="100%" fill="white"/>'] + body + ["</svg>"]
    with open(a.out, "w") as f:
        f.write("\n".join(svg) + "\n")
    print("wrote %s: %d segments, %d events" % (a.out, len(segs), len(events)))


if __name__ == "__main__":
    sys.exit(main())
