"""BFCL AST accuracy (gorilla ``ast_checker``), relevance / irrelevance and the official aggregation.

The model output is decoded with the upstream ``default_decode_ast_prompting`` rule
(:func:`toollab.parsing.python_calls.bfcl_decode_ast`), then checked against the possible
answers (``GoldCall.acceptable``; ``""`` = may be omitted) and the raw BFCL function docs
(``Tool.metadata["raw"]``).  Error types are the upstream strings, e.g.
``simple_function_checker:wrong_func_name`` or ``ast_decoder:decoder_failed``.

Aggregation (``eval_runner_helper.generate_leaderboard_csv``): each category's accuracy under its
own name (``simple_python``, ``multiple``, ``irrelevance``, ...); ``simple`` = unweighted mean of
simple_python / simple_java / simple_javascript; ``non_live_ast`` = unweighted mean of simple,
multiple, parallel, parallel_multiple; ``non_live_overall`` = the same with irrelevance;
``live_ast`` / ``live_overall`` = count-weighted means of the four live AST / all six live
categories.  Upstream counts a category that was not run as 0 (weighted by its full size in the
live means).  It prints ``simple``, ``non_live_ast`` and ``live_ast`` as ``N/A`` then, which
toollab reports as ``None`` with a note (so with the Python categories alone ``simple`` and
``non_live_ast`` are ``None``).  The overall figures it prints as numbers
(``display_na_if_category_missing=False``): toollab reports ``non_live_overall`` and
``live_overall`` the same way, missing categories counted as 0, with a note naming them (``None``
only when no category of the figure was scored).  Two figures are toollab's own, named so:
``non_live_ast_python`` (``non_live_ast`` with simple_python in place of ``simple``) and
``pooled_accuracy`` (correct entries over all scored entries, every category pooled).
Java and JavaScript entries are checked with the Python type rules (toollab has no Java/JS type
converter); a note says so when such entries are scored.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from toollab.eval.metrics.registry import MetricResult, Scorer, instance_key, scorer
from toollab.parsing.python_calls import bfcl_decode_ast
from toollab.schema import Instance
from toollab.schema.record import Prediction

PYTHON_TYPE_MAPPING: dict[str, type] = {
    "string": str,
    "integer": int,
    "float": float,
    "boolean": bool,
    "array": list,
    "tuple": list,
    "dict": dict,
    "any": str,
}
NESTED_TYPES = ("array", "tuple")
# JSON Schema names an adapter may have used instead of BFCL's own
_SCHEMA_TO_BFCL = {"object": "dict", "number": "float", "null": "any"}

_STANDARDIZE = re.compile(r"[ \,\.\/\-\_\*\^]")

AST_CATEGORIES = ("simple", "multiple", "parallel", "parallel_multiple")
#: the categories whose accuracies average (unweighted) into ``simple``
SIMPLE_PARTS = ("simple_python", "simple_java", "simple_javascript")
#: older category names, reported under the v4 names
CATEGORY_NAMES = {
    "simple": "simple_python",
    "java": "simple_java",
    "javascript": "simple_javascript",
}
LIVE_AST = ("live_simple", "live_multiple", "live_parallel", "live_parallel_multiple")
LIVE_ALL = (*LIVE_AST, "live_irrelevance", "live_relevance")
#: entries per live category in the BFCL v4 data: upstream weights a live category that was not
#: run by its full size, at accuracy 0 (``get_category_score``)
LIVE_SIZES = {
    "live_simple": 258,
    "live_multiple": 1053,
    "live_parallel": 16,
    "live_parallel_multiple": 24,
    "live_irrelevance": 884,
    "live_relevance": 16,
}

Check = dict[str, Any]


def _ok() -> Check:
    return {"valid": True, "error": [], "error_type": None}


def _fail(error_type: str, msg: str) -> Check:
    return {"valid": False, "error": [msg], "error_type": error_type}


def standardize_string(s: str) -> str:
    """Drop ``[ ,./-_*^]``, lowercase, and turn ``'`` into ``"`` (upstream)."""
    return _STANDARDIZE.sub("", s).lower().replace("'", '"')


def _answer_type(possible: list[Any]) -> type | None:
    for a in possible:
        if a != "":
            return type(a)
    return None


def type_checker(
    param: str,
    value: Any,
    possible: list[Any],
    type_desc: str,
    expected: type,
    nested: type | None,
) -> Check:
    """Upstream ``type_checker``: one level of nested checking, variables by answer type."""
    res: Check = {
        "valid": True,
        "error": [],
        "is_variable": False,
        "error_type": "type_error:simple",
    }
    ans_type = _answer_type(possible)
    is_variable = ans_type is not None and ans_type != expected
    if type(value) is expected:
        if nested is None:
            res["is_variable"] = is_variable
            return res
        for item in possible:
            flag = True
            if type(item) is list:
                seq: Any = value
                for v in seq:
                    sub = type_checker(param, v, item, str(nested), nested, None)
                    if not sub["valid"]:
                        flag = False
                        break
            if flag:
                return {"valid": True, "error": [], "is_variable": is_variable}
        res["valid"] = False
        res["error"] = [f"Nested type checking failed for parameter {param!r}."]
        res["error_type"] = "type_error:nested"
    if ans_type is not None and type(value) is ans_type:
        res["is_variable"] = True
        return res
    res["valid"] = False
    res["error"].append(
        f"Incorrect type for parameter {param!r}. Expected type {type_desc}, "
        f"got {type(value).__name__}. Parameter value: {value!r}."
    )
    res["error_type"] = "type_error:simple"
    return res


def string_checker(param: str, value: str, possible: list[Any]) -> Check:
    std = [standardize_string(a) for a in possible if type(a) is str]
    if standardize_string(value) not in std:
        return _fail("value_error:string", f"Invalid value for parameter {param!r}: {value!r}.")
    return _ok()


def _standardized_list(ans: Any) -> list[Any] | None:
    """One possible answer as upstream ``list_checker`` standardizes it: element by element
    (``range(len(ans))``), so the omission marker ``""`` becomes ``[]`` and a string a list of
    its characters; ``None`` where upstream would fail (no length)."""
    if isinstance(ans, str):
        return [standardize_string(ch) for ch in ans]
    if isinstance(ans, list | tuple):
        return [standardize_string(a) if type(a) is str else a for a in ans]
    return None


def list_checker(param: str, value: list[Any], possible: list[Any]) -> Check:
    """Upstream ``list_checker``: the standardized list must equal one standardized answer.
    ``""`` (may be omitted) standardizes to ``[]``, so an empty list passes where it is listed."""
    std_value = [standardize_string(v) if type(v) is str else v for v in value]
    std_possible = [std for ans in possible if (std := _standardized_list(ans)) is not None]
    if std_value not in std_possible:
        return _fail("value_error:list/tuple", f"Invalid value for parameter {param!r}: {value!r}.")
    return _ok()


def dict_checker(param: str, value: dict[str, Any], possible: list[Any]) -> Check:
    res: Check = {"valid": False, "error": [], "error_type": "dict_checker:unclear"}
    for ans in possible:
        if ans == "":
            continue
        res = {"valid": False, "error": [], "error_type": "dict_checker:unclear"}
        if not isinstance(ans, dict):
            continue
        flag = True
        for key, v in value.items():
            if key not in ans:
                res = _fail("value_error:dict_key", f"Unexpected dict key parameter: {key!r}.")
                flag = False
                break
            std_v = standardize_string(v) if type(v) is str else v
            opts = ans[key] if isinstance(ans[key], list) else [ans[key]]
            std_opts = [standardize_string(a) if type(a) is str else a for a in opts]
            if std_v not in std_opts:
                res = _fail(
                    "value_error:dict_value", f"Invalid value for parameter {key!r}: {v!r}."
                )
                flag = False
                break
        for key, opts in ans.items():
            if key not in value and "" not in (opts if isinstance(opts, list) else [opts]):
                res = _fail("value_error:dict_key", f"Missing dict key parameter: {key!r}.")
                flag = False
                break
        if flag:
            return _ok()
    return res


def list_dict_checker(param: str, value: list[Any], possible: list[Any]) -> Check:
    """Upstream ``list_dict_checker``: same length as one answer, dicts checked by position.
    The length test is ``len(value) != len(answer)``, so ``""`` (length 0) accepts ``[]``."""
    res: Check = {"valid": False, "error": [], "error_type": "list_dict_checker:unclear"}
    for ans in possible:
        if not isinstance(ans, list | str):
            continue
        if len(value) != len(ans):
            res = _fail("value_error:list_dict_count", "Wrong number of dictionaries in the list.")
            continue
        flag = True
        for i, item in enumerate(value):
            res = (
                dict_checker(param, item, [ans[i]])
                if isinstance(item, dict)
                else _fail("value_error:dict_value", f"Item {i} of {param!r} is not a dict.")
            )
            if not res["valid"]:
                flag = False
                break
        if flag:
            return _ok()
    return res


def _param_type(details: dict[str, Any]) -> str:
    t = details.get("type", "any") if isinstance(details, dict) else "any"
    if not isinstance(t, str):
        return "any"
    return _SCHEMA_TO_BFCL.get(t, t)


def simple_function_checker(
    func_doc: dict[str, Any], model_call: dict[str, Any], answer: dict[str, Any]
) -> Check:
    """Upstream ``simple_function_checker`` (Python rules)."""
    possible: dict[str, list[Any]] = next(iter(answer.values()))
    func_name = func_doc.get("name", "")
    params_doc = func_doc.get("parameters") or {}
    details = params_doc.get("properties") or {}
    required = params_doc.get("required") or []

    if func_name not in model_call:
        return _fail(
            "simple_function_checker:wrong_func_name",
            f"Function name {func_name!r} not found in model output.",
        )
    model_params = model_call[func_name]
    for p in required:
        if p not in model_params:
            return _fail(
                "simple_function_checker:missing_required", f"Missing required parameter: {p!r}."
            )
    for param, value in model_params.items():
        if param not in details or param not in possible:
            return _fail(
                "simple_function_checker:unexpected_param", f"Unexpected parameter: {param!r}."
            )
        type_desc = _param_type(details[param])
        expected = PYTHON_TYPE_MAPPING.get(type_desc, str)
        nested: type | None = None
        if type_desc in NESTED_TYPES:
            items = details[param].get("items") or {}
            nested_desc = _param_type(items) if items else None
            nested = PYTHON_TYPE_MAPPING.get(nested_desc, str) if nested_desc else None
        if type_desc == "tuple" and type(value) is tuple:
            value = list(value)
        if type_desc == "float" and type(value) is int:
            value = float(value)
        opts = possible[param] if isinstance(possible[param], list) else [possible[param]]
        tc = type_checker(param, value, opts, type_desc, expected, nested)
        if not tc["valid"]:
            return {"valid": False, "error": tc["error"], "error_type": tc["error_type"]}
        if not tc["is_variable"]:
            if expected is dict:
                r = dict_checker(param, value, opts)
                if not r["valid"]:
                    return r
                continue
            if expected is list and nested is dict:
                r = list_dict_checker(param, value, opts)
                if not r["valid"]:
                    return r
                continue
            if expected is str:
                r = string_checker(param, value, opts)
                if not r["valid"]:
                    return r
                continue
            if expected is list:
                r = list_checker(param, value, opts)
                if not r["valid"]:
                    return r
                continue
        if value not in opts:
            return _fail("value_error:others", f"Invalid value for parameter {param!r}: {value!r}.")
    for param, opts in possible.items():
        if param not in model_params and "" not in (opts if isinstance(opts, list) else [opts]):
            return _fail(
                "simple_function_checker:missing_optional",
                f"Optional parameter {param!r} not provided and not marked as optional.",
            )
    return _ok()


def _find_doc(docs: list[dict[str, Any]], name: str) -> dict[str, Any]:
    for d in docs:
        if d.get("name") == name:
            return d
    return {"name": name, "parameters": {"properties": {}, "required": []}}


def multiple_function_checker(
    docs: list[dict[str, Any]], calls: list[dict[str, Any]], answers: list[dict[str, Any]]
) -> Check:
    if len(calls) != len(answers):
        return _fail("multiple_function_checker:wrong_count", "Wrong number of functions.")
    expected = next(iter(answers[0]))
    return simple_function_checker(_find_doc(docs, expected), calls[0], answers[0])


def parallel_function_checker_no_order(
    docs: list[dict[str, Any]], calls: list[dict[str, Any]], answers: list[dict[str, Any]]
) -> Check:
    if len(calls) != len(answers):
        return _fail("parallel_function_checker_no_order:wrong_count", "Wrong number of functions.")
    matched: list[int] = []
    for i, ans in enumerate(answers):
        doc = _find_doc(docs, next(iter(ans)))
        found = False
        for j, call in enumerate(calls):
            if j in matched:
                continue
            if simple_function_checker(doc, call, ans)["valid"]:
                matched.append(j)
                found = True
                break
        if not found:
            return _fail(
                "parallel_function_checker_no_order:cannot_find_match",
                f"Could not find a matching function for index {i} of possible answers.",
            )
    return _ok()


def ast_checker(
    docs: list[dict[str, Any]],
    calls: list[dict[str, Any]],
    answers: list[dict[str, Any]],
    category: str,
) -> Check:
    """Upstream dispatch: parallel → no-order, multiple → count + simple, else exactly one call."""
    if "parallel" in category:
        return parallel_function_checker_no_order(docs, calls, answers)
    if "multiple" in category:
        return multiple_function_checker(docs, calls, answers)
    if len(calls) != 1:
        return _fail("simple_function_checker:wrong_count", "Wrong number of functions.")
    return simple_function_checker(docs[0] if docs else {}, calls[0], answers[0])


def is_function_calling_format_output(decoded: Any) -> bool:
    if not isinstance(decoded, list):
        return False
    for item in decoded:
        if not isinstance(item, dict) or len(item) != 1:
            return False
        if not isinstance(next(iter(item.values())), dict):
            return False
    return True


def is_empty_output(decoded: Any) -> bool:
    if not is_function_calling_format_output(decoded):
        return True
    return len(decoded) == 0 or (len(decoded) == 1 and len(decoded[0]) == 0)


#: what a relevance / irrelevance entry's output held: calls, no call, or nothing BFCL's decoder
#: (or the handler's) could read
CALL, NO_CALL, UNPARSED = "call", "no_call", "unparsed"

DECODER_FAILED = "ast_decoder:decoder_failed"
WRONG_OUTPUT_FORMAT = "ast_decoder:decoder_wrong_output_format"


class DecodeError(Exception):
    def __init__(self, error_type: str, reason: str) -> None:
        self.error_type = error_type
        super().__init__(reason)


def decode_ast(text: str) -> Any:
    """The upstream decoding of an output; raises :class:`DecodeError` (with BFCL's error type)
    where upstream decoding fails or gives a structure that is not a list of calls."""
    try:
        out = bfcl_decode_ast(text)
    except Exception as exc:
        kind = getattr(exc, "error_type", DECODER_FAILED)
        raise DecodeError(
            kind if kind == WRONG_OUTPUT_FORMAT else DECODER_FAILED, str(exc)
        ) from None
    if not is_function_calling_format_output(out):
        raise DecodeError(WRONG_OUTPUT_FORMAT, "not a list of {name: {params}} objects")
    return out


# -- instance views ----------------------------------------------------------------------------


def bfcl_category(inst: Instance) -> str:
    if inst.category:
        return inst.category
    return inst.id.rsplit("_", 1)[0] if "_" in inst.id else inst.id


def bfcl_docs(inst: Instance) -> list[dict[str, Any]]:
    """The raw BFCL function docs (``Tool.metadata["raw"]``), rebuilt from the tool if absent."""
    docs = []
    for t in inst.tools:
        raw = t.metadata.get("raw")
        if isinstance(raw, dict) and "name" in raw:
            docs.append(raw)
        else:
            docs.append(
                {
                    "name": t.name,
                    "description": t.description,
                    "parameters": {
                        "type": "dict",
                        "properties": t.properties,
                        "required": t.required,
                    },
                }
            )
    return docs


def bfcl_answers(inst: Instance) -> list[dict[str, Any]]:
    """Possible answers in the upstream ``ground_truth`` form."""
    raw = inst.metadata.get("ground_truth")
    if isinstance(raw, list) and all(isinstance(a, dict) for a in raw):
        return raw
    out = []
    for g in inst.gold:
        acc = g.acceptable or {k: [v] for k, v in g.arguments.items()}
        out.append({g.name: acc})
    return out


def _kind(category: str) -> str:
    if "irrelevance" in category:
        return "irrelevance"
    if category.endswith("relevance"):
        return "relevance"
    return "ast"


def structured_calls(pred: Prediction) -> list[dict[str, Any]] | None:
    """The calls as BFCL's model handlers decode them, where that is not its prompting decoder.

    BFCL reads a prompting model's text as Python calls; a function-calling (FC) model's handler
    decodes that model's own output format into ``[{name: arguments}]`` (no call: ``[]``).  Here
    the second case is an output whose calls were structured before any text was written —
    native ``tool_calls`` from the backend, or decoding constrained to the call schema — or a free
    output read by a template parser other than ``python`` (``metadata["parser"]``: the
    template's parser plays the handler's part).  ``None``: read ``raw`` with the prompting
    decoder (also where the template's parser could not read the output, which then fails to
    decode as upstream)."""
    structured = pred.metadata.get("native_tool_calls") or "constrained_raw" in pred.metadata
    handler = pred.metadata.get("parser") not in (None, "", "python")
    if not (structured or handler) or pred.parsed is None or pred.parsed.is_error:
        return None
    return [{c.name: dict(c.arguments)} for c in pred.parsed.calls]


def check_entry(
    text: str,
    category: str,
    docs: list[dict[str, Any]],
    answers: list[dict[str, Any]],
    decoded_calls: list[dict[str, Any]] | None = None,
) -> Check:
    """Score one entry the way the upstream runner does for its category: ``text`` through
    BFCL's prompting decoder, or ``decoded_calls`` as an FC handler gives them."""
    kind = _kind(category)

    def decode() -> Any:
        return decoded_calls if decoded_calls is not None else decode_ast(text)

    if kind != "ast":
        try:
            decoded = decode()
            outcome = NO_CALL if is_empty_output(decoded) else CALL
        except DecodeError:
            outcome = UNPARSED
        if kind == "irrelevance":
            if outcome == CALL:
                check = _fail("irrelevance_error:decoder_success", "Valid syntax: a call was made.")
            else:
                check = _ok()
        elif outcome != CALL:
            check = _fail("relevance_error:decoder_failed", "No function call decoded.")
        else:
            check = _ok()
        # upstream passes an irrelevance entry on both no-call outcomes; toollab tells them apart
        check["outcome"] = outcome
        return check
    try:
        decoded = decode()
    except DecodeError as exc:
        return _fail(exc.error_type, f"Failed to decode AST. {exc}")
    if not answers:
        return _fail("ast_checker:no_possible_answer", "The entry has no possible answer.")
    try:
        return ast_checker(docs, decoded, answers, category)
    except Exception as exc:  # malformed docs/answers must not stop a run
        return _fail("ast_checker:exception", f"{type(exc).__name__}: {exc}")


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def aggregate(per_cat: dict[str, tuple[int, int]]) -> tuple[dict[str, float | None], list[str]]:
    """Figures from ``{category: (correct, total)}``, and notes on categories that are missing.

    Every scored category's accuracy is reported under its own name.  The leaderboard aggregates
    follow ``eval_runner_helper.generate_leaderboard_csv``: a category that was not run counts
    as 0 (in the live means with its full size, :data:`LIVE_SIZES`).  ``simple``,
    ``non_live_ast`` and ``live_ast`` are then printed ``N/A`` upstream and are ``None`` here;
    ``non_live_overall`` and ``live_overall`` are printed as numbers upstream and are reported
    the same way here.  A note names the missing categories of each.  ``non_live_ast_python``
    and ``pooled_accuracy`` are toollab figures, not leaderboard ones.
    """
    acc = {c: k / n for c, (k, n) in per_cat.items() if n}
    out: dict[str, float | None] = {CATEGORY_NAMES.get(c, c): a for c, a in acc.items()}
    counts: dict[str, tuple[int, int]] = {}
    for c, (k, n) in per_cat.items():
        if n:
            counts[CATEGORY_NAMES.get(c, c)] = (k, n)
    notes: list[str] = []

    def cat(name: str) -> float | None:
        return out.get(name)

    def note_na(figure: str, missing: list[str], scored_any: bool) -> None:
        if missing and scored_any:
            notes.append(
                f"{figure}: not reported, as on the leaderboard (N/A): "
                f"{', '.join(missing)} not scored"
            )

    def note_zero(figure: str, missing: list[str]) -> None:
        notes.append(
            f"{figure}: as on the leaderboard, {', '.join(missing)} not scored and counted as 0"
        )

    # N/A aggregates: reported only when every category they average was scored
    simple_parts = {n: cat(n) for n in SIMPLE_PARTS}
    missing_simple = [n for n, v in simple_parts.items() if v is None]
    simple = None if missing_simple else _mean([v for v in simple_parts.values() if v is not None])
    note_na("simple", missing_simple, len(missing_simple) < len(SIMPLE_PARTS))
    out["simple"] = simple
    ast_parts = {"simple": simple, **{n: cat(n) for n in AST_CATEGORIES[1:]}}
    missing_ast = [n for n, v in ast_parts.items() if v is None]
    out["non_live_ast"] = (
        None if missing_ast else _mean([v for v in ast_parts.values() if v is not None])
    )
    note_na("non_live_ast", missing_ast, len(missing_ast) < len(ast_parts))

    # non_live_overall: printed upstream whatever is missing, a missing category counting as 0
    non_live = (*SIMPLE_PARTS, *AST_CATEGORIES[1:], "irrelevance")
    missing_non_live = [n for n in non_live if cat(n) is None]
    if len(missing_non_live) == len(non_live):
        out["non_live_overall"] = None
    else:
        simple0 = _mean([cat(n) or 0.0 for n in SIMPLE_PARTS])
        rest0 = [cat(n) or 0.0 for n in (*AST_CATEGORIES[1:], "irrelevance")]
        out["non_live_overall"] = _mean([simple0, *rest0])
        if missing_non_live:
            note_zero("non_live_overall", missing_non_live)

    python = [cat(n) for n in ("simple_python", *AST_CATEGORIES[1:])]
    out["non_live_ast_python"] = (
        _mean([v for v in python if v is not None]) if all(v is not None for v in python) else None
    )

    # live_ast: N/A upstream when a category is missing
    missing_live_ast = [c for c in LIVE_AST if c not in counts]
    if missing_live_ast:
        out["live_ast"] = None
        note_na("live_ast", missing_live_ast, len(missing_live_ast) < len(LIVE_AST))
    else:
        out["live_ast"] = sum(counts[c][0] for c in LIVE_AST) / sum(counts[c][1] for c in LIVE_AST)

    # live_overall: printed upstream, a missing category weighing its full size at accuracy 0
    missing_live = [c for c in LIVE_ALL if c not in counts]
    if len(missing_live) == len(LIVE_ALL):
        out["live_overall"] = None
    else:
        correct = sum(counts[c][0] for c in LIVE_ALL if c in counts)
        total = sum(counts[c][1] if c in counts else LIVE_SIZES[c] for c in LIVE_ALL)
        out["live_overall"] = correct / total
        if missing_live:
            note_zero(
                "live_overall",
                [f"{c} ({LIVE_SIZES[c]} entries)" for c in missing_live],
            )

    total_k = sum(k for k, _ in per_cat.values())
    total_n = sum(n for _, n in per_cat.values())
    out["pooled_accuracy"] = total_k / total_n if total_n else None
    return out, notes


#: the categories whose faithful figure counts every output without a call as correct
IRRELEVANCE_CATEGORIES = ("irrelevance", "live_irrelevance")


def _abstention_definitions(category: str) -> dict[str, str]:
    return {
        category: (
            f"BFCL's {category} accuracy as the leaderboard computes it: the fraction of "
            f"{category} entries whose output holds no call, where an output that fails to "
            f"decode counts as no call (= {category}_abstained + {category}_unparsed)"
        ),
        f"{category}_abstained": (
            f"toollab figure: the fraction of {category} entries whose output was read and "
            "holds no call (an empty call list, or a no-call read by the template's parser or "
            "by constrained decoding): the model abstained"
        ),
        f"{category}_unparsed": (
            f"toollab figure: the fraction of {category} entries whose output could not be "
            "read at all (BFCL's decoder failed or gave no list of calls); BFCL counts these as "
            "correct, although the model did not abstain (gorilla issues 1362 and 443)"
        ),
    }


def abstention(
    metrics: dict[str, float | None], outcomes: dict[str, dict[str, int]]
) -> dict[str, float | None]:
    """``metrics`` with ``<category>_abstained`` and ``<category>_unparsed`` after each
    irrelevance category's figure: the fractions of its entries whose output held no call, and
    whose output could not be read (a failed prediction is in neither; the faithful figure is
    their sum)."""
    out: dict[str, float | None] = {}
    for name, value in metrics.items():
        out[name] = value
        counts = outcomes.get(name)
        if name in IRRELEVANCE_CATEGORIES and counts:
            n = sum(counts.values())
            out[f"{name}_abstained"] = counts.get(NO_CALL, 0) / n
            out[f"{name}_unparsed"] = counts.get(UNPARSED, 0) / n
    return out


@scorer(
    "bfcl",
    formats=("bfcl",),
    needs=("raw",),
    description="BFCL AST accuracy per category, relevance/irrelevance and official aggregates",
)
class BFCLScorer(Scorer):
    """BFCL's AST checker and aggregation, error types as upstream; beside each irrelevance
    figure, how many outputs abstained and how many failed to parse (:func:`abstention`)."""

    @classmethod
    def definitions(cls) -> dict[str, dict[str, Any]]:
        return {
            name: {"label": name, "definition": text, "percent": True}
            for category in IRRELEVANCE_CATEGORIES
            for name, text in _abstention_definitions(category).items()
        }

    def score(self, predictions: list[Prediction], instances: dict[str, Instance]) -> MetricResult:
        res = self.new_result()
        outcomes: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        per_cat: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        cat_errors: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        cache: dict[str, tuple[str, list[dict[str, Any]], list[dict[str, Any]]]] = {}
        other_lang = False
        for pred, inst in self.pairs(predictions, instances, res):
            view = cache.get(inst.id)
            if view is None:
                view = cache[inst.id] = (bfcl_category(inst), bfcl_docs(inst), bfcl_answers(inst))
            category, docs, answers = view
            other_lang = other_lang or category.endswith(("_java", "_javascript"))
            if pred.error and not pred.raw:
                # a run that produced nothing fails, whatever the category
                check = _fail("prediction_error", pred.error)
            else:
                check = check_entry(pred.raw, category, docs, answers, structured_calls(pred))
            per_cat[category][1] += 1
            outcomes[category][check.get("outcome") or "failed"] += 1
            if check["valid"]:
                per_cat[category][0] += 1
            else:
                res.add_error(check["error_type"])
                cat_errors[category][check["error_type"]] += 1
            res.per_instance[instance_key(pred)] = {
                "category": category,
                "valid": check["valid"],
                "error_type": check["error_type"],
                "error": check["error"][:1],
                **({"outcome": check["outcome"]} if "outcome" in check else {}),
            }
        metrics, notes = aggregate({c: (k, n) for c, (k, n) in per_cat.items()})
        res.metrics = abstention(metrics, outcomes)
        res.notes.extend(notes)
        res.breakdown = {
            c: {"accuracy": k / n if n else None, "correct": float(k), "total": float(n)}
            for c, (k, n) in sorted(per_cat.items())
        }
        for c in IRRELEVANCE_CATEGORIES:
            if c in res.breakdown:
                res.breakdown[c]["abstained"] = float(outcomes[c][NO_CALL])
                res.breakdown[c]["unparsed"] = float(outcomes[c][UNPARSED])
        res.counts = {"n": sum(n for _, n in per_cat.values()), **res.counts}
        if other_lang:
            res.notes.append(
                "Java/JavaScript entries were checked with the Python type rules "
                "(no Java/JS type converter)."
            )
        return res
