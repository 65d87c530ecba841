"""`Agent`: the loop that sends the transcript to a model, runs the tools it calls, and repeats."""

from __future__ import annotations

import inspect
import math
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias, cast

import anyio
import anyio.from_thread
import anyio.lowlevel
import pydantic
from pydantic import BaseModel

from .._calling import lending_elicitation
from ..errors import UserError
from ..providers import (
    AssistantMessage,
    CompletingProvider,
    Message,
    MessageBuilder,
    Model,
    Provider,
    ProviderRequest,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    stream_response,
)
from ..providers._messages import ABORTED
from ..tools import (
    AgentTool,
    AgentToolResult,
    Content,
    TextContent,
    ToolUpdate,
    ensure_unique_names,
    find_tool,
    format_validation_error,
)
from ._events import (
    AgentEnd,
    AgentEvent,
    AgentStart,
    MessageEnd,
    MessageStart,
    MessageUpdate,
    ToolExecutionEnd,
    ToolExecutionStart,
    ToolExecutionUpdate,
    ToolInputRequested,
    TurnEnd,
    TurnStart,
)
from ._hooks import (
    AfterToolCall,
    ApprovalCallback,
    BeforeToolCall,
    BlockCall,
    ReplaceArguments,
    ToolCallContext,
)

__all__ = ["Agent", "AgentState", "Listener"]


@dataclass
class AgentState:
    """The agent as listeners see it: live, not a copy (read it, do not change it from a listener).

    `messages` is the whole transcript; `turn` the current turn of the running prompt (0 when idle);
    `running_tool_calls` the ids of tool calls running right now.
    """

    model: Model
    tools: tuple[AgentTool, ...]
    system_prompt: str | None
    messages: list[Message] = field(default_factory=list)
    is_running: bool = False
    turn: int = 0
    running_tool_calls: set[str] = field(default_factory=set)


Listener: TypeAlias = Callable[[AgentEvent, AgentState], "Awaitable[None] | None"]
"""``listener(event, state)``, sync or async; a listener taking one argument gets the event only."""


async def _maybe_await(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await value
    return value


def _arity_one(listener: Callable[..., Any]) -> bool:
    try:
        signature = inspect.signature(listener)
    except (TypeError, ValueError):
        return False
    positional = [
        p
        for p in signature.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
    ]
    return len(positional) == 1 and positional[0].kind != positional[0].VAR_POSITIONAL


class Agent:
    """An LLM with tools: `await agent.prompt(text)` runs turns until the model stops calling tools.

    Each turn streams the model's response from `provider` (`MessageUpdate` events as it is written); the
    tool calls of one response run concurrently, each in its own task. `agent.abort()` stops a prompt,
    mid-stream or mid-call, and leaves a transcript the next `prompt` can send. An unknown tool, arguments
    that fail validation, a blocked or refused call, and an exception raised by a tool all become error
    results the model reads; the loop goes on.

    - `before_tool_call(ctx)` runs before validation and may return `BlockCall(reason)` or
      `ReplaceArguments(arguments)`.
    - `after_tool_call(ctx, result)` may return a new `AgentToolResult`.
    - `approve(ctx)` decides calls of tools whose `needs_approval` applies; without it they are refused.
    - `elicitation_callback` (the MCP SDK's signature) answers an MCP server that asks for input in the
      middle of a tool call, for tools whose list has no callback of its own; each question is also a
      `ToolInputRequested` event.
    - `max_turns` bounds the turns of one `prompt`: a model still calling tools after that many raises
      `UserError` (the transcript keeps every call and result, so `prompt` can be called again).

    Hooks, `approve` and listeners are user code: what they raise propagates out of `prompt`.
    Raises `UserError` when two tools share a name (naming both origins) or when `model.provider` is not
    the provider's `name`.
    """

    def __init__(
        self,
        provider: Provider | CompletingProvider,
        model: Model,
        tools: Sequence[AgentTool] = (),
        system_prompt: str | None = None,
        before_tool_call: BeforeToolCall | None = None,
        after_tool_call: AfterToolCall | None = None,
        approve: ApprovalCallback | None = None,
        max_turns: int | None = 50,
        elicitation_callback: Any = None,
    ) -> None:
        if max_turns is not None and max_turns < 1:
            raise UserError(f"max_turns must be at least 1 (or None for no limit), got {max_turns}")
        self.max_turns = max_turns
        tools = tuple(tools)
        for item in tools:
            if not isinstance(item, AgentTool):
                raise UserError(f"tools must be AgentTool instances, got {type(item).__name__}: {item!r}")
        ensure_unique_names(tools)
        provider_name = getattr(provider, "name", None)
        if provider_name != model.provider:
            raise UserError(
                f"model {model.id!r} is for provider {model.provider!r} but the agent was given "
                f"{type(provider).__name__} (provider {provider_name!r})"
            )
        self.provider = provider
        self.before_tool_call = before_tool_call
        self.after_tool_call = after_tool_call
        self.approve = approve
        if elicitation_callback is not None and not callable(elicitation_callback):
            raise UserError("elicitation_callback must be an async function (context, params) -> result")
        self.elicitation_callback = elicitation_callback
        self._state = AgentState(model=model, tools=tools, system_prompt=system_prompt)
        self._listeners: list[tuple[Callable[..., Any], bool]] = []
        self._abort_scope: anyio.CancelScope | None = None
        self._streaming: AssistantMessage | None = None

    def __repr__(self) -> str:
        return (
            f"Agent(model={self.model.id!r}, provider={self.model.provider!r}, tools={len(self.tools)}, "
            f"messages={len(self.messages)})"
        )

    # -- state ---------------------------------------------------------------------------------------------

    @property
    def state(self) -> AgentState:
        """The live state listeners receive as their second argument."""
        return self._state

    @property
    def model(self) -> Model:
        """The model every turn is sent to."""
        return self._state.model

    @property
    def tools(self) -> tuple[AgentTool, ...]:
        """The tools the model may call."""
        return self._state.tools

    @property
    def system_prompt(self) -> str | None:
        """The system prompt sent with every turn."""
        return self._state.system_prompt

    @property
    def messages(self) -> list[Message]:
        """The transcript: user, assistant and tool result messages, oldest first (a live list)."""
        return self._state.messages

    def _lend_input(self, call: ToolCall) -> Any:
        """The agent's elicitation callback for one tool call, announcing each question as an event."""
        answer = self.elicitation_callback

        async def ask(context: Any, params: Any) -> Any:
            await self._emit(ToolInputRequested(call.id, call.name, str(getattr(params, "message", ""))))
            return await answer(context, params)

        return ask

    # -- events --------------------------------------------------------------------------------------------

    def subscribe(
        self, listener: Listener | Callable[[AgentEvent], Awaitable[None] | None]
    ) -> Callable[[], None]:
        """Call `listener(event, state)` for every event; returns a function that unsubscribes it.

        Listeners run in subscription order and are awaited when async; `state` is `agent.state`.
        """
        entry = (cast(Callable[..., Any], listener), _arity_one(listener))
        self._listeners.append(entry)

        def unsubscribe() -> None:
            if entry in self._listeners:
                self._listeners.remove(entry)

        return unsubscribe

    async def _emit(self, event: AgentEvent) -> None:
        for listener, event_only in list(self._listeners):
            if event_only:
                await _maybe_await(listener(event))
            else:
                await _maybe_await(listener(event, self._state))

    # -- the loop ------------------------------------------------------------------------------------------

    async def prompt(self, text: str | Sequence[Content]) -> AssistantMessage:
        """Add a user message and run turns until the model answers without tool calls; return that answer.

        After `abort`, returns the last response instead (``answer.aborted`` when its stream was stopped).
        """
        if self._state.is_running:
            raise UserError("this agent is already running a prompt; await it before prompting again")
        content: list[Content] = [TextContent(text)] if isinstance(text, str) else list(text)
        start = len(self.messages)
        self._state.is_running = True
        self._streaming = None
        try:
            final: AssistantMessage | None = None
            try:
                with anyio.CancelScope() as scope:
                    self._abort_scope = scope
                    await self._emit(AgentStart())
                    final = await self._run(UserMessage(content=content))
            except Exception as exc:
                await self._emit(AgentEnd(self.messages[start:], error=exc, usage=self._usage(start)))
                raise
            finally:
                self._abort_scope = None
            aborted = final is None
            if final is None:
                final = await self._end_aborted(start)
            await self._emit(AgentEnd(self.messages[start:], usage=self._usage(start), aborted=aborted))
            return final
        finally:
            self._state.is_running = False
            self._state.turn = 0
            self._state.running_tool_calls.clear()

    async def stream(self, text: str | Sequence[Content]) -> AsyncIterator[AgentEvent]:
        """Run `prompt(text)` and yield its events as they happen (the ones listeners get).

        An error of the prompt is raised after its `AgentEnd`. Leaving the loop early cancels the prompt
        once the iterator is closed (``async with contextlib.aclosing(agent.stream(...))``).
        """
        if self._state.is_running:
            raise UserError("this agent is already running a prompt; await it before prompting again")
        send, receive = anyio.create_memory_object_stream[AgentEvent](math.inf)
        failures: list[Exception] = []
        unsubscribe = self.subscribe(send.send_nowait)

        async def run() -> None:
            with send:
                try:
                    await self.prompt(text)
                except Exception as exc:
                    failures.append(exc)
                finally:
                    unsubscribe()

        try:
            async with anyio.create_task_group() as group:
                group.start_soon(run, name="cubepi agent prompt")
                with receive:
                    try:
                        async for event in receive:
                            yield event
                    except GeneratorExit:  # closed early: the prompt is cancelled, then the stream ends
                        group.cancel_scope.cancel()
                        return
        finally:
            unsubscribe()
        if failures:
            raise failures[0]

    def abort(self) -> None:
        """Stop the running prompt (no-op when idle): a streaming response stops where it is and joins the
        transcript marked aborted, its finished tool calls answered by error results and its unfinished
        ones dropped; running tool calls are cancelled. `prompt` then returns. Call it from the event loop
        (a listener, or another task)."""
        if self._abort_scope is not None:
            self._abort_scope.cancel()

    def _usage(self, start: int) -> Usage:
        total = Usage()
        for message in self.messages[start:]:
            if isinstance(message, AssistantMessage) and message.usage is not None:
                total += message.usage
        return total

    async def _end_aborted(self, start: int) -> AssistantMessage:
        """The events that close an aborted prompt's response and turn; the answer `prompt` returns."""
        if self._streaming is not None:
            await self._emit(MessageEnd(self._streaming))
        added = self.messages[start:]
        position = next(
            (i for i in range(len(added) - 1, -1, -1) if isinstance(added[i], AssistantMessage)), None
        )
        if position is None:
            answer = AssistantMessage(stop_reason=ABORTED, model=self.model.id)
            results: list[ToolResultMessage] = []
        else:
            answer = cast(AssistantMessage, added[position])
            results = [m for m in added[position + 1 :] if isinstance(m, ToolResultMessage)]
        if self._state.turn:
            await self._emit(TurnEnd(self._state.turn, answer, results))
        return answer

    async def _append(self, *messages: Message) -> None:
        """Add `messages` with their events; all of them join the transcript even if a listener fails."""
        added = 0
        try:
            for message in messages:
                await self._emit(MessageStart(message))
                self.messages.append(message)
                added += 1
                await self._emit(MessageEnd(message))
        except BaseException:
            self.messages.extend(messages[added:])
            raise

    async def _respond(self, request: ProviderRequest) -> AssistantMessage:
        """Stream the provider's answer to `request` into the transcript, one `MessageUpdate` a delta.

        Stopped (abort, cancellation) or failed mid-stream, the partial answer still joins the transcript
        (a failed one only if it holds something): its text is kept, calls still forming are dropped,
        finished calls get error results.
        """
        builder = MessageBuilder(model=self.model.id)
        message = self._streaming = builder.message
        deltas = stream_response(self.provider, request)
        try:
            await self._emit(MessageStart(message))
            async for delta in deltas:
                builder.apply(delta)
                await self._emit(MessageUpdate(delta, message))
        except BaseException as exc:
            cancelled = isinstance(exc, anyio.get_cancelled_exc_class())
            builder.interrupt(ABORTED if cancelled else "error")
            if cancelled or message.content or message.thinking or message.tool_calls:
                self.messages.append(message)
            if not cancelled:
                self._streaming = None
            why = "the response was stopped" if cancelled else f"the response failed ({type(exc).__name__})"
            self._settle(message.tool_calls, [None] * len(message.tool_calls), why)
            raise
        finally:
            with anyio.CancelScope(shield=True):
                await deltas.aclose()
        self.messages.append(message)
        self._streaming = None
        await self._emit(MessageEnd(message))
        return message

    async def _run(self, user: UserMessage) -> AssistantMessage:
        pending: Message | None = user
        turns = 0
        while True:
            if self.max_turns is not None and turns >= self.max_turns:
                raise UserError(
                    f"the model was still calling tools after {self.max_turns} turns; "
                    "pass a larger max_turns to Agent (or None for no limit)"
                )
            turns += 1
            self._state.turn += 1
            turn = self._state.turn
            await self._emit(TurnStart(turn))
            if pending is not None:
                await self._append(pending)
                pending = None
            request = ProviderRequest(
                model=self.model,
                messages=tuple(self.messages),
                tools=self.tools,
                system_prompt=self.system_prompt,
            )
            answer = await self._respond(request)
            results = await self._run_tool_calls(answer) if answer.tool_calls else []
            await self._append(*results)
            await self._emit(TurnEnd(turn, answer, results))
            if not answer.tool_calls:
                return answer

    async def _run_tool_calls(self, answer: AssistantMessage) -> list[ToolResultMessage]:
        calls = answer.tool_calls
        results: list[AgentToolResult | None] = [None] * len(calls)
        failures: list[BaseException] = []

        async def run_one(index: int, call: ToolCall) -> None:
            try:
                results[index] = await self._run_tool_call(call, answer, failures)
            except Exception as exc:  # user code (hook, approve, listener) raised: re-raised below
                failures.append(exc)
            finally:
                self._state.running_tool_calls.discard(call.id)

        try:
            async with anyio.create_task_group() as group:
                for index, call in enumerate(calls):
                    self._state.running_tool_calls.add(call.id)
                    group.start_soon(run_one, index, call, name=f"cubepi tool call {call.name} ({call.id})")
        except BaseException:  # cancelled: keep the transcript valid for the next prompt
            self._settle(calls, results, "the call was cancelled")
            raise
        if failures:
            self._settle(calls, results, f"the agent stopped: {type(failures[0]).__name__}")
            raise failures[0]
        return [
            ToolResultMessage.from_result(call, result)
            for call, result in zip(calls, results, strict=True)
            if result is not None
        ]

    def _settle(self, calls: list[ToolCall], results: list[AgentToolResult | None], why: str) -> None:
        """Answer every call of an interrupted turn, so the transcript stays valid for the next prompt.

        No events are sent for these messages: the prompt is failing or being cancelled.
        """
        for call, result in zip(calls, results, strict=True):
            if result is None:
                result = AgentToolResult.error(f"The call to tool {call.name!r} did not complete: {why}.")
            self.messages.append(ToolResultMessage.from_result(call, result))

    async def _run_tool_call(
        self, call: ToolCall, answer: AssistantMessage, failures: list[BaseException]
    ) -> AgentToolResult:
        await self._emit(ToolExecutionStart(call.id, call.name, dict(call.arguments)))
        result = await self._dispatch(call, answer, failures)
        await self._emit(ToolExecutionEnd(call.id, call.name, result))
        return result

    async def _dispatch(
        self, call: ToolCall, answer: AssistantMessage, failures: list[BaseException]
    ) -> AgentToolResult:
        tool = find_tool(self.tools, call.name)
        if tool is None:
            names = ", ".join(item.api_name for item in self.tools) or "(none)"
            return AgentToolResult.error(
                f"Unknown tool {call.name!r}. Available tools: {names}.", reason="unknown_tool"
            )
        if call.arguments_error is not None:
            return AgentToolResult.error(
                f"Invalid arguments for tool {call.name!r}: {call.arguments_error}. "
                "Send the arguments as a JSON object.",
                reason="invalid_arguments",
            )
        arguments: Mapping[str, Any] | BaseModel = call.arguments
        ctx = ToolCallContext(tool_call=call, tool=tool, arguments=call.arguments, assistant_message=answer)
        if self.before_tool_call is not None:
            decision = await _maybe_await(self.before_tool_call(ctx))
            if isinstance(decision, BlockCall):
                return AgentToolResult.error(
                    f"The call to tool {call.name!r} was blocked: {decision.reason}",
                    reason="blocked",
                    block_reason=decision.reason,
                )
            if isinstance(decision, ReplaceArguments):
                arguments = decision.arguments
            elif decision is not None:
                raise UserError(
                    "before_tool_call must return BlockCall, ReplaceArguments or None, "
                    f"got {type(decision).__name__}"
                )
        try:
            params = tool.validate(arguments)
        except pydantic.ValidationError as exc:
            return AgentToolResult.error(
                format_validation_error(call.name, exc, arguments),
                reason="invalid_arguments",
                validation_errors=exc.errors(include_url=False, include_context=False, include_input=False),
            )
        wire = arguments if isinstance(arguments, Mapping) else params.model_dump(mode="json", by_alias=True)
        ctx = ToolCallContext(
            tool_call=call, tool=tool, arguments=dict(wire), assistant_message=answer, params=params
        )
        if tool.requires_approval(params):
            approved = False
            if self.approve is not None:
                approved = bool(await _maybe_await(self.approve(ctx)))
            if not approved:
                why = (
                    "was refused"
                    if self.approve is not None
                    else "needs approval and no approve callback is set"
                )
                return AgentToolResult.error(f"The call to tool {call.name!r} {why}.", reason="not_approved")

        loop_thread = threading.get_ident()
        token = anyio.lowlevel.current_token()
        finished = False

        async def emit_update(update: ToolUpdate) -> None:
            if finished:  # a thread of the tool outlived the call: its late updates are dropped
                return
            try:
                await self._emit(ToolExecutionUpdate(call.id, call.name, update))
            except Exception as exc:  # a listener's bug is not the tool's failure
                failures.append(exc)

        def on_update(update: ToolUpdate) -> Awaitable[None] | None:
            # Awaitable in the event loop; from any other thread (a worker of a sync tool, or a thread the
            # tool started itself), run in the event loop and wait.
            if threading.get_ident() == loop_thread:
                return emit_update(update)
            if not finished:
                anyio.from_thread.run(emit_update, update, token=token)
            return None

        lent = self._lend_input(call) if self.elicitation_callback is not None else None
        try:
            with lending_elicitation(lent):
                result = await tool.execute(params, on_update=on_update)
        except Exception as exc:
            result = AgentToolResult.error(
                f"Tool {call.name!r} failed: {type(exc).__name__}: {exc}", reason="exception", exception=exc
            )
        finally:
            finished = True
        if self.after_tool_call is not None:
            replaced = await _maybe_await(self.after_tool_call(ctx, result))
            if replaced is not None:
                if not isinstance(replaced, AgentToolResult):
                    raise UserError(
                        "after_tool_call must return an AgentToolResult or None, "
                        f"got {type(replaced).__name__}"
                    )
                result = replaced
        return result
