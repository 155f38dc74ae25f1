"""Before / after: the bundled model and its tool-tuned version on held-out data.

Runs (or, with ``--table``, only reads back) one evaluation matrix and prints markdown tables:

* BFCL non-live: simple_python, multiple, parallel, parallel_multiple, irrelevance (first N of
  each; no BFCL data is trained on), prompt template ``json`` (the format trained on);
* Seal-Tools test out-of-domain with upstream's offered tools (first N), its ``seal`` template;
* DEER test (first 1.5 N; the unseen tools), DEER's own two-round agent and prompt;
* ``toollab bench``: the environments' test splits (unseen API combinations and tools).

Each model runs with constrained decoding (``con``) and, on a smaller N, without (``free``).
Ablation adapters (``--ablation NAME=ADAPTER.gguf``) run the BFCL part and the bench only.
Every run directory is kept under ``--out``; a run that finished is not run again, so the
command goes on after a kill.

    python benchmarks/bench_tuned.py --data ../shared/data --out runs/eval
    python benchmarks/bench_tuned.py --out runs/eval --table
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

BFCL_CATS = ("simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance")
MODELS = {"base": "bundled:smollm2-135m", "tuned": "bundled:smollm2-135m-tools"}


def _run(args: list[str], done: Path) -> None:
    if done.is_file():
        return
    print("$ toollab " + " ".join(args), file=sys.stderr, flush=True)
    subprocess.run(["toollab", *args, "--json"], check=False, stdout=subprocess.DEVNULL)


def _eval(model: str, data: Path, fmt: str, extra: list[str], n: int, flag: str, d: Path) -> None:
    args = ["eval", "-m", model, "--data", str(data), "--format", fmt, *extra]
    _run([*args, "-n", str(n), flag, "--out", str(d)], d / "results.json")


def run_model(key: str, model: str, mode: str, n: int, data: Path, out: Path, full: bool) -> None:
    flag = "--constrained" if mode == "con" else "--no-constrained"
    o = out / f"{key}-{mode}"
    for cat in BFCL_CATS:
        extra = ["-o", f"categories={cat}", "-t", "json"]
        _eval(model, data / "bfcl", "bfcl", extra, n, flag, o / f"bfcl-{cat}")
    bench_n = 8 if full and mode == "con" else 4
    if full:
        extra = ["-o", "splits=test_out_domain"]
        _eval(model, data / "seal-tools", "seal-tools", extra, n, flag, o / "seal")
        _eval(model, data / "deer", "deer", [], n * 3 // 2, flag, o / "deer")
    d = o / "bench"
    _run(["bench", "-m", model, "-n", str(bench_n), flag, "--out", str(d)], d / "bench.json")


# -- the tables -------------------------------------------------------------------------------------


def _read(path: Path) -> dict[str, Any] | None:
    return json.loads(path.read_text()) if path.is_file() else None


def figures(run: Path) -> dict[str, float | None]:
    """The headline figures of one model × mode folder (None where a run is missing)."""
    out: dict[str, float | None] = {}
    for cat in BFCL_CATS:
        r = _read(run / f"bfcl-{cat}" / "results.json")
        out[f"BFCL {cat}"] = r["metrics"]["bfcl"].get(cat) if r else None
    r = _read(run / "seal" / "results.json")
    seal = (r or {}).get("metrics", {}).get("seal_tools", {})
    out["Seal OOD Tool F1"] = seal.get("tool_f1")
    out["Seal OOD Param F1"] = seal.get("param_f1")
    r = _read(run / "deer" / "results.json")
    deer = (r or {}).get("metrics", {}).get("deer", {})
    out["DEER P_DS"] = deer.get("P_DS")
    out["DEER P_DC"] = deer.get("P_DC")
    b = _read(run / "bench" / "bench.json")
    overall = (b or {}).get("overall", {})
    for k in ("success", "tool_f1", "param_f1", "decision_acc"):
        out[f"bench {k}"] = overall.get(k)
    return out


def _n(run: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    for cat in BFCL_CATS:
        r = _read(run / f"bfcl-{cat}" / "results.json")
        if r:
            counts[f"BFCL {cat}"] = int(r["breakdown"]["bfcl"][cat]["total"])
    for name, path in (("Seal", "seal"), ("DEER", "deer")):
        r = _read(run / path / "results.json")
        if r:
            counts[name] = int(r["run"]["instances"])
    b = _read(run / "bench" / "bench.json")
    if b:
        counts["bench"] = sum(int(e["n"]) for e in b["envs"].values())
    return counts


def _valid(run: Path, cat: str) -> dict[str, bool]:
    r = _read(run / f"bfcl-{cat}" / "results.json")
    rows = (r or {}).get("per_sample", {}).get("bfcl", {})
    return {k.split("#")[0]: bool(v["valid"]) for k, v in rows.items()}


def ablation_table(out: Path, names: list[str]) -> str:
    """Each ablation against the base and the full recipe on the very same instances: BFCL on
    the ablation's own instance ids, the bench on its own split (``-n 4``; the base and the full
    recipe ran it in ``bench4``)."""
    cols = ["base-con", "tuned-con", *names]
    lines = ["| figure | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
    for cat in BFCL_CATS:
        ids = next((list(v) for v in (_valid(out / n, cat) for n in names) if v), [])
        cells = []
        for c in cols:
            valid = _valid(out / c, cat)
            hit = [valid[i] for i in ids if i in valid]
            ok = hit and len(hit) == len(ids)
            cells.append(f"{100 * sum(hit) / len(hit):.1f}" if ok else "–")
        lines.append(f"| BFCL {cat} (n={len(ids)}) | " + " | ".join(cells) + " |")
    for k in ("success", "tool_f1", "param_f1", "decision_acc"):
        cells = []
        for c in cols:
            sub = "bench4" if c in ("base-con", "tuned-con") else "bench"
            v = (_read(out / c / sub / "bench.json") or {}).get("overall", {}).get(k)
            cells.append("–" if v is None else f"{100 * v:.1f}")
        lines.append(f"| bench {k} (n=52) | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def table(out: Path, columns: list[str]) -> str:
    runs = {c: figures(out / c) for c in columns if (out / c).is_dir()}
    if not runs:
        return "(no runs)"
    rows = list(next(iter(runs.values())))
    lines = ["| figure | " + " | ".join(runs) + " |", "|---|" + "---:|" * len(runs)]
    for row in rows:
        vals = [runs[c][row] for c in runs]
        if all(v is None for v in vals):
            continue
        cells = ["–" if v is None else f"{100 * v:.1f}" for v in vals]
        lines.append(f"| {row} | " + " | ".join(cells) + " |")
    sizes = {c: _n(out / c) for c in runs}
    lines.append("")
    lines.append("Instances: " + "; ".join(f"{c}: {json.dumps(s)}" for c, s in sizes.items()))
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=Path("../shared/data"))
    ap.add_argument("--out", type=Path, default=Path("runs/eval"))
    ap.add_argument("--n", type=int, default=60, help="instances per BFCL category (con)")
    ap.add_argument("--n-free", type=int, default=30, help="the same without constraints")
    ap.add_argument("--ablation", action="append", default=[], metavar="NAME=ADAPTER.gguf")
    ap.add_argument("--table", action="store_true", help="only print the tables")
    a = ap.parse_args()
    ablations = dict(x.split("=", 1) for x in a.ablation)
    if not a.table:
        from toollab.models.bundled import bundled_gguf_path

        base = bundled_gguf_path()
        for key, model in MODELS.items():
            run_model(key, model, "con", a.n, a.data, a.out, full=True)
        for name, adapter in ablations.items():
            run_model(
                name, f"llamacpp:{base}+lora={adapter}", "con", a.n // 2, a.data, a.out, False
            )
        for key, model in MODELS.items():  # the ablations' bench split, for the same comparison
            d = a.out / f"{key}-con" / "bench4"
            _run(["bench", "-m", model, "-n", "4", "--out", str(d)], d / "bench.json")
        for key, model in MODELS.items():
            run_model(key, model, "free", a.n_free, a.data, a.out, full=True)
    print("## Constrained decoding\n")
    print(table(a.out, ["base-con", "tuned-con"]))
    print("\n## Free decoding\n")
    print(table(a.out, ["base-free", "tuned-free"]))
    if ablations or a.table:
        skip = ("base-con", "tuned-con")
        names = sorted(p.name for p in a.out.glob("*-con") if p.name not in skip)
        print("\n## Ablation (constrained)\n")
        print(ablation_table(a.out, names))


if __name__ == "__main__":
    main()
