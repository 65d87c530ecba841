"""The framework hand-offs are optional: nothing is imported until asked, and a missing extra is named."""

from __future__ import annotations

import subprocess
import sys

import pytest

from cubepi import UserError, tool

FRAMEWORKS = [
    ("langchain_core", "to_langchain", "langchain"),
    ("pydantic_ai", "to_pydantic_ai", "pydantic-ai"),
    ("agents", "to_openai_agents", "openai-agents"),
]


@tool
def shout(text: str) -> str:
    """Upper-case a text."""
    return text.upper()


def test_nothing_is_imported_until_a_method_asks() -> None:
    code = (
        "import sys\n"
        "from cubepi import tool\n"
        "from cubepi.mcp import load_mcp_tools_from_config\n"
        "shout = tool(lambda text: text)\n"
        "assert not {'langchain_core', 'pydantic_ai', 'agents', 'cubepi.frameworks'} & set(sys.modules)\n"
        "shout.to_pydantic_ai()\n"
        "assert 'pydantic_ai' in sys.modules and 'langchain_core' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize(("module", "method", "extra"), FRAMEWORKS)
def test_a_missing_extra_is_named(
    monkeypatch: pytest.MonkeyPatch, module: str, method: str, extra: str
) -> None:
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(UserError, match=rf'pip install "cubepi\[{extra}\]"'):
        getattr(shout, method)()
