"""The official MCP conformance suite's client scenarios, run against cubepi (`client.py`).

For each scenario the suite starts its own test server on localhost, runs the client with its URL and
judges what the server saw. A scenario runs at each revision it targets: 2025-11-25 (the initialize
handshake) and 2026-07-28 (stateless, per-request `_meta`); the suite passes the revision to the client in
`MCP_CONFORMANCE_PROTOCOL_VERSION`. `CONFORMANCE_CLIENT=raw_client.py` runs the same scenarios on the raw
mcp SDK, the baseline for what cubepi can pass at all.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import NODE_BIN, PYTHON

import cubepi

HERE = Path(__file__).parent
CLIENT = HERE / os.environ.get("CONFORMANCE_CLIENT", "client.py")
SUITE = NODE_BIN / "conformance"
NODE20_FS = HERE / "node20_fs.mjs"
CUBEPI_ROOT = Path(cubepi.__file__).parent.parent
"""Put first on the client's path, so that it runs the cubepi under test (a worktree's, not an install's)."""

REVISIONS = ("2025-11-25", "2026-07-28")
"""The revisions a scenario runs at, where it targets them: the last handshake one and the stateless one.
A scenario that targets neither runs at its own latest revision; an extension (on no revision's timeline)
runs at both."""

SOLO = {("sse-retry", "2025-11-25")}
"""Runs that time the client to within 200 ms: run before the others, never beside them."""

H, S = REVISIONS
SCENARIOS: dict[str, tuple[str, ...]] = {
    "initialize": (H,),
    "tools_call": (H, S),
    "elicitation-sep1034-client-defaults": (H,),
    "sse-retry": (H,),
    "request-metadata": (S,),
    "auth/metadata-default": (H, S),
    "auth/metadata-var1": (H, S),
    "auth/metadata-var2": (H, S),
    "auth/metadata-var3": (H, S),
    "auth/basic-cimd": (H, S),
    "auth/scope-from-www-authenticate": (H, S),
    "auth/scope-from-scopes-supported": (H, S),
    "auth/scope-omitted-when-undefined": (H, S),
    "auth/scope-step-up": (H, S),
    "auth/scope-retry-limit": (H, S),
    "auth/token-endpoint-auth-basic": (H, S),
    "auth/token-endpoint-auth-post": (H, S),
    "auth/token-endpoint-auth-none": (H, S),
    "auth/pre-registration": (H, S),
    "auth/2025-03-26-oauth-metadata-backcompat": ("2025-03-26",),
    "auth/2025-03-26-oauth-endpoint-fallback": ("2025-03-26",),
    "auth/resource-mismatch": (S,),
    "auth/offline-access-scope": (S,),
    "auth/offline-access-not-supported": (S,),
    "auth/authorization-server-migration": (S,),
    "auth/iss-supported": (S,),
    "auth/iss-not-advertised": (S,),
    "auth/iss-supported-missing": (S,),
    "auth/iss-wrong-issuer": (S,),
    "auth/iss-unexpected": (S,),
    "auth/iss-normalized": (S,),
    "auth/metadata-issuer-mismatch": (S,),
    "auth/client-credentials-jwt": (H, S),
    "auth/client-credentials-basic": (H, S),
    "auth/enterprise-managed-authorization": (H, S),
    "auth/dpop": (H, S),
    "auth/dpop-nonce": (H, S),
    "auth/wif-jwt-bearer": (H, S),
    "sep-2322-client-request-state": (S,),
    "http-standard-headers": (S,),
    "http-custom-headers": (S,),
    "http-invalid-tool-headers": (S,),
    "json-schema-ref-no-deref": (S,),
    "json-schema-2020-12-preservation": (H, S),
}
"""The suite's client scenarios in its order, each with the revisions it runs at."""

NOT_RUN = {
    name: "cubepi has no skills extension (SEP-2640): a client that never calls skills/list gets only "
    "SKIPPED checks (0/0), so the run could not fail"
    for name in (
        "sep-2640-client-no-prefetch",
        "sep-2640-client-verify-digest",
        "sep-2640-client-verify-size",
        "sep-2640-client-verify-frontmatter",
    )
}
"""Client scenarios of the suite that judge nothing cubepi does, with the reason."""


@dataclass(frozen=True)
class Expected:
    """A run that fails for a reason outside cubepi: the text its output shows when it fails for it, and the
    checks that reason fails (every other check of the run must still pass)."""

    reason: str
    sign: str
    failing: frozenset[str] = frozenset()


class ExpectedFailure(AssertionError):
    """The run failed for its known reason (any other failure is a plain `AssertionError`)."""


NO_PUBLIC_JWT_BEARER = Expected(
    "the mcp SDK 2.3 has no RFC 7523 JWT-bearer grant for a public client (a workload with its JWT only, "
    "auth method none): PrivateKeyJWTOAuthProvider sends such a JWT as a client assertion in a "
    "client_credentials grant, which the scenario refuses, and IdentityAssertionOAuthProvider, the one "
    "JWT-bearer provider, refuses to be built without a client secret",
    "client_secret is required",
    frozenset({"wif-assertion-verified"}),
)
NO_DEFAULT_RESULT_TYPE = Expected(
    "the mcp SDK 2.3 validates a 2026-07-28 tools/call result with resultType required, so the scenario's "
    "result without one (which SEP-2322 says a client MUST take as complete) raises a ValidationError inside "
    "ClientSession.send_request, before cubepi sees it; the raw SDK client fails the same way",
    "CallToolResult.resultType\n  Field required",
)
EXPECTED_FAILURES: dict[tuple[str, str], Expected] = {
    ("auth/wif-jwt-bearer", H): NO_PUBLIC_JWT_BEARER,
    ("auth/wif-jwt-bearer", S): NO_PUBLIC_JWT_BEARER,
    ("sep-2322-client-request-state", S): NO_DEFAULT_RESULT_TYPE,
}
"""Runs that fail for a reason outside cubepi (the mcp SDK), each with that reason."""


@dataclass(frozen=True)
class Verdict:
    passed: bool
    output: str


def conformance(*args: str) -> subprocess.CompletedProcess[str]:
    """Run the suite's CLI; on Node 20 its `fs.globSync` import is stubbed (only `tier-check` uses it)."""
    pythonpath = os.pathsep.join(filter(None, [str(CUBEPI_ROOT), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "NODE_OPTIONS": f"--import={NODE20_FS.as_uri()}", "PYTHONPATH": pythonpath}
    return subprocess.run(
        [str(SUITE), *args], capture_output=True, text=True, env=env, cwd=HERE, timeout=90, check=False
    )


def run_scenario(scenario: str, revision: str) -> Verdict:
    command = shlex.join([PYTHON, str(CLIENT)])
    # --force: an extension is on no revision's timeline, so the suite would skip it at any given one
    done = conformance(
        "client", "--command", command, "--scenario", scenario, "--spec-version", revision, "--force"
    )
    output = re.sub(r"\x1b\[[0-9;]*m", "", done.stdout + done.stderr)
    return Verdict(done.returncode == 0 and "OVERALL: PASSED" in output, output)


def runs() -> list[tuple[str, str]]:
    return [(scenario, revision) for scenario, revisions in SCENARIOS.items() for revision in revisions]


@pytest.fixture(scope="module")
def verdicts(request: pytest.FixtureRequest) -> Iterator[dict[tuple[str, str], Future[Verdict]]]:
    """The selected runs: the `SOLO` ones first, the rest two at a time."""
    selected = [
        (item.callspec.params["scenario"], item.callspec.params["revision"])
        for item in request.session.items
        if item.module is request.module and hasattr(item, "callspec")
    ]
    futures: dict[tuple[str, str], Future[Verdict]] = {}
    for run in SOLO.intersection(selected):
        futures[run] = Future()
        futures[run].set_result(run_scenario(*run))
    with ThreadPoolExecutor(max_workers=2) as pool:
        for run in selected:
            if run not in futures:
                futures[run] = pool.submit(run_scenario, *run)
        yield futures
        pool.shutdown(cancel_futures=True)


def test_the_scenario_list_is_the_suites() -> None:
    """Every client scenario the suite lists, in its order, at the revisions the rule above gives."""
    listed = conformance("list").stdout.split("Client scenarios")[1].split("\n\n")[0]
    expected: dict[str, tuple[str, ...]] = {}
    for name, tags in re.findall(r"^  - (\S+) \[(.*)\]$", listed, re.MULTILINE):
        targets = tags.split(",")
        if targets == ["extension"]:
            expected[name] = REVISIONS
        else:
            expected[name] = tuple(r for r in REVISIONS if r in targets) or (targets[-1],)
    assert list(expected) == [*SCENARIOS, *NOT_RUN]
    assert {name: expected[name] for name in SCENARIOS} == SCENARIOS


@pytest.mark.parametrize(
    ("scenario", "revision"),
    [
        pytest.param(
            *run,
            marks=pytest.mark.xfail(
                strict=True, raises=ExpectedFailure, reason=EXPECTED_FAILURES[run].reason
            ),
        )
        if run in EXPECTED_FAILURES
        else run
        for run in runs()
    ],
    ids=[f"{scenario}@{revision}" for scenario, revision in runs()],
)
def test_scenario_passes(
    scenario: str, revision: str, verdicts: dict[tuple[str, str], Future[Verdict]]
) -> None:
    verdict = verdicts[scenario, revision].result()
    expected = EXPECTED_FAILURES.get((scenario, revision))
    if expected is not None and not verdict.passed and expected.sign in verdict.output:
        failing = set(re.findall(r"^\S+ \[(\S+?) *\] (?:FAILURE|WARNING) ", verdict.output, re.MULTILINE))
        if failing <= expected.failing:
            raise ExpectedFailure(expected.reason)
    assert verdict.passed, verdict.output


def test_resources_and_prompts_headers_are_judged(verdicts: dict[tuple[str, str], Future[Verdict]]) -> None:
    """At 2026-07-28 the suite checks the headers of resources and prompts requests only when a client
    makes them: cubepi's client reads the server's resources and gets its prompts, so none is skipped."""
    run = ("http-standard-headers", "2026-07-28")
    output = (verdicts[run].result() if run in verdicts else run_scenario(*run)).output
    for method in ("resources/list", "resources/read", "prompts/list", "prompts/get"):
        assert f"SUCCESS Client sends correct Mcp-Method header on {method} request" in output, output
    assert not re.search(r"SKIPPED .* on (resources|prompts)/", output), output


def test_every_declared_capability_is_judged(verdicts: dict[tuple[str, str], Future[Verdict]]) -> None:
    """`request-metadata` judges the sampling and roots capabilities only when a client declares them: the
    cubepi client gives its loader both callbacks, so both are checked (and valid)."""
    run = ("request-metadata", "2026-07-28")
    output = (verdicts[run].result() if run in verdicts else run_scenario(*run)).output
    for capability in ("roots", "sampling", "elicitation"):
        assert f"SUCCESS Client declares valid {capability} capability" in output, output
