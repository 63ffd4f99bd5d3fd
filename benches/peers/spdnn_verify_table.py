#!/usr/bin/env python3
"""The sparse DNN verification table and summary (issue 10), from the verify.jsonl files of
any number of `spdnn_suite.sh VERIFY=1` parts:

    python3 benches/peers/spdnn_verify_table.py [--total 60000] out12/verify.jsonl ...

Prints every line (configuration, input rows, approach, time, verdict), then a summary per
configuration and thesis run (format × tiling): verified only when pieces that matched cover
all --total input rows and no piece mismatched. A timed-out, skipped or failed piece covers
nothing (a later part may run it again); a mismatch is never outweighed. A configuration is
verified when all six thesis runs are.
"""
import argparse
import json
import os
from collections import defaultdict

SIX = [(f, t) for f in ("csr-ell", "csr-csr", "csc-csc") for t in ("1d", "2d")]


def runs_of(spec):
    """The (format, tiling) pairs of a RUNS field: `all` or pairs joined by `+`."""
    if spec == "all":
        return SIX
    return [tuple(p.split(":", 1)) for p in spec.split("+") if ":" in p]


def span(first, rows):
    return f"{first}..{first + rows}" if rows else f"{first}.."


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--total", type=int, default=60000, help="input rows of a whole run")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    # (N, L, format, tiling) -> matched ranges, and the reasons it is not verified.
    matched = defaultdict(list)
    bad = defaultdict(list)
    configs = set()
    print("| N | L | input rows | approach | tiling | bands | total ms | TE/s | active rows | verdict |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    missing = [p for p in a.files if not os.path.exists(p)]
    for path in a.files:
        if path in missing:
            continue
        for line in open(path):
            try:
                d = json.loads(line)
            except ValueError:
                continue
            first = d.get("first_row", 0)
            rows = d.get("rows", 0)
            if "verify" in d:
                # A marker of the script: the piece's runs timed out, were skipped or failed.
                n, l = d["neurons"], d["layers"]
                configs.add((n, l))
                print(f"| {n} | {l} | {span(first, rows)} | {d['runs']} | | | | | | {d['verify']} |")
                for f, t in runs_of(d["runs"]):
                    bad[(n, l, f, t)].append(f"{d['verify']} in rows {span(first, rows)}")
                continue
            n, l = d.get("neurons"), d.get("layers")
            if "error" in d:
                print(f"| {n or ''} | {l or ''} | {span(first, rows)} | {d['approach']} | "
                      f"{d.get('tiling', '')} | | | | | error: {d['error']} |")
                if n is not None and "tiling" in d:
                    configs.add((n, l))
                    bad[(n, l, d["approach"], d["tiling"])].append(
                        f"error in rows {span(first, rows)}")
                continue
            verdict = d["check"] if d["ok"] else "MISMATCH: " + d["check"]
            print(f"| {n} | {l} | {span(first, rows)} | {d['approach']} | {d.get('tiling', '')} | "
                  f"{d.get('bands', '')} | {d['ms']:.1f} | {d['edges_per_second'] / 1e12:.3f} | "
                  f"{d['active_rows']} | {verdict} |")
            if d["approach"] not in ("csr-ell", "csr-csr", "csc-csc"):
                continue  # the fast path: the truth, or checked on its own
            key = (n, l, d["approach"], d["tiling"])
            configs.add((n, l))
            if d["ok"] and d["check"].startswith("categories match"):
                matched[key].append((first, first + rows))
            else:
                bad[key].append(f"MISMATCH in rows {span(first, rows)}")
    print()
    print("| N | L | approach | tiling | rows matched | summary |")
    print("|---|---|---|---|---|---|")
    for n, l in sorted(configs):
        whole = True
        for f, t in SIX:
            key = (n, l, f, t)
            # The rows 0..covered the matched ranges cover without a gap.
            covered = 0
            for s, e in sorted(matched[key]):
                if s > covered:
                    break
                covered = max(covered, e)
            mismatches = [b for b in bad[key] if b.startswith("MISMATCH")]
            if mismatches:
                verdict = "NOT verified: " + "; ".join(mismatches)
            elif covered >= a.total:
                verdict = "verified (every piece matched)"
            else:
                why = f"rows {covered}..{a.total} not matched"
                if bad[key]:
                    why += " (" + "; ".join(bad[key]) + ")"
                verdict = "NOT verified: " + why
            whole &= verdict.startswith("verified")
            print(f"| {n} | {l} | {f} | {t} | 0..{covered} | {verdict} |")
        state = "VERIFIED (all six thesis runs, every piece matched)" if whole else "not verified"
        print(f"| {n} | {l} | all | | | **{state}** |")
    for p in missing:
        print(f"\nmissing: {p} (its part wrote no lines; see its log.txt)")
    if not configs:
        print("\nno configuration ran")


if __name__ == "__main__":
    main()
