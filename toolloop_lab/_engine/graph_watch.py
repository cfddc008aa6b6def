"""What ``ToolLoopMiddleware`` sees of a ``create_agent`` graph outside its own hooks.

Two things happen in a graph run between the middleware's hooks, in nodes of other
middleware: LangChain's ``SummarizationMiddleware`` calls its model inside its own
``before_model`` node, and another middleware's hook may raise, ending the graph without
passing through ours. Neither reaches a hook of ours, and a node cannot hand callbacks to
another node (each gets its own copy of the graph's), so the middleware watches them through
langchain-core's callback system: one handler, :data:`WATCH`, is added to every callback
manager once the middleware module is loaded (``register_configure_hook`` with a context
variable whose default is the handler). It keeps nothing and does nothing for a run that is
not a ``create_agent`` graph (its metadata says ``ls_integration``), and for those only
remembers the parent of each chain run while it runs, so that a model call can be traced
back to the graph run it belongs to. A graph run the middleware drives is followed from its
``before_agent`` (:meth:`GraphWatch.follow`), and let go when the graph ends.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from typing import Any, Final, Protocol
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGeneration, LLMResult
from langchain_core.tracers.context import register_configure_hook

_AGENT: Final = "langchain_create_agent"
"""The ``ls_integration`` metadata every run of a ``create_agent`` graph carries."""
_SUMMARY: Final = "summarization"
"""The ``lc_source`` metadata of ``SummarizationMiddleware``'s model calls."""
_MAX_DEPTH: Final = 64


class Followed(Protocol):
    """A run the middleware drives, as the watch reports to it."""

    def summary_started(self, call: UUID, prompt: Sequence[BaseMessage], model: str | None) -> None:
        """A summarization call of the run was sent."""

    def summary_ended(self, call: UUID, reply: BaseMessage | None) -> None:
        """That call replied."""

    def summary_failed(self, call: UUID, error: BaseException) -> None:
        """That call raised."""

    def graph_failed(self, error: BaseException) -> None:
        """The graph run raised outside the middleware's hooks (another middleware's)."""


class GraphWatch(BaseCallbackHandler):
    """The one handler (see the module doc); it never raises into the run it watches."""

    run_inline = True

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._parents: dict[UUID, UUID | None] = {}
        self._graphs: dict[UUID, Followed] = {}
        self._calls: dict[UUID, Followed] = {}

    # -- what the middleware calls ------------------------------------------------------
    def follow(self, node_run: UUID | None, run: Followed) -> None:
        """Follow the graph run whose node ``node_run`` is (a hook's own chain run)."""
        if node_run is None:
            return
        with self._lock:
            graph = self._parents.get(node_run)
            if graph is not None:
                self._graphs[graph] = run

    def following(self) -> int:
        """Graph runs followed now (for the tests: none once every run ended)."""
        return len(self._graphs)

    # -- the callbacks ------------------------------------------------------------------
    def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        if metadata and metadata.get("ls_integration") == _AGENT:
            self._parents[run_id] = parent_run_id

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self._parents.pop(run_id, None)
        self._graphs.pop(run_id, None)

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._parents.pop(run_id, None)
        run = self._graphs.pop(run_id, None)
        if run is not None and not _bubbles_up(error):
            run.graph_failed(error)

    def on_chat_model_start(
        self,
        serialized: dict[str, Any] | None,
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        if not metadata or metadata.get("lc_source") != _SUMMARY:
            return
        run = self._graph_of(parent_run_id)
        if run is None:
            return
        self._calls[run_id] = run
        model = metadata.get("ls_model_name")
        run.summary_started(run_id, messages[0] if messages else [], str(model) if model else None)

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        run = self._calls.pop(run_id, None)
        if run is None:
            return
        first = (
            response.generations[0][0] if response.generations and response.generations[0] else None
        )
        run.summary_ended(run_id, first.message if isinstance(first, ChatGeneration) else None)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        run = self._calls.pop(run_id, None)
        if run is not None:
            run.summary_failed(run_id, error)

    def _graph_of(self, run_id: UUID | None) -> Followed | None:
        """The followed graph run ``run_id`` runs under, if any."""
        for _ in range(_MAX_DEPTH):
            if run_id is None:
                return None
            found = self._graphs.get(run_id)
            if found is not None:
                return found
            run_id = self._parents.get(run_id)
        return None


def _bubbles_up(error: BaseException) -> bool:
    """An interrupt or a command to a parent graph: LangGraph's control flow, not a failure."""
    from langgraph.errors import GraphBubbleUp

    return isinstance(error, GraphBubbleUp)


WATCH: Final = GraphWatch()
_WATCHING: ContextVar[GraphWatch | None] = ContextVar("toolloop_graph_watch", default=WATCH)
register_configure_hook(_WATCHING, inheritable=True)
