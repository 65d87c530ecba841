"""Ray on this machine (``ray.init`` local, started once for the module): a remote task and an actor take
a tool list and call through it."""

from __future__ import annotations

import os
from collections.abc import Iterator

import anyio
import pytest
import ray
import scale_tools
from conftest import KITCHEN, PYTHON, TESTS, RunningServer

from cubepi.mcp import MCPToolList, load_mcp_tools_http, load_mcp_tools_stdio


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    path = os.pathsep.join([scale_tools.HERE, str(TESTS)])
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        configure_logging=False,
        runtime_env={"env_vars": {"PYTHONPATH": path}},
    )
    try:
        yield
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def tools(kitchen_http: RunningServer) -> MCPToolList:
    async def load() -> MCPToolList:
        stdio = await load_mcp_tools_stdio(PYTHON, [str(KITCHEN)], prefix="local", include=["echo"])
        http = await load_mcp_tools_http(kitchen_http.url, prefix="web", include=["add", "echo"])
        return MCPToolList([*stdio, *http])

    return anyio.run(load)


def test_remote_task(local_ray: None, tools: MCPToolList) -> None:
    call = ray.remote(scale_tools.call)
    refs = [call.remote(tools, "web__add", {"a": n, "b": 1}) for n in range(10)]
    refs.append(call.remote(tools, "local__echo", {"message": "from a ray task"}))
    assert ray.get(refs, timeout=120) == [str(n + 1) for n in range(10)] + ["from a ray task"]


def test_actor(local_ray: None, tools: MCPToolList) -> None:
    caller = ray.remote(scale_tools.Caller).remote(tools)
    refs = [caller.call.remote("web__echo", {"message": f"m{n}"}) for n in range(5)]
    refs.append(caller.call.remote("local__echo", {"message": "from an actor"}))
    assert ray.get(refs, timeout=120) == [f"m{n}" for n in range(5)] + ["from an actor"]
    assert ray.get(caller.call.remote("web__add", {"a": 2, "b": 3}), timeout=60) == "5"
