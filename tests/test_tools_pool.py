"""Tool pools: registration, JSONL / JSON-list files in every accepted format, problems with lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toollab.errors import InputError, ToolSchemaError, UnknownToolError, UsageError
from toollab.schema import Tool
from toollab.tools import PoolFileError, ToolPool, read_pool_file, tool, validate_file

SEAL_RECORD = {
    "api_name": "getArtworkDetails",
    "api_description": "Retrieve detailed information about a specific artwork",
    "field": "Art/Curatorial Studies",
    "parameters": {
        "artwork_id": {"type": "str", "description": "The unique identifier of the artwork"},
        "year": {"type": "int", "description": "Year", "example": 1990},
        "scale": {"type": "float", "description": "Scale", "examples": [0.5, 1.0], "unit": "x"},
        "public": {"type": "bool", "description": "Public only", "default": False},
        "tags": {"type": "list", "description": "Tags", "examples": "a, b"},
        "extra": {"type": "dict", "description": "Extra"},
        "when": {"type": "datetime", "description": "When"},
    },
    "required": ["artwork_id"],
    "responses": {
        "title": {"type": "str", "description": "The title of the artwork"},
        "artist": {"type": "str", "description": "The name of the artist"},
        "price": {"type": "float", "description": "Price"},
    },
}
OPENAI_RECORD = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
        "strict": True,
    },
}
BARE_RECORD = {
    "name": "search",
    "description": "Search the web.",
    "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
}
TOOLLAB_RECORD = {
    "name": "convert",
    "description": "Convert units.",
    "parameters": {
        "type": "object",
        "properties": {"value": {"type": "number"}},
        "required": ["value"],
    },
    "returns": {"type": "object", "properties": {"result": {"type": "number"}}},
    "category": "math",
    "metadata": {"source": "test"},
}


def _write_lines(path: Path, records: list[object]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_seal_record_conversion(tmp_path: Path) -> None:
    pool = ToolPool.load(_write_lines(tmp_path / "tools.jsonl", [SEAL_RECORD]))
    t = pool.tool("getArtworkDetails")
    assert t.description == "Retrieve detailed information about a specific artwork"
    assert t.category == "Art/Curatorial Studies"
    props = t.parameters["properties"]
    assert props["artwork_id"] == {
        "type": "string",
        "description": "The unique identifier of the artwork",
    }
    assert props["year"] == {"type": "integer", "description": "Year", "x-example": 1990}
    assert props["scale"] == {
        "type": "number",
        "description": "Scale",
        "examples": [0.5, 1.0],
        "x-unit": "x",
    }
    assert props["public"] == {"type": "boolean", "description": "Public only", "default": False}
    assert props["tags"] == {"type": "array", "description": "Tags", "x-examples": "a, b"}
    assert props["extra"]["type"] == "object"
    assert props["when"] == {
        "x-original-type": "datetime",
        "description": "When",
    }  # no type constraint
    assert t.required == ["artwork_id"]
    assert t.return_fields == ["title", "artist", "price"]
    assert t.returns == {
        "type": "object",
        "properties": {
            "title": {"type": "string", "description": "The title of the artwork"},
            "artist": {"type": "string", "description": "The name of the artist"},
            "price": {"type": "number", "description": "Price"},
        },
    }
    assert pool.validate_arguments("getArtworkDetails", {"artwork_id": "a1", "when": 5}) == []


@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
def test_round_trip_for_every_accepted_format(tmp_path: Path, suffix: str) -> None:
    src = _write_lines(
        tmp_path / "mixed.jsonl", [SEAL_RECORD, OPENAI_RECORD, BARE_RECORD, TOOLLAB_RECORD]
    )
    pool = ToolPool.load(src)
    assert pool.names == ["getArtworkDetails", "get_weather", "search", "convert"]
    # an OpenAI record comes back exactly, "strict" in place
    assert json.dumps(pool.tool("get_weather").to_openai()) == json.dumps(OPENAI_RECORD)
    # Seal-Tools' "datetime" is no type toollab knows: loaded, with a warning
    (warning,) = pool.warnings
    assert (warning.severity, warning.line, warning.tool) == ("warning", 1, "getArtworkDetails")
    assert "parameters.properties.when: unknown type name 'datetime'" in warning.problem
    assert pool.tool("convert").model_dump() == {**TOOLLAB_RECORD}
    out = pool.save(tmp_path / f"saved{suffix}")
    if suffix == ".json":
        assert isinstance(json.loads(out.read_text()), list)
    else:
        assert len(out.read_text().splitlines()) == 4
    again = ToolPool.load(out)
    assert [t.model_dump() for t in again] == [t.model_dump() for t in pool]
    assert not list(tmp_path.glob(".saved*"))  # no temporary file left behind


def test_json_list_and_tools_object_files(tmp_path: Path) -> None:
    listing = tmp_path / "tools.json"
    listing.write_text(json.dumps([OPENAI_RECORD, BARE_RECORD], indent=2))
    assert ToolPool.load(listing).names == ["get_weather", "search"]
    wrapped = tmp_path / "wrapped.json"
    wrapped.write_text(json.dumps({"tools": [BARE_RECORD, TOOLLAB_RECORD]}, indent=1))
    assert ToolPool.load(wrapped).names == ["search", "convert"]


def test_problems_are_collected_with_lines(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(
        "\n".join(
            [
                json.dumps(BARE_RECORD),
                '{"name": "broken", ',
                json.dumps({"description": "I have no name"}),
                json.dumps(
                    {
                        "name": "s2",
                        "parameters": {"type": "object", "properties": {"a": {"type": "str"}}},
                    }
                ),
                "",
                json.dumps(BARE_RECORD),
                json.dumps([BARE_RECORD]),
                json.dumps({"api_description": "seal without name", "parameters": {}}),
                json.dumps(
                    {
                        "name": "req",
                        "parameters": {"type": "object", "properties": {}, "required": ["x"]},
                    }
                ),
            ]
        )
        + "\n"
    )
    problems = validate_file(path)
    got = [(p.line, p.tool, p.problem) for p in problems]
    assert got == [
        (2, None, "malformed JSON: Expecting property name enclosed in double quotes (column 20)"),
        (3, None, "tool has no name"),
        (
            4,
            "s2",
            "invalid JSON Schema at parameters.properties.a.type: 'str' is not a JSON Schema type (use "
            "'string'); types are string, integer, number, boolean, array, object, null",
        ),
        (6, "search", "duplicate tool name 'search' (line 1 and line 6)"),
        (7, None, "a tool must be a JSON object, got array"),
        (8, None, "tool has no name (Seal-Tools record without 'api_name')"),
        (9, "req", "parameters.required names 'x', which is not in properties"),
    ]
    assert (
        problems[0].format()
        == f"{path}:2: malformed JSON: Expecting property name enclosed in double quotes (column 20)"
    )
    assert problems[3].format().startswith(f"{path}:6: tool 'search': duplicate")

    with pytest.raises(PoolFileError) as info:
        ToolPool.load(path)
    err = info.value
    assert isinstance(err, InputError) and isinstance(err, ToolSchemaError)
    assert err.path == str(path) and err.line == 2
    assert len(err.problems) == 7
    assert (
        str(err)
        == f"{path}:2: malformed JSON: Expecting property name enclosed in double quotes (column 20) (and 6 more problems)"
    )


def test_json_list_problems_name_line_and_item(tmp_path: Path) -> None:
    path = tmp_path / "dups.json"
    path.write_text(
        "[\n"
        + json.dumps(BARE_RECORD)
        + ",\n"
        + json.dumps({"name": ""})
        + ",\n"
        + json.dumps(BARE_RECORD)
        + "\n]\n"
    )
    problems = validate_file(path)
    assert [(p.line, p.item, p.problem) for p in problems] == [
        (3, 2, "tool has no name"),
        (4, 3, "duplicate tool name 'search' (item 1 on line 2 and item 3 on line 4)"),
    ]
    broken = tmp_path / "broken.json"
    broken.write_text("[\n" + json.dumps(BARE_RECORD) + ",\n  {oops}\n]")
    (problem,) = validate_file(broken)
    assert (problem.line, problem.item) == (3, 2)
    assert problem.problem.startswith("malformed JSON: Expecting property name")


def test_file_level_problems(tmp_path: Path) -> None:
    assert [p.problem for p in validate_file(tmp_path / "missing.jsonl")] == ["no such file"]
    assert [p.problem for p in validate_file(tmp_path)] == ["is a directory, not a tool pool file"]
    binary = tmp_path / "bin.jsonl"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    assert validate_file(binary)[0].problem.startswith("not UTF-8 text")
    with pytest.raises(InputError, match=r"missing\.jsonl: no such file"):
        ToolPool.load(tmp_path / "missing.jsonl")
    for name, text in (
        ("empty.jsonl", "\n\n"),
        ("empty.json", "[]"),
        ("tools.json", '{"tools": []}'),
    ):
        empty = tmp_path / name
        empty.write_text(text)
        (problem,) = validate_file(empty)
        assert (problem.line, problem.problem, problem.severity) == (
            None,
            "the file holds no tools",
            "error",
        )
        with pytest.raises(PoolFileError, match="the file holds no tools"):
            ToolPool.load(empty)


def test_format_restriction(tmp_path: Path) -> None:
    path = _write_lines(tmp_path / "mixed.jsonl", [SEAL_RECORD, OPENAI_RECORD])
    warning, problem = validate_file(path, fmt="seal-tools")
    assert (problem.line, problem.problem) == (
        2,
        "expected a tool in seal-tools format, found openai format",
    )
    assert warning.severity == "warning" and "'datetime'" in warning.problem
    assert [p.severity for p in validate_file(path, fmt="auto")] == ["warning"]
    with pytest.raises(UsageError, match="unknown format 'seal'"):
        validate_file(path, fmt="seal")


def test_save_is_atomic_and_checks_the_target(tmp_path: Path) -> None:
    pool = ToolPool([Tool.build(name="a")])
    with pytest.raises(InputError, match="does not exist"):
        pool.save(tmp_path / "nope" / "tools.jsonl")
    with pytest.raises(InputError, match="is a directory"):
        pool.save(tmp_path)
    target = tmp_path / "tools.jsonl"
    target.write_text("old content\n")
    pool.save(target)
    assert json.loads(target.read_text()) == {
        "name": "a",
        "description": "",
        "parameters": {"type": "object", "properties": {}, "required": []},
    }


def test_registration_and_lookup() -> None:
    pool = ToolPool()

    @pool.register
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @tool(sandboxed=True, parallel=False, timeout=1.0)
    def touch(name: str) -> str:
        """Create a file."""
        return name

    pool.add(touch)
    pool.add(Tool.build(name="remote", description="Schema only."))
    assert pool.names == ["add", "touch", "remote"]
    assert "add" in pool and len(pool) == 3
    assert add(1, 2) == 3
    entry = pool.entry("touch")
    assert (entry.sandboxed, entry.parallel, entry.timeout, entry.executable) == (
        True,
        False,
        1.0,
        True,
    )
    assert not pool.entry("remote").executable
    pool.bind("remote", lambda: "ok", parallel=False)
    assert pool.entry("remote").executable and not pool.entry("remote").parallel
    with pytest.raises(ToolSchemaError, match="already in the pool"):
        pool.add(Tool.build(name="add"))
    with pytest.raises(ToolSchemaError, match="not in properties"):
        pool.add(
            Tool.build(name="x", parameters={"type": "object", "properties": {}, "required": ["y"]})
        )
    with pytest.raises(UnknownToolError, match="did you mean 'add'"):
        pool.tool("ad")
    assert pool.return_fields()["add"] == []
    pool.remove("remote")
    assert pool.names == ["add", "touch"]


def test_seal_tools_pool_from_shared_data(shared_data: Path, tmp_path: Path) -> None:
    path = shared_data / "seal-tools" / "tool.jsonl"
    tools, problems = read_pool_file(path)
    assert problems == []
    assert len(tools) == 4076
    pool = ToolPool(t for _, t in tools)
    assert len(pool) == 4076
    t = pool.tool("getConservationProjectDetails")
    assert t.parameters["properties"]["project_id"]["type"] == "integer"
    assert t.return_fields == [
        "project_name",
        "organization",
        "country",
        "focus_area",
        "start_date",
        "end_date",
        "description",
        "contact_email",
    ]
    saved = pool.save(tmp_path / "seal.jsonl")
    assert [x.model_dump() for x in ToolPool.load(saved)] == [x.model_dump() for x in pool]


def test_yaml_pool_files(tmp_path: Path) -> None:
    path = tmp_path / "tools.yaml"
    path.write_text(
        "tools:\n"
        "  - name: search\n"
        "    description: Search the web.\n"
        "    parameters: {type: object, properties: {q: {type: string}}, required: [q]}\n"
        "  - api_name: getTime\n"
        "    api_description: Current time\n"
        "    parameters: {tz: {type: str, description: Time zone}}\n"
        "    required: [tz]\n"
        "  - name: broken\n"
        "    parameters: {type: object, required: [x]}\n"
    )
    problems = validate_file(path)
    assert [(p.line, p.item, p.tool, p.problem) for p in problems] == [
        (9, 3, "broken", "parameters.required names 'x', which is not in properties")
    ]
    bad = tmp_path / "bad.yml"
    bad.write_text("- name: a\n  description: [unclosed\n")
    (problem,) = validate_file(bad)
    assert problem.line is not None and problem.problem.startswith("malformed YAML")
    path.write_text("- name: only\n")
    assert ToolPool.load(path).names == ["only"]


TOOLS_PY = '''
from toollab.tools import tool


def not_a_tool(x: int) -> int:
    return x


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(name="shout")
def upper(text: str) -> str:
    """Upper-case a text."""
    return text.upper()
'''


def test_python_module_of_tools(tmp_path: Path) -> None:
    from toollab.schema import ToolCall
    from toollab.tools import Executor

    path = tmp_path / "mytools.py"
    path.write_text(TOOLS_PY)
    pool = ToolPool.load(path)
    assert pool.names == ["add", "shout"]
    assert pool.entry("add").executable
    result = Executor(pool).execute([ToolCall(name="shout", arguments={"text": "hi"})])
    assert result.outputs == ["HI"]
    broken = tmp_path / "broken.py"
    broken.write_text(
        "from toollab.tools import tool\n\n@tool\ndef f(*args: int) -> None:\n    '''F.'''\n"
    )
    (problem,) = validate_file(broken, import_python=True)
    assert problem.line == 3
    assert (
        "importing the module failed: ToolSchemaError: tool 'f': *args is not allowed"
        in problem.problem
    )
    syntax = tmp_path / "syntax.py"
    syntax.write_text("def f(:\n")
    assert validate_file(syntax)[0].line == 1
    assert validate_file(syntax, import_python=True)[0].line == 1
    empty = tmp_path / "empty.py"
    empty.write_text("X = 1\n")
    assert [p.problem for p in validate_file(empty)] == ["the module defines no @tool functions"]


def test_validating_a_python_tool_file_does_not_run_it(tmp_path: Path) -> None:
    """Validation has no effects: the module is read, not imported, unless asked."""
    marker = tmp_path / "ran"
    path = tmp_path / "effects.py"
    path.write_text(f"from pathlib import Path\nPath({str(marker)!r}).write_text('x')\n" + TOOLS_PY)
    (problem,) = validate_file(path)
    assert problem.severity == "warning" and "not imported" in problem.problem
    assert "add (line" in problem.problem and not marker.exists()
    assert validate_file(path, import_python=True) == [] and marker.exists()


def test_seal_records_round_trip_through_tools(shared_data: Path) -> None:
    """``tool_to_seal`` inverts ``seal_to_tool`` on every real Seal-Tools tool record."""
    import json as _json

    from toollab.tools.formats import seal_to_tool, tool_to_seal

    with (shared_data / "seal-tools" / "tool.jsonl").open() as f:
        for line in f:
            rec = _json.loads(line)
            assert tool_to_seal(seal_to_tool(rec)) == rec


def test_bound_to_binds_a_pool_of_methods_per_instance() -> None:
    class Counter:
        def __init__(self) -> None:
            self.n = 0

        @tool
        def add(self, k: int = 1) -> int:
            """Add k."""
            self.n += k
            return self.n

    template = ToolPool([Counter.add])
    a, b = Counter(), Counter()
    pa, pb = template.bound_to(a), template.bound_to(b)
    assert pa.tool("add") is template.tool("add")  # the schema is shared
    pa.entry("add").fn(k=2)  # type: ignore[misc]
    pb.entry("add").fn()  # type: ignore[misc]
    assert (a.n, b.n) == (2, 1)
    assert template.entry("add").fn is Counter.add.fn  # the template stays unbound
