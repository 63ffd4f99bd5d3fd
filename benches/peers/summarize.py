#!/usr/bin/env python3
"""Summarize a GPU suite run (sddmm.jsonl + peer_sddmm.jsonl) as a Markdown table with the
ratio to the peer from the same run. Usage: summarize.py OUT_DIR"""
import json
import os
import statistics
import sys

out = sys.argv[1]
peers = {}
with open(os.path.join(out, "peer_sddmm.jsonl")) as f:
    for line in f:
        p = json.loads(line)
        peers[(p["nnz"], p["nrows"], p["k"])] = p
print("| matrix | M×N | nnz | K | kernel | config | ms | GFLOP/s | peer ms | speedup vs peer |")
print("|---|---|---|---|---|---|---|---|---|---|")
auto_ratios = {}
with open(os.path.join(out, "sddmm.jsonl")) as f:
    for line in f:
        run = json.loads(line)
        mat = run["matrix"]
        for r in run["results"]:
            k = r["k"]
            peer = peers.get((mat["nnz"], mat["nrows"], k))
            if "error" in r:
                print(f"| {mat['name']} | {mat['nrows']}×{mat['ncols']} | {mat['nnz']} | {k} | {r['variant']} | error: {r['error']} | | | | |")
                continue
            m = r["measurement"]
            c = m["config"]
            cfg = f"Tj={c['tj']} Tk={c['tk']} Ti={c['ti']} vws={c['vws']} wg={c['workgroup']}" + (" T" if c["transposed"] else "")
            ratio = peer["ms"] / m["ms"] if peer else float("nan")
            name = r["variant"] + (f" → {m['kernel']}" if r["variant"] == "sddmm.auto" else "")
            if r["variant"] == "sddmm.auto":
                auto_ratios.setdefault(k, []).append(ratio)
            print(f"| {mat['name']} | {mat['nrows']}×{mat['ncols']} | {mat['nnz']} | {k} | {name} | {cfg} | {m['ms']:.3f} | {m['gflops']:.0f} | {peer['ms'] if peer else float('nan'):.3f} | {ratio:.2f}× |")
print()
for k, rs in sorted(auto_ratios.items()):
    print(f"- K={k}: median speedup of auto over the peer: {statistics.median(rs):.2f}× over {len(rs)} matrices")
