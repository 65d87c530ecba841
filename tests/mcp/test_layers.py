"""The shape of `cubepi/mcp`, read from its source: no import circle counting every import (module-level,
``if TYPE_CHECKING:`` and function-local), at most 15 private modules beside its sub-packages, and the SDK's
private names in `_sdk` alone. An import that closes a circle fails here with the arrows that tie it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import cubepi.mcp

PACKAGE = Path(cubepi.mcp.__file__).parent
PRIVATE_SDK_NAME = re.compile(
    r"(?<![\w.])mcp(?:_types)?(?:\.\w+)*\._\w+|_create_platform_compatible_process|\._stamp\b"
)


def _module(path: Path) -> str:
    parts = ("cubepi", "mcp", *path.relative_to(PACKAGE).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, known: set[str]) -> dict[str, set[str]]:
    """The modules of `known` that `path` imports anywhere in its source, with the names it takes."""
    module = _module(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: dict[str, set[str]] = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[tuple[str, list[str]]] = []
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            names = [alias.name for alias in node.names]
            targets = [(base, names), *((f"{base}.{name}", []) for name in names)]
        elif isinstance(node, ast.Import):
            targets = [(alias.name, []) for alias in node.names]
        for target, names in targets:
            if target in known and target != module and not module.startswith(f"{target}."):
                found.setdefault(target, set()).update(names)
    return found


def _circles(edges: dict[str, dict[str, set[str]]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        circles.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(edges[child])))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return circles


def _graph() -> dict[str, dict[str, set[str]]]:
    paths = sorted(PACKAGE.rglob("*.py"))
    known = {_module(path) for path in paths}
    return {_module(path): _imports(path, known) for path in paths}


def test_no_import_circle_counting_type_checking_and_function_local_imports() -> None:
    edges = _graph()
    report = [
        "\n".join(
            f"{a} -> {b}: {', '.join(sorted(edges[a][b]))}" for a in circle for b in edges[a] if b in circle
        )
        for circle in _circles(edges)
    ]
    assert not report, "import circles in cubepi.mcp:\n\n" + "\n\n".join(report)


def test_the_checker_sees_a_circle_made_only_of_annotations_and_local_imports() -> None:
    edges = {"a": {"b": {"B"}}, "b": {"c": set()}, "c": {"a": set()}, "d": {"a": set()}}
    assert _circles(edges) == [["a", "b", "c"]]
    session = PACKAGE / "_calls" / "session.py"
    tasks = PACKAGE / "_calls" / "tasks.py"
    known = {_module(session), _module(tasks), "cubepi.mcp._calls.ownership"}
    assert _module(tasks) in _imports(session, known)  # an `if TYPE_CHECKING:` import counts
    assert "cubepi.mcp._calls.ownership" in _imports(session, known)


def test_at_most_fifteen_private_modules_beside_the_sub_packages() -> None:
    private = sorted(path.name for path in PACKAGE.glob("_*.py") if path.name != "__init__.py")
    assert len(private) <= 15, private
    assert {path.name for path in PACKAGE.iterdir() if path.is_dir() and (path / "__init__.py").exists()} >= {
        "_calls",
        "_lists",
        "_transports",
    }


def test_the_sdk_private_names_are_named_in_sdk_alone() -> None:
    named = {
        str(path.relative_to(PACKAGE)): set(PRIVATE_SDK_NAME.findall(path.read_text(encoding="utf-8")))
        for path in sorted(PACKAGE.rglob("*.py"))
    }
    elsewhere = {path: names for path, names in named.items() if names and path != "_sdk.py"}
    assert not elsewhere
    assert {"mcp.client._probe", "_create_platform_compatible_process", "._stamp"} <= named["_sdk.py"]


def test_no_call_path_asks_a_server_for_its_kind() -> None:
    """The calls, the sessions and the transports read a `Transport`'s traits; which transport a server
    takes is decided in `_transports/choice.py` alone."""
    configs = {"StdioServer", "HttpServer", "StdioConfig", "HttpConfig", "StdioTransport"}
    asked: list[str] = []
    for path in sorted(
        [*PACKAGE.glob("_calls/*.py"), *PACKAGE.glob("_transports/*.py"), PACKAGE / "_connection.py"]
    ):
        if path.name == "choice.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            kind = isinstance(node, ast.Compare) and any(
                isinstance(side, ast.Attribute) and side.attr == "kind"
                for side in [node.left, *node.comparators]
            )
            typed = (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "isinstance"
                and bool(configs & set(re.findall(r"\w+", ast.unparse(node.args[1]))))
            )
            if kind or typed:
                asked.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: {ast.unparse(node)}")
    assert not asked, "\n".join(asked)
