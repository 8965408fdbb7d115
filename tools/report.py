#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Render bypass-bench JSON as Markdown tables and PNG charts.

    report.py results/bench.json [more.json ...] [--out DIR] [--md FILE]

Writes DIR/<experiment>.png (one chart per experiment) and a Markdown file
(default DIR/report.md) with, per experiment, the side-by-side table, its
notes and its targets, and the machine the figures came from.  Charts need
matplotlib (Debian: python3-matplotlib); without it only Markdown is written.

Rows whose params carry {"series": ..., "x": ...} are drawn as curves (one
line per series against x), e.g. fault latency against thread count; other
experiments are drawn as horizontal bars of the median with the p99 marked.
"""
import argparse
import json
import math
import os
import sys


def fmt(v):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    a = abs(v)
    if a >= 1e7:
        return f"{v:.3g}"
    if a >= 100:
        return f"{v:,.0f}"
    if a >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def machine_line(doc):
    m = doc.get("machine", {})
    hz = m.get("tsc_hz") or 0
    return (f"{m.get('cpu_model', '?')}, {m.get('cores', '?')} cores, "
            f"Linux {m.get('kernel', '?')}, TSC {hz / 1e9:.3f} GHz; "
            f"{doc.get('mode', '?')} mode, {doc.get('rounds', '?')} rounds, "
            f"{doc.get('date', '?')}")


def provenance_lines(doc):
    """What the run was measured on and with (issue 9's provenance)."""
    p = doc.get("provenance")
    if not p:
        return ["Provenance: not recorded (JSON from a bypass-bench before provenance)."]
    commit = p.get("git_commit") or "unknown"
    dirty = p.get("git_dirty")
    state = (" with uncommitted changes (dirty tree)" if dirty else
             " (clean tree)" if dirty is False else " (tree state unknown)")
    out = [f"- source: commit `{commit[:12]}`{state}"]
    env = p.get("env") or {}
    out.append("- BYPASS_* environment: " +
               (", ".join(f"`{k}={v}`" for k, v in sorted(env.items())) or "none set"))
    k = p.get("kernel") or {}
    if k:
        out.append("- kernel settings: " + "; ".join(f"{n} = `{v}`" for n, v in k.items()))
    facts = dict(p.get("facts") or {})
    swap = facts.pop("pager.swap_o_direct", None)
    out.append("- swap file O_DIRECT: " +
               (swap if swap is not None else "not reported (the pager experiment did not "
                "report it in this run)"))
    for n, v in facts.items():
        out.append(f"- {n}: {v}")
    pair = p.get("cpu_pair") or {}
    if pair:
        out.append(f"- the two CPUs of cross-core experiments: {pair.get('cpus')}, "
                   f"{pair.get('relation', '?')}")
    if p.get("loadavg_start") or p.get("loadavg_end"):
        out.append(f"- /proc/loadavg at start: `{p.get('loadavg_start')}`, at end: "
                   f"`{p.get('loadavg_end')}` (other work on the machine moves every figure)")
    c = p.get("cpu") or {}
    if c:
        out.append(f"- CPU: {c.get('model', '?')}, {c.get('online', '?')} online "
                   f"({c.get('configured', '?')} configured, {c.get('usable', '?')} usable "
                   f"by the run)")
    return out


def ratio_cell(r):
    if r.get("ratio") is None:
        return "-"
    ci = r.get("ratio_ci")
    if ci and None not in ci:
        return f"{r['ratio']:.2f}x [{ci[0]:.2f}, {ci[1]:.2f}]"
    return f"{r['ratio']:.2f}x"


def table(exp):
    rows = exp.get("rows", [])
    if not rows:
        return ""
    cyc = any(r.get("unit") == "cycles" for r in rows)
    src = any(r.get("source") for r in rows)
    ratio = any(r.get("ratio") is not None for r in rows)
    note = any(r.get("note") for r in rows)
    head = ["variant", "kind", "median", "mean", "p99"]
    if cyc:
        head += ["median ns", "p99 ns"]
    head += ["unit"]
    if ratio:
        head += ["ratio"]
    if src:
        head += ["source"]
    if note:
        head += ["note"]
    out = ["| " + " | ".join(head) + " |",
           "|" + "|".join("---" if i < 2 or h in ("unit", "note", "source") else "---:"
                          for i, h in enumerate(head)) + "|"]
    for r in rows:
        cells = [r.get("variant", ""), r.get("kind", ""), fmt(r.get("median")),
                 fmt(r.get("mean")), fmt(r.get("p99"))]
        if cyc:
            cells += [fmt(r.get("median_ns")), fmt(r.get("p99_ns"))]
        cells += [r.get("unit", "")]
        if ratio:
            cells += [ratio_cell(r)]
        if src:
            cells += [r.get("source") or ""]
        if note:
            cells += [r.get("note") or ""]
        out.append("| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |")
    return "\n".join(out)


def markdown(docs, charts):
    out = []
    for doc in docs:
        out.append(f"Machine: {machine_line(doc)}.\n")
        out.append("\n".join(provenance_lines(doc)) + "\n")
        for exp in doc.get("experiments", []):
            out.append(f"### {exp['id']}: {exp.get('title', '')}\n")
            if exp.get("skipped"):
                out.append(f"Skipped: {exp['skipped']}\n")
                continue
            rule = exp.get("ratio_rule")
            if exp.get("ratio_base") or rule:
                base = exp.get("ratio_base") or "the base row"
                out.append(f"Ratio = row median / median of {base}" +
                           (f": {rule}.\n" if rule else ".\n"))
            out.append(table(exp) + "\n")
            for n in exp.get("notes", []):
                out.append(f"- {n}")
            if exp.get("notes"):
                out.append("")
            for f in exp.get("failures", []):
                out.append(f"- **FAILED**: {f}")
            if exp.get("failures"):
                out.append("")
            for t in exp.get("targets", []):
                if t.get("resolved") is False:
                    mark = "**not resolved** (the goal lies inside the 95% CI)"
                else:
                    mark = "met" if t.get("met") else "**not met**"
                ci = t.get("ci")
                cis = (f" (95% CI {fmt(ci[0])}..{fmt(ci[1])})"
                       if ci and None not in ci else "")
                out.append(f"- target: {t['what']}: {fmt(t.get('value'))}{cis} "
                           f"{t['op']} {fmt(t.get('goal'))}: {mark}")
            if exp.get("targets"):
                out.append("")
            if exp["id"] in charts:
                out.append(f"![{exp['id']}]({charts[exp['id']]})\n")
    return "\n".join(out) + "\n"


def draw(exp, path, plt):
    rows = [r for r in exp.get("rows", []) if r.get("median") is not None]
    if not rows:
        return False
    unit = rows[0].get("unit", "")
    curves = [r for r in rows if isinstance(r.get("params"), dict)
              and "series" in r["params"] and "x" in r["params"]]
    fig, ax = plt.subplots(figsize=(9, max(3.0, 0.42 * len(rows) + 1.2)))
    if curves:
        series = {}
        for r in curves:
            series.setdefault(r["params"]["series"], []).append(
                (r["params"]["x"], r["median"], r.get("p99")))
        for name, pts in series.items():
            pts.sort()
            xs = [p[0] for p in pts]
            ax.plot(xs, [p[1] for p in pts], marker="o", label=f"{name} (median)")
            if all(p[2] is not None for p in pts):
                ax.plot(xs, [p[2] for p in pts], linestyle=":", alpha=0.6,
                        label=f"{name} (p99)")
        ax.set_xlabel(curves[0]["params"].get("x_label", "x"))
        ax.set_ylabel(unit)
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    else:
        colors = {"baseline": "#8c8c8c", "bypass": "#1f77b4", "limit": "#2ca02c",
                  "peer": "#ff7f0e"}
        labels = [r["variant"] for r in rows][::-1]
        med = [r["median"] for r in rows][::-1]
        p99 = [r.get("p99") or r["median"] for r in rows][::-1]
        col = [colors.get(r.get("kind"), "#9467bd") for r in rows][::-1]
        y = range(len(rows))
        ax.barh(y, med, color=col)
        higher = rows[0].get("higher_is_better")
        if not higher:
            ax.scatter(p99, y, marker="|", color="black", s=80, label="p99")
            ax.legend(fontsize=8, loc="lower right")
        ax.set_yticks(list(y))
        ax.set_yticklabels(labels, fontsize=8)
        vals = [v for v in med + p99 if v and v > 0]
        if vals and max(vals) / min(vals) > 50:
            ax.set_xscale("log")
        ax.set_xlabel(f"median {unit}" + (" (higher is better)" if higher else
                                          " (lower is better)"))
        ax.grid(axis="x", alpha=0.3)
    ax.set_title(f"{exp['id']}: {exp.get('title', '')}"[:110], fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json", nargs="+")
    ap.add_argument("--out", default="results", help="directory for charts and report.md")
    ap.add_argument("--md", help="Markdown output file (default OUT/report.md)")
    ap.add_argument("--chart-prefix", default="",
                    help="path prefix for chart links in the Markdown")
    args = ap.parse_args()
    docs = []
    for p in args.json:
        with open(p) as f:
            docs.append(json.load(f))
    os.makedirs(args.out, exist_ok=True)
    charts = {}
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        plt = None
        print("report: matplotlib missing (apt-get install python3-matplotlib): "
              "Markdown only", file=sys.stderr)
    if plt:
        for doc in docs:
            for exp in doc.get("experiments", []):
                if exp.get("skipped"):
                    continue
                name = exp["id"].replace("/", "_") + ".png"
                if draw(exp, os.path.join(args.out, name), plt):
                    charts[exp["id"]] = args.chart_prefix + name
    md = markdown(docs, charts)
    dest = args.md or os.path.join(args.out, "report.md")
    with open(dest, "w") as f:
        f.write(md)
    print(f"report: {dest}" + (f", {len(charts)} charts in {args.out}" if charts else ""))


if __name__ == "__main__":
    main()
