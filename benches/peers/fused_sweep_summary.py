#!/usr/bin/env python3
"""The launch model against its sweep, from fused_sweep.sh's runs.tsv (tag, exit status, the
`wgsparse fused --sweep --json` object): per sweep, the model's point, the best, and how far
from the best a few alternative rules would have landed, each read off the sweep's own points
(no figure here is measured twice or estimated):

  model       the launch model (Eqs. 4-6; the sparse row kernel's C by the schedule estimate
              of src/fused/schedule.rs)
  C/2         the model's VS and workgroup size, half its C (two waves of workgroups)
  C*2         the same at twice its C
  wg N        the model's VS (and TL) and C at workgroup size N (Eq. 5's C there when
              threads, not workgroup memory, bound the resident vectors)

Usage: fused_sweep_summary.py runs.tsv  (prints a Markdown table)"""
import json
import sys


def config_of(point):
    c = point["config"]
    return (c["variant"], c["vs"], c["workgroup"], c["rows_per_vector"], c["tl"], c["row_tile"])


def rules(sweep):
    """(rule name, point or None) for each alternative rule, read off the sweep's points."""
    points = sweep["points"]
    model = sweep["model"]["config"]

    def find(pred):
        hits = [p for p in points if p["config"]["variant"] == model["variant"] and pred(p["config"])]
        return min(hits, key=lambda p: p["ms"]) if hits else None

    same = lambda c: c["vs"] == model["vs"] and c["workgroup"] == model["workgroup"]
    c0 = model["rows_per_vector"]
    out = [
        ("C/2", find(lambda c: same(c) and c["rows_per_vector"] == max(1, round(c0 / 2)))),
        ("C*2", find(lambda c: same(c) and c["rows_per_vector"] == c0 * 2)),
    ]
    # At another workgroup size with the same resident vectors (threads, not workgroup
    # memory, the limit), Eq. 5 gives the model's C again.
    for wg in (128, 256, 512, 1024):
        if wg != model["workgroup"]:
            out.append((f"wg {wg}", find(
                lambda c: c["vs"] == model["vs"] and c["workgroup"] == wg
                and c["rows_per_vector"] == c0)))
    return out


def describe(point):
    c = point["config"]
    s = f"VS {c['vs']}, wg {c['workgroup']}, C {c['rows_per_vector']}, {c['groups']} groups"
    if c["dense"]:
        s += f", TL {c['tl']}"
    if c["variant"] != "Fused":
        s = f"{c['variant']} {s}"
        if c["row_tile"]:
            s += f", row tile {c['row_tile']}"
    return s


def main():
    print("| input | points | model (ms) | best (ms) | model's gap | rule: gap |")
    print("|---|---|---|---|---|---|")
    for line in open(sys.argv[1]):
        tag, rc, text = line.rstrip("\n").split("\t", 2)
        try:
            run = json.loads(text)
        except json.JSONDecodeError:
            continue
        for sweep in run.get("sweeps") or []:
            points = sweep["points"]
            if not isinstance(points, list):
                print(f"| {tag} | {points} | | | | (points not reported) |")
                continue
            best = sweep["best"]
            model = sweep["model"]
            alt = []
            for name, p in rules(sweep):
                if p is not None:
                    gap = (p["ms"] - best["ms"]) / best["ms"]
                    alt.append(f"{name}: {100 * gap:.1f}% ({p['ms']:.4f})")
            print(
                f"| {tag} | {len(points)} | {model['ms']:.4f} ({describe(model)}) "
                f"| {best['ms']:.4f} ({describe(best)}) | {100 * sweep['model_gap']:.1f}% "
                f"| {'; '.join(alt)} |"
            )


if __name__ == "__main__":
    main()
