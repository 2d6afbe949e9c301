#!/usr/bin/env python3
"""assemble_dev.py — builds a report page without the C writer, for developing
and testing report/app/*.{js,css} against real Runs.

It follows PLAN12.md's payload schema 1: the summary and manifest come from
`nunatak summary --json` / the Run's manifest.json, the loci, flame and events
parts are read from the Run's pivot.sqlite, the components from
`nunatak components --json` files. It computes no Diagnostic: it only copies.

  assemble_dev.py --run RUN_DIR --summary S.json --summary-text S.txt
                  [--components DIR] [--no-source] [--hostile] -o PAGE.html

--components DIR holds {wall_s,cpu_s}.{self,inclusive}.json. --hostile renames
frames and a Hotspot with markup-like names (`</script>`, `<img onerror>`)
to prove the page builds DOM with text only.
"""
import argparse
import datetime
import glob
import html
import json
import os
import re
import sqlite3

APP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "report", "app")
RANK = {"measured": 0, "estimated": 1, "unavailable": 2}


def loci_of(db):
    rows = db.execute("select id, node, rank, tgid, tid, comm, exe from loci order by id").fetchall()
    index = {r[0]: i for i, r in enumerate(rows)}
    loci = [{"id": r[0], "node": r[1], "rank": r[2], "tgid": r[3], "tid": r[4],
             "comm": r[5], "exe": r[6]} for r in rows]
    return loci, index


def frame_name(row):
    _, hotspot, module, offset = row
    return hotspot if hotspot else "%s+0x%x" % (module, offset)


def flame_of(db, lindex):
    counter = db.execute("select counter from samples group by counter "
                         "order by sum(sample_count) desc limit 1").fetchone()
    addr = {}
    for r in db.execute("select a.id, h.name, m.display_name, a.offset, m.identity "
                        "from addresses a join modules m on m.id = a.module "
                        "left join hotspots h on h.id = a.hotspot"):
        addr[r[0]] = (frame_name(r[:4]), r[2], r[4] == "pseudo:kernel")
    frames, fidx = [], {}
    frames_of = {}
    for stack, pos, a in db.execute("select stack, position, address from stack_frames "
                                    "order by stack, position"):
        key = addr[a]
        if key not in fidx:
            fidx[key] = len(frames)
            frames.append({"name": key[0], "module": key[1], "kernel": key[2]})
        frames_of.setdefault(stack, []).append(fidx[key])
    stacks = {}
    for locus, stack, n in db.execute("select locus, stack, sum(sample_count) from samples "
                                      "group by locus, stack"):
        s = stacks.setdefault(stack, {"n": 0, "l": []})
        s["n"] += n
        s["l"].append([lindex[locus], n])
    trunc = dict(db.execute("select id, truncated from stacks"))
    out = [{"f": list(reversed(frames_of.get(k, []))), "t": trunc.get(k, 0), "n": v["n"],
            "l": v["l"]} for k, v in stacks.items()]
    out.sort(key=lambda s: -s["n"])
    total = sum(s["n"] for s in out)
    return {"counter": counter[0] if counter else None, "frames": frames, "stacks": out,
            "samples": total, "kept_samples": total, "limit": None}


def events_of(db, lindex):
    rows = db.execute("select locus, name, start_ns, duration_ns, bytes, peer from events "
                      "order by start_ns").fetchall()
    if not rows:
        return {"available": False, "reason": "the Run was made without --mpi-events",
                "t0_ns": None, "names": [], "events": [], "limit": None}
    names = sorted({r[1] for r in rows})
    t0 = rows[0][2]
    ev = [[lindex[r[0]], names.index(r[1]), r[2] - t0, r[3], r[4], r[5]] for r in rows]
    return {"available": True, "reason": None, "t0_ns": t0, "names": names, "events": ev,
            "limit": None}


def inline_of(db, name):
    chains = {}
    for a, in db.execute("select a.id from addresses a join hotspots h on h.id = a.hotspot "
                         "where h.name = ?", (name,)):
        fr = db.execute("select function, file, line from frames where address = ? "
                        "order by depth desc", (a,)).fetchall()
        if len(fr) < 2:
            continue
        n = db.execute("select coalesce(sum(s.sample_count), 0) from samples s join "
                       "stack_frames f on f.stack = s.stack and f.position = 0 "
                       "where f.address = ?", (a,)).fetchone()[0]
        key = json.dumps(fr)
        chains[key] = chains.get(key, 0) + n
    out = [{"frames": [{"function": f, "file": fi, "line": li} for f, fi, li in json.loads(k)],
            "samples": n} for k, n in chains.items()]
    out.sort(key=lambda c: -c["samples"])
    return out[:20]


def worst_quality(h):
    if not h.get("above_floor"):
        return None
    qs = [v["quality"] for v in h["diagnostic"].values() if isinstance(v, dict) and "quality" in v]
    return max(qs, key=lambda q: RANK[q]) if qs else None


def roofline_of(manifest):
    ceil = {c["name"]: c for c in manifest.get("machine", {}).get("ceilings", [])}

    def v(name):
        c = ceil.get(name)
        if not c:
            return {"value": None, "unit": None, "quality": "unavailable",
                    "reason": "no %s Ceiling in the manifest" % name}
        return {"value": c["value"], "unit": c["unit"], "quality": c["quality"],
                "reason": c["reason"]}
    peak, bw = v("flops_dp"), v("dram_bandwidth")
    ridge, reason = None, None
    if peak["value"] and bw["value"]:
        ridge = {"value": peak["value"] / bw["value"], "unit": "flop/B",
                 "quality": "estimated" if "estimated" in (peak["quality"], bw["quality"])
                 else "measured", "reason": None}
    else:
        reason = "dram_bandwidth: " + (bw["reason"] or "unavailable")
    return {"peak": peak, "bandwidth": bw, "ridge": ridge, "reason": reason}


def components_of(d):
    if not d:
        return None
    out = {}
    for metric in ("wall_s", "cpu_s"):
        out[metric] = {}
        for kind in ("self", "inclusive"):
            with open(os.path.join(d, "%s.%s.json" % (metric, kind))) as f:
                out[metric][kind] = json.load(f)
    return out


def strip_source(summary):
    for h in summary["hotspots"]:
        s = h.get("source")
        if s:
            s["status"], s["reason"] = "disabled", "the report was made with --no-source"
            for line in s.get("lines", []):
                line["text"] = None


def hostile(summary, flame):
    bad = "</script><img src=x onerror=alert(1)>std::vector<int>::operator[]&&"
    if summary["hotspots"]:
        summary["hotspots"][0]["name"] = bad
    for f in flame["frames"][:5]:
        f["name"] = bad + f["name"]


def script_json(payload):
    s = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
    for a, b in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                 ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        s = s.replace(a, b)
    return s


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", required=True)
    ap.add_argument("--summary", required=True)
    ap.add_argument("--summary-text", required=True)
    ap.add_argument("--components")
    ap.add_argument("--no-source", action="store_true")
    ap.add_argument("--hostile", action="store_true")
    ap.add_argument("-o", required=True)
    a = ap.parse_args()
    with open(a.summary) as f:
        summary = json.load(f)
    with open(os.path.join(a.run, "manifest.json")) as f:
        manifest = json.load(f)
    with open(a.summary_text) as f:
        text = f.read()
    db = sqlite3.connect("file:" + os.path.join(a.run, "pivot.sqlite") + "?mode=ro", uri=True)
    loci, lindex = loci_of(db)
    for h in summary["hotspots"]:
        h["quality"] = worst_quality(h)
        h["inline"] = inline_of(db, h["name"])
    flame = flame_of(db, lindex)
    if a.no_source:
        strip_source(summary)
    if a.hostile:
        hostile(summary, flame)
    payload = {
        "format": {"name": "nunatak-report", "schema": 1, "generated_by": "assemble_dev.py"},
        "generated": datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ"),
        "no_source": a.no_source, "run_dir": os.path.abspath(a.run), "manifest": manifest,
        "summary": summary, "summary_text": text, "roofline": roofline_of(manifest),
        "loci": loci, "flame": flame, "events": events_of(db, lindex),
        "components": components_of(a.components),
    }
    page = open(os.path.join(APP, "page.html")).read()
    css = "".join(open(p).read() for p in sorted(glob.glob(os.path.join(APP, "*.css"))))
    js = "\n;\n".join(open(p).read() for p in sorted(glob.glob(os.path.join(APP, "*.js"))))
    name = manifest.get("run", {}).get("name") or os.path.basename(a.run)
    fill = {"{{TITLE}}": html.escape("nunatak — " + name), "{{STYLE}}": css,
            "{{SUMMARY_TEXT}}": html.escape(text), "{{PAYLOAD}}": script_json(payload),
            "{{SCRIPT}}": js}
    page = re.sub(r"\{\{[A-Z_]+\}\}", lambda m: fill[m.group(0)], page)
    with open(a.o, "w") as f:
        f.write(page)


if __name__ == "__main__":
    main()
