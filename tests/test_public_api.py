"""The public face of DESIGN.md imports as documented, and the layers stay apart."""

from __future__ import annotations

import subprocess
import sys

import pytest


def test_documented_names_import() -> None:
    from cubepi import AgentTool, AgentToolResult, ImageContent, TextContent, tool  # noqa: F401
    from cubepi.mcp import (  # noqa: F401
        HttpServer,
        MCPError,
        StdioServer,
        load_mcp_tools,
        load_mcp_tools_http,
        load_mcp_tools_stdio,
        make_mcp_agent_tool,
        render_mcp_content,
    )
    from cubepi.schema import normalize_schema, schema_to_model, to_arguments  # noqa: F401


def test_agent_names_are_reachable_from_the_root_but_imported_lazily() -> None:
    code = (
        "import sys, cubepi\n"
        "assert 'cubepi.agent' not in sys.modules and 'cubepi.providers' not in sys.modules\n"
        "from cubepi import Agent, Model, FauxProvider, AnthropicProvider, OpenAIProvider\n"
        "assert Agent.__module__.startswith('cubepi.agent')\n"
        "assert 'anthropic' not in sys.modules and 'openai' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_providers_public_homes_are_their_modules_and_import_no_sdk() -> None:
    code = (
        "import sys\n"
        "from cubepi.providers.anthropic import AnthropicProvider\n"
        "from cubepi.providers.openai import OpenAIProvider\n"
        "import cubepi, cubepi.providers\n"
        "assert cubepi.AnthropicProvider is cubepi.providers.AnthropicProvider is AnthropicProvider\n"
        "assert cubepi.OpenAIProvider is cubepi.providers.OpenAIProvider is OpenAIProvider\n"
        "assert AnthropicProvider.__module__ == 'cubepi.providers.anthropic'\n"
        "assert OpenAIProvider.__module__ == 'cubepi.providers.openai'\n"
        "assert 'anthropic' not in sys.modules and 'openai' not in sys.modules\n"
        "AnthropicProvider(api_key='k')\n"
        "assert 'anthropic' in sys.modules and 'openai' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_unknown_root_attribute_is_an_attribute_error() -> None:
    import cubepi

    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        cubepi.Nope  # noqa: B018


def test_dpop_is_reachable_from_cubepi_mcp_but_imported_on_use() -> None:
    code = (
        "import sys, cubepi.mcp\n"
        "assert 'httpx2' not in sys.modules and 'cubepi.mcp._transports.dpop' not in sys.modules\n"
        "from cubepi.mcp import DPoP\n"
        "assert DPoP.__module__ == 'cubepi.mcp._transports.dpop' and 'DPoP' in cubepi.mcp.__all__\n"
        "try:\n"
        "    cubepi.mcp.Nope\n"
        "except AttributeError as exc:\n"
        "    assert \"no attribute 'Nope'\" in str(exc)\n"
        "else:\n"
        "    raise AssertionError('cubepi.mcp.Nope')\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
