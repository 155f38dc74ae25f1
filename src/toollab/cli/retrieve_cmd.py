"""``toollab retrieve``: find tools for a query, and measure retrievers on a dataset."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from toollab.cli.common import JsonOpt, console, emit_json, handle_errors, progress
from toollab.cli.data_cmd import load_from_cli
from toollab.errors import UsageError
from toollab.schema import Tool
from toollab.tools import ToolPool

retrieve_app = typer.Typer(
    name="retrieve",
    help="Tool retrieval: BM25, dense (all-MiniLM-L6-v2) and hybrid (reciprocal rank fusion).",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    app.add_typer(retrieve_app, name="retrieve")


def _pool(pool: Path | None, fallback: list[Tool]) -> list[Tool]:
    if pool is None:
        return fallback

    return ToolPool.load(pool).tools


def _retriever(name: str, tools: list[Tool], quiet: bool):  # type: ignore[no-untyped-def]
    from toollab.retrieval import get_retriever  # numpy: the [retrieval] extra

    retriever = get_retriever(name)
    with (
        console.status(f"indexing {len(tools)} tools ({name})", spinner="dots")
        if not quiet
        else _Null()
    ):
        retriever.index(tools)
    if retriever.undocumented and not quiet:
        console.print(
            f"[yellow]{len(retriever.undocumented)} tool(s) have no description; "
            "they are indexed by name and parameters only[/]"
        )
    shared = retriever.shared_names
    if shared and not quiet:
        keys = zip(retriever.tools, retriever.keys, strict=True)
        example = next(k for t, k in keys if t.name == shared[0])
        console.print(
            f"[yellow]{len(shared)} tool name(s) are shared by different tools of the pool; "
            f"those tools are listed by category-qualified keys (e.g. {example})[/]"
        )
    return retriever


class _Null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


@retrieve_app.command("eval")
@handle_errors
def eval_cmd(
    data: Path = typer.Option(..., "--data", help="Dataset path (file or folder)."),
    fmt: str = typer.Option(
        ..., "--format", help="Dataset format (seal-tools, bfcl, deer, tooleyes, toollab)."
    ),
    pool: Path | None = typer.Option(
        None,
        "--pool",
        help="Tool pool file (JSONL/JSON; Seal-Tools tool.jsonl works). Default: the dataset's tools.",
    ),
    retriever: str = typer.Option("bm25", "--retriever", help="bm25, dense or hybrid."),
    k: int = typer.Option(5, "--k", help="How many tools to retrieve."),
    limit: int | None = typer.Option(None, "--limit", min=0, help="Only the first N instances."),
    option: list[str] = typer.Option([], "--option", help="Adapter option KEY=VALUE (repeatable)."),
    as_json: bool = JsonOpt,
) -> None:
    """Recall@k, nDCG@k, MRR and the all-gold-in-top-k rate of a retriever on a dataset."""
    import time

    from toollab.retrieval import evaluate_retriever  # numpy: the [retrieval] extra

    ds = load_from_cli(data, fmt, None, option)
    instances = ds.instances[:limit] if limit is not None else ds.instances
    tools = _pool(pool, ds.tools)
    t0 = time.perf_counter()
    r = _retriever(retriever, tools, as_json)
    index_s = time.perf_counter() - t0
    n = sum(1 for i in instances if i.gold)
    with progress(transient=True) as bar:
        task = bar.add_task(f"retrieving ({retriever}, k={k})", total=n)
        report = evaluate_retriever(r, instances, k, on_batch=lambda m: bar.advance(task, m))
    report.index_seconds = index_s
    if as_json:
        emit_json(report.to_dict())
        return
    table = Table(title=f"{retriever} on {ds.name} (pool {report.pool_size} tools)")
    for col in ("instances", f"Recall@{k}", f"nDCG@{k}", f"complete@{k}", "MRR"):
        table.add_column(col, justify="right")
    table.add_row(
        str(report.instances),
        f"{report.recall:.4f}",
        f"{report.ndcg:.4f}",
        f"{report.complete:.4f}",
        f"{report.mrr:.4f}",
    )
    for cat, v in report.by_category.items():
        table.add_row(
            f"{cat} ({int(v['n'])})",
            f"{v['recall']:.4f}",
            f"{v['ndcg']:.4f}",
            f"{v['complete']:.4f}",
            f"{v['mrr']:.4f}",
        )
    console.print(table)
    if report.unreachable_gold:
        console.print(f"[yellow]{report.unreachable_gold} gold tool(s) are not in the pool[/]")
    console.print(f"index {report.index_seconds:.2f}s, queries {report.query_seconds:.2f}s")


@retrieve_app.command("query")
@handle_errors
def query_cmd(
    query: str = typer.Argument(..., help="The user request."),
    pool: Path | None = typer.Option(None, "--pool", help="Tool pool file (JSONL/JSON)."),
    data: Path | None = typer.Option(
        None, "--data", help="Or a dataset whose tool pool to search (with --format)."
    ),
    fmt: str | None = typer.Option(None, "--format", help="The dataset's format (with --data)."),
    option: list[str] = typer.Option([], "--option", help="Adapter option KEY=VALUE (repeatable)."),
    retriever: str = typer.Option("bm25", "--retriever", help="bm25, dense or hybrid."),
    k: int = typer.Option(5, "--k", help="How many tools to return."),
    as_json: bool = JsonOpt,
) -> None:
    """The k tools of a pool that best fit a request.  Tools that share a name with other
    tools of the pool are listed by their category-qualified key (``category/name``)."""
    if (pool is None) == (data is None):
        raise UsageError("give the tools to search: --pool FILE, or --data PATH --format FORMAT")
    if data is not None:
        if fmt is None:
            raise UsageError("--data needs --format (seal-tools, bfcl, deer, tooleyes, toollab)")

        tools = load_from_cli(data, fmt, None, option).tools
    else:
        tools = _pool(pool, [])
    hits = _retriever(retriever, tools, as_json).retrieve(query, k)
    if as_json:
        emit_json(
            {
                "query": query,
                "retriever": retriever,
                "hits": [
                    {
                        "rank": h.rank,
                        "name": h.name,
                        "key": h.key,
                        "category": h.tool.category,
                        "score": h.score,
                    }
                    for h in hits
                ],
            }
        )
        return
    table = Table(title=f"{retriever}: {query}")
    for col in ("rank", "tool", "score", "description"):
        table.add_column(col, overflow="fold")
    for h in hits:
        table.add_row(str(h.rank), h.key, f"{h.score:.4f}", h.tool.description[:80])
    console.print(table)
