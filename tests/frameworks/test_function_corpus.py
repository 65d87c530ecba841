"""Over the whole schema corpus (tests/schema/corpus: real MCP servers' tools), the schema each framework
derives from `tool.as_function()` has the tool's parameters, each with its JSON types, and the tool's
required set. What a framework cannot express is counted per tool, and the count is the one
docs/frameworks.md states (so the page stays true)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import dspy
import pytest
from anthropic.lib.tools import beta_async_tool
from autogen_core.tools import FunctionTool as AutoGenTool
from google import genai
from google.genai import types as genai_types
from llama_index.core.tools import FunctionTool as LlamaTool
from smolagents import tool as smolagents_tool

from cubepi import AgentTool
from cubepi.mcp import StdioServer, make_mcp_agent_tool

ROOT = Path(__file__).parents[2]
NOWHERE = StdioServer("never-started")  # the tools are only described here, never called
Derived = tuple[dict[str, Any], set[str], dict[str, Any]]  # properties, required, root (for $refs)


def _corpus() -> list[AgentTool]:
    tools = []
    for path in sorted((ROOT / "tests" / "schema" / "corpus").glob("*.json")):
        for item in json.loads(path.read_text()).get("tools", []):
            if isinstance(item.get("inputSchema"), dict):
                definition = {"name": item["name"], "description": "d", "inputSchema": item["inputSchema"]}
                tools.append(make_mcp_agent_tool(definition, NOWHERE))
    return tools


TOOLS = _corpus()


def json_types(node: Any, root: dict[str, Any], depth: int = 0) -> frozenset[str]:
    """The JSON types a (sub)schema admits at its top level; "any" when it says nothing."""
    if not isinstance(node, dict) or depth > 20:
        return frozenset({"any"})
    node = {re.sub(r"_(\w)", lambda m: m.group(1).upper(), k): v for k, v in node.items()}  # any_of -> anyOf
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part, {}) if isinstance(target, dict) else {}
        return json_types(target, root, depth + 1)
    out: set[str] = set()
    kind = node.get("type")
    if isinstance(kind, str):
        out.add(kind.lower())
    elif isinstance(kind, list):
        out.update(k.lower() for k in kind if isinstance(k, str))
    elif isinstance(node.get("enum"), list) or "const" in node:
        values = node.get("enum", [node.get("const")])
        out.update(_value_type(v) for v in values)
    for key in ("anyOf", "oneOf"):
        if isinstance(node.get(key), list):
            for branch in node[key]:
                out |= json_types(branch, root, depth + 1)
    if isinstance(node.get("allOf"), list) and len(node["allOf"]) == 1:
        out |= json_types(node["allOf"][0], root, depth + 1)
    if node.get("nullable") is True:
        out.add("null")
    if not out or "any" in out:
        return frozenset({"any"})
    if "number" in out:
        out.discard("integer")
    return frozenset(out)


def _value_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return {str: "string", list: "array", dict: "object"}.get(type(value), "any")


def expected(tool: AgentTool) -> Derived:
    """The tool's own parameters, under the Python names the function takes."""
    schema = tool.json_schema()
    names = {(field.alias or name): name for name, field in tool.parameters.model_fields.items()}
    properties = {names[wire]: sub for wire, sub in (schema.get("properties") or {}).items()}
    required = {names[wire] for wire in schema.get("required") or [] if wire in names}
    return properties, required, schema


# -- what each framework derives ---------------------------------------------------------------------------

_GEMINI = genai.Client(api_key="offline")


def google_genai(tool: AgentTool, use_json_schema: bool = True) -> Derived:
    declaration = genai_types.FunctionDeclaration.from_callable(
        client=_GEMINI, callable=tool.as_function(), use_json_schema=use_json_schema
    )
    if declaration.parameters is None:
        schema = dict(declaration.parameters_json_schema or {})
        return schema.get("properties", {}), set(schema.get("required", [])), schema
    dumped = declaration.parameters.model_dump(mode="json", exclude_none=True)
    return dumped.get("properties", {}), set(dumped.get("required", [])), dumped


def google_genai_default(tool: AgentTool) -> Derived:
    return google_genai(tool, use_json_schema=False)


def smolagents(tool: AgentTool) -> Derived:
    named = tool.replace(name=tool.api_name.replace("-", "_"))  # smolagents wants a Python name
    inputs = smolagents_tool(named.as_function(sync=True)).inputs
    required = {name for name, spec in inputs.items() if not spec.get("nullable")}
    return inputs, required, {}


def llama_index(tool: AgentTool) -> Derived:
    schema = LlamaTool.from_defaults(async_fn=tool.as_function()).metadata.get_parameters_dict()
    return schema.get("properties", {}), set(schema.get("required", [])), schema


def dspy_tool(tool: AgentTool) -> Derived:
    args = dspy.Tool(tool.as_function()).args or {}
    return args, {name for name, spec in args.items() if "default" not in spec}, {}


def anthropic(tool: AgentTool) -> Derived:
    schema: dict[str, Any] = dict(beta_async_tool(tool.as_function()).to_dict()["input_schema"])
    return schema.get("properties", {}), set(schema.get("required", [])), schema


def autogen(tool: AgentTool) -> Derived:
    schema: dict[str, Any] = dict(AutoGenTool(tool.as_function(), description="d").schema["parameters"])
    return schema.get("properties", {}), set(schema.get("required", [])), schema


FRAMEWORKS: dict[str, Callable[[AgentTool], Derived]] = {
    "google-genai": google_genai,
    "google-genai (use_json_schema=False)": google_genai_default,
    "smolagents": smolagents,
    "LlamaIndex": llama_index,
    "DSPy": dspy_tool,
    "Anthropic": anthropic,
    "AutoGen": autogen,
}


def differences(tool: AgentTool, derive: Callable[[AgentTool], Derived]) -> list[str]:
    """How the framework's schema differs from the tool's: a missing parameter, a type, the required set."""
    want, want_required, root = expected(tool)
    try:
        got, got_required, got_root = derive(tool)
    except Exception as exc:
        return [f"refused: {type(exc).__name__}"]
    out = []
    if set(got) != set(want):
        out.append(f"parameters {sorted(set(want) ^ set(got))}")
    if got_required != want_required:
        out.append(f"required {sorted(want_required ^ got_required)}")
    for name in set(want) & set(got):
        wanted, found = json_types(want[name], root), json_types(got[name], got_root)
        if name not in want_required:  # None stands for "left out" in an optional parameter
            wanted, found = wanted - {"null"}, found - {"null"}
        if wanted != found and not (found == {"any"} and "any" in wanted):
            out.append(f"{name}: {sorted(wanted)} became {sorted(found)}")
    return out


def documented(framework: str) -> int:
    """The count docs/frameworks.md states for `framework` (its row of the corpus table)."""
    page = (ROOT / "docs" / "frameworks.md").read_text()
    match = re.search(rf"^\| {re.escape(framework)} \| (\d+) of {len(TOOLS)} ", page, re.MULTILINE)
    assert match, f"docs/frameworks.md has no corpus row for {framework}"
    return int(match.group(1))


def test_the_corpus_is_there() -> None:
    assert len(TOOLS) > 200


@pytest.mark.parametrize("framework", list(FRAMEWORKS))
def test_each_framework_keeps_the_parameters_their_types_and_the_required_set(framework: str) -> None:
    derive = FRAMEWORKS[framework]
    failing = {tool.name: found for tool in TOOLS if (found := differences(tool, derive))}
    assert len(failing) == documented(framework), failing
