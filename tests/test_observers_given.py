"""Every place that takes observers refuses one that cannot be called, where it is given.

An observer given as a string used to be accepted and to record nothing while the run
reported success, and one function given where a list belongs failed inside the run with
"'function' object is not iterable". The agent, the sweeps (local and on Dask), the
LangChain bridge, the span source and the debugger share one check, so each refuses the
same mistakes with the same words, naming the argument and the fix, before anything runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from loopkit import final
from opentelemetry.sdk.trace import TracerProvider

from toolloop_lab import EventBridge, LLMAgent, ScriptedChatModel, watch
from toolloop_lab.events import Event
from toolloop_lab.lab import Reply, Scenario, run_scenarios, run_scenarios_on_dask
from toolloop_lab.otel import SpanSource, watch_spans


def _observer(event: Event) -> None:
    """An observer that keeps nothing."""


def _agent(observers: Any) -> object:
    return LLMAgent(ScriptedChatModel([final("never")]), observers=observers)


def _sweep(observers: Any) -> object:
    return run_scenarios([Scenario.scripted("a", [Reply.final("x")])], observers=observers)


def _dask(observers: Any) -> object:
    # refused before the client is used: no cluster is needed to see it
    scenarios = [Scenario.scripted("a", [Reply.final("x")])]
    return run_scenarios_on_dask(scenarios, None, observers=observers)


TAKE_A_LIST: dict[str, Callable[[Any], object]] = {
    "LLMAgent": _agent,
    "run_scenarios": _sweep,
    "run_scenarios_on_dask": _dask,
}
"""Where observers come as one list argument, ``observers=``."""


@pytest.mark.parametrize("where", TAKE_A_LIST)
@pytest.mark.parametrize(
    ("given", "fix"),
    [
        (_observer, "got the function _observer on its own: pass a list, observers=[_observer]"),
        ("print", "got the str 'print'"),
        (["print"], "observers[0] is the str 'print': pass the observer itself, not its name"),
        ([_observer, 42], "observers[1] is the int 42, which cannot be called"),
        (None, "got None: leave observers= out for none"),
    ],
    ids=["one function", "a string", "a name in the list", "a number in the list", "None"],
)
def test_observers_that_cannot_be_called_are_refused_where_they_are_given(
    where: str, given: Any, fix: str
) -> None:
    with pytest.raises(TypeError) as info:
        TAKE_A_LIST[where](given)
    text = str(info.value)
    assert text.startswith("observers= takes a list of observers (each a callable given every")
    assert fix in text


def _source(*observers: Any) -> object:
    return SpanSource(*observers)


def _spans(*observers: Any) -> object:
    with watch_spans(TracerProvider(), *observers) as source:
        return source


def _watch(*observers: Any) -> object:
    with watch(*observers) as bridge:
        return bridge


TAKE_EACH: dict[str, Callable[..., object]] = {
    "SpanSource": _source,
    "EventBridge": EventBridge,
    "watch_spans": _spans,
    "watch": _watch,
}
"""Where observers come one per argument, ``*observers``."""


@pytest.mark.parametrize("where", TAKE_EACH)
@pytest.mark.parametrize(
    ("given", "fix"),
    [
        (("print",), "observers[0] is the str 'print': pass the observer itself, not its name"),
        ((_observer, None), "observers[1] is None, which cannot be called"),
        (([_observer],), "observers[0] is a list: pass each observer as its own argument"),
    ],
    ids=["a string", "None", "a list"],
)
def test_observers_given_one_per_argument_are_checked_each(
    where: str, given: tuple[Any, ...], fix: str
) -> None:
    with pytest.raises(TypeError) as info:
        TAKE_EACH[where](*given)
    text = str(info.value)
    assert text.startswith(f"{where}(*observers) takes each observer"), text
    assert fix in text
    assert f"{where}(*observers)" in text


@pytest.mark.parametrize("where", TAKE_EACH)
def test_observers_given_one_per_argument_still_get_the_events(where: str) -> None:
    seen: list[Event] = []
    assert TAKE_EACH[where](seen.append) is not None
