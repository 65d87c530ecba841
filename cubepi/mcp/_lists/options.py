"""`LoadOptions`: what a loader takes besides its server, as one typed value.

The loaders keep their documented keywords (a user's editor shows each one); each takes them in as one
`LoadOptions` (`LoadOptions.of(locals())`), so they are written out once per signature and passed on as
one value, and `load_mcp_tools_from_config` checks a file's policies against its fields.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...errors import UserError
from .._calls.limits import DEFAULT_MAX_DURATION, SAME_AS_SERVER, SAME_AS_TIMEOUT, Timeouts
from .._lockfile import DriftPolicy, LockSource
from .policies import DEFAULT_MAX_CONCURRENCY, ApprovalSetting, Policies, ResultRenderer, RetrySetting

if TYPE_CHECKING:
    from mcp.client.session import ElicitationFnT, ListRootsFnT, SamplingFnT
    from mcp.types import LoggingLevel

__all__ = ["LoadOptions"]


@dataclass(frozen=True)
class LoadOptions:
    """The options of `load_mcp_tools`, with its defaults (docs/policies.md says what each does)."""

    timeout: float | None = 30.0
    startup_timeout: float | None = SAME_AS_TIMEOUT
    max_duration: float | None = DEFAULT_MAX_DURATION
    max_response_bytes: int | None = SAME_AS_SERVER
    prespawn: bool = False
    prefix: str | None = None
    include: Iterable[str] | None = None
    exclude: Iterable[str] | None = None
    retries: RetrySetting = 0
    max_output_chars: int | None = None
    result_renderer: ResultRenderer | None = None
    needs_approval: ApprovalSetting = False
    max_concurrency: int | None = DEFAULT_MAX_CONCURRENCY
    hidden_arguments: Mapping[str, Any] | None = None
    elicitation_callback: ElicitationFnT | None = None
    sampling_callback: SamplingFnT | None = None
    list_roots_callback: ListRootsFnT | None = None
    log_level: LoggingLevel | None = None
    tasks: bool = True
    resources: bool = False
    prompts: bool = False
    page_results: bool | int = False
    lock: LockSource | None = None
    on_drift: DriftPolicy = "refuse"

    def __post_init__(self) -> None:
        for names in ("include", "exclude"):  # read once, and again for each server of a lockfile
            if isinstance(getattr(self, names), Iterator):
                object.__setattr__(self, names, tuple(getattr(self, names)))
        for option in ("prespawn", "tasks", "resources", "prompts"):
            value = getattr(self, option)
            if not isinstance(value, bool):
                raise UserError(f"{option} must be True or False, got {value!r}")

    @classmethod
    def names(cls) -> frozenset[str]:
        return frozenset(option.name for option in dataclasses.fields(cls))

    @classmethod
    def of(cls, values: Mapping[str, Any]) -> LoadOptions:
        """The options among `values` (a loader's ``locals()``: its parameters); the rest, the defaults."""
        return cls(**{name: value for name, value in values.items() if name in cls.names()})

    def policies(self) -> Policies:
        return Policies.create(
            prefix=self.prefix,
            include=self.include,
            exclude=self.exclude,
            retries=self.retries,
            max_output_chars=self.max_output_chars,
            result_renderer=self.result_renderer,
            needs_approval=self.needs_approval,
            max_concurrency=self.max_concurrency,
            hidden_arguments=self.hidden_arguments,
            page_results=self.page_results,
        )

    def timeouts(self) -> Timeouts:
        return Timeouts.from_options(self.timeout, self.startup_timeout, self.max_duration)
