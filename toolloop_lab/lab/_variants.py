"""Variants of a sweep: every scenario run under each named change of its setup, ``repeats``
times, and each run judged by the scenario's checks.

A :class:`Variant` is data (``AgentConfig`` fields to change, and optionally another model or
pruning model), so a variant's scenario pickles like any other. :func:`plan` expands a
sweep into its runs (scenario x variant x repeat, in that order) before anything runs, each
variant applied through the scenario's own checks, so a variant that cannot apply to a
scenario (pruning on, and no pruning model) is refused where it is written, naming both.
:meth:`Plan.finish` labels each run with its variant and repeat and judges it by its
scenario's checks, on the caller's side (a check that holds code or a model never travels).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from toolloop_lab._engine.config import AgentConfig
from toolloop_lab._support.escape import TEXT_CHARS, clip
from toolloop_lab._support.fields import shown
from toolloop_lab._support.pickling import quick_pickle
from toolloop_lab.checks._report import evaluate
from toolloop_lab.errors import ConfigurationError
from toolloop_lab.lab._checks import factory
from toolloop_lab.lab._record import ScenarioRun
from toolloop_lab.lab._scenario import ModelFactory, Scenario

_CONFIG_FIELDS: Final = frozenset(f.name for f in dataclasses.fields(AgentConfig))
_MODEL_TAKES: Final = (
    "a ScriptedModel, a ScriptedTurns or a zero-argument function returning a chat model"
)


def _said(value: Any) -> str:
    """A value as a variant's name says it (``prune_tools=('file_read',)``)."""
    if isinstance(value, tuple) and not value:
        return "()"
    return repr(value) if not callable(value) else getattr(value, "__name__", type(value).__name__)


@quick_pickle
@dataclass(frozen=True, slots=True)
class Variant:
    """One setting of a sweep: ``AgentConfig`` fields to change on every scenario, and
    optionally the model (or pruning model) to run it with instead.

    ``Variant(tool_max_rounds=3)`` or ``Variant({"prune_tools": ["file_read"]}, model=...)``;
    :meth:`grid` makes every combination of some fields' values, named by them.
    """

    config: Mapping[str, Any] = field(default_factory=dict)
    model: ModelFactory | None = None
    pruning_model: ModelFactory | None = None

    def __init__(
        self,
        config: Mapping[str, Any] | None = None,
        *,
        model: ModelFactory | None = None,
        pruning_model: ModelFactory | None = None,
        **changes: Any,
    ) -> None:
        given = dict(config or {})
        if not isinstance(config, Mapping | None):
            raise ConfigurationError(
                f"a variant's config is a dict of AgentConfig fields, got {shown(config)}",
                field="variants",
            )
        given.update(changes)
        for name in given:
            if name not in _CONFIG_FIELDS:
                raise ConfigurationError(
                    f"{name!r} is not an AgentConfig field; a variant changes "
                    f"{', '.join(sorted(_CONFIG_FIELDS))}, model and pruning_model",
                    field="variants",
                )
        try:  # each value checked now, by the config's own constraints
            checked = AgentConfig(**given)
        except ConfigurationError as exc:
            raise ConfigurationError(f"variant: {exc}", field="variants") from None
        for name, slot in (("model", model), ("pruning_model", pruning_model)):
            if slot is not None:
                factory(slot, name, field="variants", makes="chat model", takes=_MODEL_TAKES)
        object.__setattr__(self, "config", {k: getattr(checked, k) for k in given})
        object.__setattr__(self, "model", model)
        object.__setattr__(self, "pruning_model", pruning_model)

    @property
    def name(self) -> str:
        """The variant as its changes say it (``tool_max_rounds=3, streaming=True``)."""
        parts = [f"{k}={_said(v)}" for k, v in self.config.items()]
        for slot in ("model", "pruning_model"):
            value = getattr(self, slot)
            if value is not None:
                named = getattr(value, "model_name", None)
                parts.append(f"{slot}={named or _said(value)}")
        return ", ".join(parts) or "as written"

    @classmethod
    def grid(cls, **values: Iterable[Any]) -> dict[str, Variant]:
        """Every combination of the given fields' values, each a variant named by its
        values: ``Variant.grid(tool_max_rounds=[2, 5], streaming=[False, True])`` is four."""
        if not values:
            raise ConfigurationError(
                "Variant.grid takes fields and their values: grid(tool_max_rounds=[2, 5])",
                field="variants",
            )
        lists: dict[str, list[Any]] = {}
        for name, options in values.items():
            if isinstance(options, str | bytes) or not isinstance(options, Iterable):
                raise ConfigurationError(
                    f"Variant.grid: {name} takes a list of values, got {shown(options)}",
                    field="variants",
                )
            lists[name] = list(options)
            if not lists[name]:
                raise ConfigurationError(f"Variant.grid: {name} has no values", field="variants")
        made = [
            cls(dict(zip(lists, combo, strict=True)))
            for combo in itertools.product(*lists.values())
        ]
        return {v.name: v for v in made}

    def apply(self, scenario: Scenario) -> Scenario:
        """``scenario`` under this variant (its checks left out: they are judged where the
        sweep started), checked again as every scenario is."""
        changes: dict[str, Any] = {"checks": ()}
        if self.config:
            changes["config"] = dataclasses.replace(scenario.config, **self.config)
        if self.model is not None:
            changes["model"] = self.model
        if self.pruning_model is not None:
            changes["pruning_model"] = self.pruning_model
        return dataclasses.replace(scenario, **changes)


def variants_of(variants: Any) -> dict[str, Variant] | None:
    """``variants=`` as named :class:`Variant` values: a mapping of names to variants or to
    dicts of changes, or a list of them (named by their changes); ``None`` for none."""
    if variants is None:
        return None
    if isinstance(variants, Variant):
        variants = [variants]
    named: dict[str, Variant] = {}
    if isinstance(variants, Mapping):
        items: Iterable[tuple[str | None, Any]] = variants.items()
    elif isinstance(variants, str | bytes) or not isinstance(variants, Iterable):
        raise ConfigurationError(
            "variants takes a dict of name -> Variant (or dict of AgentConfig changes), a list "
            f"of them, or Variant.grid(...); got {shown(variants)}",
            field="variants",
        )
    else:
        items = ((None, v) for v in variants)
    for name, value in items:
        variant = _variant(value, name)
        key = variant.name if name is None else name
        if not isinstance(key, str) or not key.strip():
            raise ConfigurationError(
                f"a variant's name is non-empty text, got {shown(key)}", field="variants"
            )
        if key in named:
            raise ConfigurationError(f"two variants are named {key!r}", field="variants")
        named[key] = variant
    if not named:
        raise ConfigurationError("variants is empty: give at least one", field="variants")
    return named


def _variant(value: Any, name: str | None) -> Variant:
    if isinstance(value, Variant):
        return value
    if isinstance(value, Mapping):
        given = dict(value)
        model = given.pop("model", None)
        pruning = given.pop("pruning_model", None)
        try:
            return Variant(given, model=model, pruning_model=pruning)
        except ConfigurationError as exc:
            where = f"variant {name!r}: " if name else ""
            raise ConfigurationError(f"{where}{exc}", field="variants") from None
    raise ConfigurationError(
        f"a variant is a Variant or a dict of AgentConfig changes, got {shown(value)}",
        field="variants",
    )


def repeats_of(value: Any) -> int:
    """``repeats=`` as checked: a positive int."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigurationError(
            f"repeats is how many times each scenario runs under each variant (an int of at "
            f"least 1), got {shown(value)}",
            field="repeats",
        )
    return value


@dataclass(frozen=True, slots=True)
class Planned:
    """One run of a sweep: the scenario to run (variant applied, checks left out), and
    where it came from."""

    scenario: Scenario
    source: Scenario
    variant: str | None
    repeat: int


@dataclass(frozen=True, slots=True)
class Plan:
    """A sweep's runs, in order: each scenario, under each variant, each repeat."""

    runs: tuple[Planned, ...]

    @property
    def scenarios(self) -> tuple[Scenario, ...]:
        """What the runners run, in order."""
        return tuple(p.scenario for p in self.runs)

    def finish(self, records: Sequence[ScenarioRun]) -> tuple[ScenarioRun, ...]:
        """Each run labelled with its variant and repeat and judged by its checks."""
        return tuple(self._finished(self.runs[r.index], r) for r in records)

    @staticmethod
    def _finished(planned: Planned, record: ScenarioRun) -> ScenarioRun:
        passed, failed = judge(planned.source, record)
        return dataclasses.replace(
            record,
            variant=planned.variant,
            repeat=planned.repeat,
            passed=passed,
            failed_checks=failed,
        )


def judge(scenario: Scenario, record: ScenarioRun) -> tuple[bool | None, tuple[str, ...]]:
    """``(passed, failed checks)`` of ``record`` by ``scenario``'s checks: ``(None, ())``
    without checks; a run with no events (never built, its worker lost) fails every one."""
    checks = scenario.checks
    if not checks:
        return None, ()
    turns = record.turn_events()
    if not turns:
        said = clip(record.error_message or "the scenario never ran", TEXT_CHARS)
        return False, tuple(f"{c.describe()}: no run to judge ({said})" for c in checks)
    report = evaluate(list(turns[-1]), checks)
    failed = tuple(clip(f"{r.description}: seen {r.seen}", TEXT_CHARS) for r in report.failures)
    return report.passed, failed


def plan(scenarios: Sequence[Scenario], variants: Any = None, repeats: Any = 1) -> Plan:
    """The sweep's runs: each scenario under each variant (the scenario as written without
    variants), ``repeats`` times each; a variant that cannot apply to a scenario is refused
    here, before anything runs."""
    named = variants_of(variants)
    times = repeats_of(repeats)
    runs: list[Planned] = []
    for scenario in scenarios:
        if named is None:
            shipped = dataclasses.replace(scenario, checks=()) if scenario.checks else scenario
            runs.extend(Planned(shipped, scenario, None, r) for r in range(1, times + 1))
            continue
        for name, variant in named.items():
            try:
                applied = variant.apply(scenario)
            except ConfigurationError as exc:
                raise ConfigurationError(
                    f"variant {name!r} cannot run scenario {scenario.name!r}: {exc}",
                    field="variants",
                ) from None
            runs.extend(Planned(applied, scenario, name, r) for r in range(1, times + 1))
    return Plan(tuple(runs))
