# SPDX-License-Identifier: MIT
"""The pieces tools/report.py and tools/report_checks.py share: figures,
verdicts and intervals as the harness gave them, one experiment's table."""
import math


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
    if dirty and p.get("git_dirty_list"):
        state += f": `{p['git_dirty_list']}`"
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


def verdict(t):
    """A target's verdict, as the harness gave it (older JSON: from met and
    resolved)."""
    v = t.get("verdict")
    if v:
        return v
    if t.get("resolved") is False:
        return "not resolved"
    return "met" if t.get("met") else "not met"


def pre_rules(t):
    """A timing target's met or not met from JSON written before issue 33's
    rules (no rounds or method stated): shown as such, never as a verdict
    of today's rules."""
    return ("rounds" not in t and "runs" not in t and not t.get("exact")
            and verdict(t) in ("met", "not met"))


def verdict_md(t):
    v = verdict(t)
    if pre_rules(t):
        return f"{v} (**rounds and method unstated**: JSON from before the 5-round rule)"
    if v == "met":
        return "met"
    if v == "not resolved":
        return "**not resolved** (the goal lies inside the 95% CI)"
    return f"**{v}**"


def interval_text(t, md=True):
    """A target's interval as the harness computed it: a 95% interval with
    its method and rounds, or (fewer than 5 rounds) the range of the
    rounds; older JSON: a bare interval."""
    ci = t.get("ci")
    if not ci or None in ci:
        runs = t.get("runs")
        if t.get("exact") and runs is not None and (t.get("planned") or 0) > 1:
            return f" (worst of {runs} runs)"
        return ""
    n = t.get("rounds")
    if t.get("ci_kind") == "range" or (n is not None and n < 5):
        return f" (range of {n} round{'s' if n != 1 else ''}: {fmt(ci[0])}..{fmt(ci[1])})"
    if t.get("method"):
        return f" (95% CI, {t['method']}, {n} rounds: {fmt(ci[0])}..{fmt(ci[1])})"
    return f" (95% CI {fmt(ci[0])}..{fmt(ci[1])})"


def interval_brackets(t):
    """The same, short, for the targets table: [lo, hi] or (range of n:
    lo-hi)."""
    ci = t.get("ci")
    if not ci or None in ci:
        return ""
    n = t.get("rounds")
    if t.get("ci_kind") == "range" or (n is not None and n < 5):
        return f" (range of {n}: {fmt(ci[0])}-{fmt(ci[1])})"
    m = f" {t['method']}, n={n}" if t.get("method") else ""
    return f" [{fmt(ci[0])}, {fmt(ci[1])}{';' + m if m else ''}]"


def quiet_line(q):
    """How quiet the machine was (bypass-bench's disturbance record)."""
    if not q:
        return "not recorded (JSON from a bypass-bench before disturbance detection)"
    return q.get("line") or "not measured"


def _rx(v):
    """A ratio: two decimals, or three significant digits below 0.1."""
    return f"{v:.2f}" if abs(v) >= 0.1 or v == 0 else f"{v:.3g}"


def ratio_cell(r):
    if r.get("ratio") is None:
        return "-"
    ci = r.get("ratio_ci")
    if ci and None not in ci:
        n = r.get("ratio_ci_rounds")
        if n and n < 5:
            return f"{_rx(r['ratio'])}x (range of {n}: {_rx(ci[0])}-{_rx(ci[1])})"
        return f"{_rx(r['ratio'])}x [{_rx(ci[0])}, {_rx(ci[1])}]"
    return f"{_rx(r['ratio'])}x"


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


def command_of(doc):
    """The command that made a run (older JSON: rebuilt from its mode)."""
    if doc.get("command"):
        return doc["command"]
    mode = doc.get("mode")
    flag = {"quick": " --quick", "smoke": " --smoke"}.get(mode, "")
    return f"bypass-bench {doc.get('modules', 'all')}{flag} (reconstructed: older JSON)"


def exp_md(exp, charts, heading="####", source=None, anchor=False):
    """One experiment: heading, ratio rule, how quiet, table, notes,
    failures, targets with the harness's verdicts, chart, and (source) the
    JSON and command it comes from."""
    out = [f"{heading} {exp['id']}: {exp.get('title', '')}\n"]
    if anchor:
        out.insert(0, f'<a id="{exp["id"]}"></a>\n')
    if source:
        out.append(source + "\n")
    if exp.get("skipped"):
        out.append(f"Skipped: {exp['skipped']}\n")
        return out
    rule = exp.get("ratio_rule")
    if exp.get("ratio_base") or rule:
        base = exp.get("ratio_base") or "the base row"
        per = any(r.get("ratio_ci_rounds") for r in exp.get("rows", []))
        out.append(f"Ratio = row median / median of {base}" +
                   (f": {rule}" if rule else "") +
                   ("; a ratio with an interval is the per-round ratio's estimate "
                    "(the notes give its method), with its 95% interval, or the "
                    "range of fewer than 5 rounds" if per else "") + ".\n")
    out.append(f"Quiet: {quiet_line(exp.get('quiet'))}.\n")
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
        if verdict(t).startswith("no verdict:") and t.get("value") is None:
            out.append(f"- target: {t['what']}: {verdict_md(t)}")
            continue
        out.append(f"- target: {t['what']}: {fmt(t.get('value'))}{interval_text(t)} "
                   f"{t['op']} {fmt(t.get('goal'))}: {verdict_md(t)}")
    if exp.get("targets"):
        out.append("")
    if exp["id"] in charts:
        out.append(f"![{exp['id']}]({charts[exp['id']]})\n")
    return out


def charts_of(charts, i):
    """One run's charts: experiment id -> path (charts is keyed by (run, id))."""
    return {eid: path for (j, eid), path in charts.items() if j == i}


def markdown(docs, charts):
    out = []
    for i, doc in enumerate(docs):
        out.append(f"Machine: {machine_line(doc)}.\n")
        out.append("\n".join(provenance_lines(doc)) + "\n")
        if doc.get("quiet"):
            out.append(f"The whole run ({fmt(doc.get('seconds'))} s): "
                       f"{quiet_line(doc.get('quiet'))}.\n")
        for exp in doc.get("experiments", []):
            out += exp_md(exp, charts_of(charts, i), heading="###")
    return "\n".join(out) + "\n"


# ------------------------------------------------------------ the document


def row_of(e, variant):
    for r in e.get("rows", []):
        if r.get("variant") == variant:
            return r
    return None
