"""Pause points (where a debugger may hold the loop and change the run: :class:`PausePoint`),
pause hooks, and :class:`ConnectsToAgent`, how an observer that drives runs (a debugger) is
connected to the agent it is given to."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, Protocol, TypeAlias

from langchain_core.messages import BaseMessage

from toolloop_lab._support.callables import Role, callables, one_callable
from toolloop_lab.errors import InterventionError
from toolloop_lab.events import ToolCallView


class PauseEditor(Protocol):
    """What a pause point can change (the loop implements it for each stage)."""

    def calls(self) -> tuple[ToolCallView, ...]: ...

    def messages(self) -> tuple[BaseMessage, ...]: ...

    def edit_args(self, call_id: str, args: Mapping[str, Any]) -> None: ...

    def skip(self, call_id: str, content: str, status: Literal["success", "error"]) -> None: ...

    def append(self, message: Any) -> None: ...

    def edit_result(
        self, call_id: str, content: str, status: Literal["success", "error"] | None
    ) -> None: ...


@dataclass(frozen=True, slots=True)
class PausePoint:
    """The loop is about to make a model call or dispatch a round's tool calls: what a
    pause hook is given, and what ``dbg.paused_at`` / ``await dbg.next_pause()`` return.

    A hook is awaited at every pause point. While it waits, a person can look at what is
    pending and intervene through the point itself:

    * before a tool dispatch: :attr:`PausePoint.calls`, :meth:`~PausePoint.edit_args` (checked
      against the tool's schema first: types, required and unknown names, patterns in linear
      time, at most 32 levels deep; it also fixes a call the model
      sent as unreadable JSON) and :meth:`~PausePoint.skip` (answer a call by hand:
      the tool never runs and the model reads the text as the call's result);
    * before a model call (a round or the synthesis): :attr:`PausePoint.messages` (copies of
      exactly what will be sent), :meth:`~PausePoint.append` (a user or assistant message, a
      hint say, of text and media only: no tool call or tool result, in ``tool_calls`` or in a
      content block, and not empty) and :meth:`~PausePoint.edit_result` (replace a tool
      result the model has not seen yet; the original stays in the message's ``artifact``).
      The pause before a pruning call changes nothing.

    Every change is one ``intervention`` event with what was there before and what is there
    after, so traces and views show what was made by hand; the transcript stays valid (one
    result per call id, none orphaned). A change the point cannot take raises
    :class:`~toolloop_lab.errors.InterventionError` (``action``, ``reason``, ``call_id``) and
    leaves the run as it was, so the pause holds; once the loop goes on, the point refuses
    further changes (``reason="expired"``). Changes may come from another thread (a widget's
    clicks) while the loop waits.
    """

    run_id: str
    round: int
    stage: Literal["model_call", "tool_dispatch"]
    purpose: str
    """"round", "synthesis" or "pruning" for model calls; "tools" for dispatch."""
    detail: tuple[str, ...] = ()
    """Tool names about to run, for ``tool_dispatch``."""
    editor: PauseEditor | None = field(default=None, repr=False, compare=False)
    """How this point changes the run; ``None`` where nothing can be changed."""

    def _editor(self, action: str) -> PauseEditor:
        if self.editor is None:
            raise InterventionError(
                f"nothing can be changed at this pause ({self.stage}, {self.purpose})",
                action=action,
                reason="wrong_stage",
            )
        return self.editor

    @property
    def calls(self) -> tuple[ToolCallView, ...]:
        """The pending tool calls as they stand now (edits included)."""
        return self.editor.calls() if self.editor is not None else ()

    @property
    def messages(self) -> tuple[BaseMessage, ...]:
        """The messages about to be sent, as they stand now (model calls): copies, so
        changing one changes nothing; :meth:`append` and :meth:`edit_result` change the
        run, checked and recorded."""
        return self.editor.messages() if self.editor is not None else ()

    def edit_args(self, call_id: str, args: Mapping[str, Any]) -> None:
        """Run call ``call_id`` with ``args`` instead (checked against the tool's schema)."""
        self._editor("edit_args").edit_args(call_id, args)

    def skip(
        self, call_id: str, content: str, *, status: Literal["success", "error"] = "success"
    ) -> None:
        """Do not run ``call_id``; the model reads ``content`` as its result."""
        self._editor("skip").skip(call_id, content, status)

    def append(self, message: Any) -> None:
        """Add a message (a ``HumanMessage``, a plain string, a ``("user", text)`` pair)
        to the conversation before this call."""
        self._editor("append_message").append(message)

    def edit_result(
        self,
        call_id: str,
        content: str,
        *,
        status: Literal["success", "error"] | None = None,
    ) -> None:
        """Replace the result of ``call_id`` (one the model has not been sent yet)."""
        self._editor("edit_result").edit_result(call_id, content, status)


PauseHook: TypeAlias = Callable[[PausePoint], Awaitable[None]]
"""Awaited at every pause point; cancelling the loop's task while it waits stops the loop.

A hook may also have a ``may_hold(stage) -> bool`` method: when it says ``False`` the loop
does not build the point (nor its editor) for that hook, which keeps a debugger that is
connected but not stepping this run nearly free."""


PAUSE_HOOKS: Final = Role(
    "pause_hooks", "pause hook", "an async function awaited at every pause point"
)
"""What a pause hook is, as a refusal of one says it."""


def checked_pause_hooks(value: Any) -> tuple[PauseHook, ...]:
    """``value`` as an agent's pause hooks, checked where they are given (a hook that
    cannot be called used to fail the run in round 1); a ``TypeError`` names the fix."""
    return callables(value, PAUSE_HOOKS)


def checked_pause_hook(value: Any, *, where: str = "hook") -> PauseHook:
    """One pause hook given on its own (``agent.add_pause_hook(hook)``), checked likewise."""
    hook: PauseHook = one_callable(value, PAUSE_HOOKS, where=where)
    return hook


def holding(hooks: tuple[PauseHook, ...], stage: str) -> tuple[PauseHook, ...]:
    """The hooks that may hold the loop at a ``stage`` point now (see :data:`PauseHook`)."""
    if not hooks:
        return hooks
    return tuple(
        h for h in hooks if (check := getattr(h, "may_hold", None)) is None or check(stage)
    )


# -- observers that drive the runs they see ----------------------------------------------


class ConnectsToAgent(Protocol):
    """An observer that also drives the runs it sees: a debugger, whose step mode holds a
    run at its pause points and whose Stop and "Fork from here" need the agent.

    Giving such an observer where an agent takes observers (``LLMAgent(model, tools,
    observers=[dbg])``, ``agent.subscribe(dbg)``) connects it: the agent calls
    ``_connect_agent(agent)`` once, and the observer adds what it needs through the agent's
    public API (a pause hook, an observer of its own) and returns the function that takes
    it all away again. The loop never imports the UI: this is the whole contract. The name
    is private so that an observer of a user's own, whose class happens to have a
    ``connect`` method, is never called with an agent it does not expect, and so that
    connecting has one spelling: giving the observer to the agent.
    """

    def _connect_agent(self, agent: Any) -> Callable[[], None]: ...


def connect(observer: object, agent: object) -> Callable[[], None] | None:
    """Connect ``observer`` to ``agent`` when its class asks to be (:class:`ConnectsToAgent`,
    looked up on the class, so a stand-in that answers every attribute is no such
    observer); its disconnect, or ``None`` for a plain observer."""
    method = getattr(type(observer), "_connect_agent", None)
    if not callable(method):
        return None
    detach: Callable[[], None] = method(observer, agent)
    return detach
