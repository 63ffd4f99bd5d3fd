#!/usr/bin/env python3
"""Summarize a GPU suite run (sddmm.jsonl + peer_sddmm.jsonl) as a Markdown table with the
ratio to the peer (its fastest f32 layout) from the same run. An error row is left out when the same (matrix, K,
variant) succeeded in another line of the run (a re-run after a fix). Usage: summarize.py
OUT_DIR"""
import json
import os
import statistics
import sys

out = sys.argv[1]
peers = {}
with open(os.path.join(out, "peer_sddmm.jsonl")) as f:
    for line in f:
        p = json.loads(line)
        # Summary lines name the peer (its fastest checked layout); per-layout lines do not.
        if "peer" in p and p.get("dtype", "float32") == "float32":
            peers[(p["matrix"], p["nnz"], p["nrows"], p["k"])] = p
rows = []
with open(os.path.join(out, "sddmm.jsonl")) as f:
    for line in f:
        run = json.loads(line)
        for r in run["results"]:
            rows.append((run["matrix"], r))
succeeded = {(m["name"], r["k"], r["variant"]) for m, r in rows if "error" not in r}
print("| matrix | M×N | nnz | K | kernel | config | ms | GFLOP/s | peer ms | speedup vs peer |")
print("|---|---|---|---|---|---|---|---|---|---|")
auto_ratios = {}
for mat, r in rows:
    k = r["k"]
    head = f"| {mat['name']} | {mat['nrows']}×{mat['ncols']} | {mat['nnz']} | {k} | {r['variant']}"
    if "error" in r:
        if (mat["name"], k, r["variant"]) not in succeeded:
            print(f"{head} | error: {r['error']} | | | | |")
        continue
    peer = peers.get((mat["name"], mat["nnz"], mat["nrows"], k))
    m = r["measurement"]
    c = m["config"]
    cfg = f"Tj={c['tj']} Tk={c['tk']} Ti={c['ti']} vws={c['vws']} wg={c['workgroup']}"
    cfg += " T" if c["transposed"] else ""
    cfg += f" bands={m['bands']}" if m.get("bands", 1) > 1 else ""
    ratio = peer["ms"] / m["ms"] if peer else float("nan")
    auto = r["variant"] == "sddmm.auto"
    if auto:
        auto_ratios.setdefault(k, []).append(ratio)
    name = f" → {m['kernel']}" if auto else ""
    peer_ms = peer["ms"] if peer else float("nan")
    print(f"{head}{name} | {cfg} | {m['ms']:.3f} | {m['gflops']:.0f} | {peer_ms:.3f} | {ratio:.2f}× |")
print()
for k, rs in sorted(auto_ratios.items()):
    print(f"- K={k}: median speedup of auto over the peer: {statistics.median(rs):.2f}× over {len(rs)} matrices")
