"""Tools from an object's plain methods and JSON-schema function docs (the OpenAI tools format).

A benchmark's backend (a file system, a ticket tracker) is usually a class with plain
methods and, beside it, a list of function docs: a name, a description and a JSON schema of
the parameters. :func:`tools_from_schema` turns the object and its docs into langchain-core
tools the loop dispatches like any other:

* the arguments are validated against the doc's schema before the method runs; a failure
  never reaches the method and comes back to the model as an error ``ToolMessage`` (reason
  ``invalid_arguments``) saying where and why;
* defaults the schema declares are filled in for missing arguments;
* positional-only parameters (``def mv(self, source, destination, /)``) are passed by
  position, the rest by name;
* a doc that does not fit its method (a property the method has no parameter for, a
  parameter without a default that the doc may leave out) is a ``ConfigurationError`` when
  the tools are built, not a failure on the model's first call.

The schema is checked the way ``jsonschema.validate`` checks it (the schema's own dialect,
the most relevant error first). :func:`argument_problem` is the one check of arguments
against any tool's schema: a person's argument edit at a pause
(``toolloop_lab._engine.interventions.check_args``) goes through it, and for these tools it is the
very check their calls get (schema, then the method's parameter names), so the two agree on
every call. Two things differ from ``jsonschema.validate``, so that no argument can stall
the process:

* ``pattern`` and ``patternProperties`` are matched by RE2 (linear time, no backtracking)
  instead of Python's ``re``, which holds the GIL through a catastrophic backtrack (a
  25-character argument against ``^(a+)+$`` takes a second, a 40-character one hours). A
  pattern RE2 cannot run (lookaround, backreferences) makes the doc a
  ``ConfigurationError`` when the tools are built; for other JSON-schema tools the check
  that needs it is refused (:class:`SchemaCheckError`), and so is ``patternProperties``
  under ``unevaluatedProperties``, which jsonschema matches with ``re`` itself. ``\\uXXXX``
  escapes are read as in JSON Schema's ECMA-262 dialect; a lone surrogate in an argument
  is matched as U+FFFD.
* arguments nested deeper than :data:`MAX_ARG_DEPTH` are refused before the check (the
  events could not keep them whole), and a schema whose ``$ref`` refers to itself without
  end is a :class:`SchemaCheckError`, not a ``RecursionError``.

The tools hold the object itself, so tools built from one object share its state: build
them inside a scenario's ``tools_factory`` to get one fresh backend per run.
"""

from __future__ import annotations

import copy
import functools
import inspect
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeAlias

import jsonschema
import re2  # type: ignore[import-untyped]
from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, PrivateAttr, ValidationError
from pydantic_core import PydanticCustomError

from toolloop_lab._support.fields import validation_text, where_message
from toolloop_lab._support.jsonsafe import is_mapping
from toolloop_lab.errors import ConfigurationError

FunctionDoc: TypeAlias = Mapping[str, Any]
"""``{"type": "function", "function": {"name", "description", "parameters"}}`` (the OpenAI
tools format) or the inner ``{"name", "description", "parameters"}`` alone."""

_NAME: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""Tool names every provider accepts (OpenAI's rule, the strictest)."""

_EMPTY_PARAMETERS: Final[Mapping[str, Any]] = {"type": "object", "properties": {}}

MAX_ARG_DEPTH: Final = 32
"""How many levels arguments may nest below the arguments object. Deeper ones are refused
before any check (which would recurse): the events keep only 64 levels whole, counted from
an event's top, and a call's arguments sit a few levels down."""


@dataclass(frozen=True, slots=True)
class ArgumentProblem:
    """Why arguments do not fit a JSON schema: where (a path into the arguments; empty for
    the arguments as a whole) and what."""

    path: tuple[str | int, ...]
    message: str

    def __str__(self) -> str:
        return where_message(self.path, self.message, whole="(arguments)")


class SchemaCheckError(jsonschema.SchemaError):
    """A schema that cannot check arguments safely: its ``$ref`` refers to itself without
    end, or it has a pattern RE2 cannot run (see the module doc). A ``SchemaError``, so a
    caller that handles invalid schemas handles these too."""


def json_schema_problem(schema: Mapping[str, Any], args: Any) -> ArgumentProblem | None:
    """The most relevant reason ``args`` do not fit ``schema`` (jsonschema's own pick, as
    ``jsonschema.validate`` reports it), or ``None`` when they fit.

    Raises ``jsonschema.SchemaError`` when the schema itself is not valid JSON Schema, and
    :class:`SchemaCheckError` when it cannot check ``args`` safely.
    """
    return _best_problem(_validator(schema), args)


def _validator(schema: Mapping[str, Any]) -> Any:
    """A validator of the schema's own JSON Schema dialect, the schema checked first, that
    matches patterns with RE2."""
    plain = dict(schema)
    validator_class = jsonschema.validators.validator_for(plain)
    validator_class.check_schema(plain)
    keywords = {key for key, _ in _keywords(plain)}
    if {"patternProperties", "unevaluatedProperties"} <= keywords:
        raise SchemaCheckError(
            "patternProperties under unevaluatedProperties cannot be matched in linear time "
            "(jsonschema matches them with Python's backtracking re)"
        )
    return _linear(validator_class)(plain)


def _best_problem(validator: Any, args: Any) -> ArgumentProblem | None:
    too_deep = depth_problem(args)
    if too_deep is not None:
        return too_deep
    try:
        error = jsonschema.exceptions.best_match(validator.iter_errors(args))
    except RecursionError:
        raise SchemaCheckError(
            "the schema refers to itself without end (a $ref that never reaches a value), "
            "so no arguments can be checked against it"
        ) from None
    if error is None:
        return None
    return ArgumentProblem(tuple(error.absolute_path), error.message)


def argument_problem(tool: BaseTool, args: Mapping[str, Any]) -> str | None:
    """Why ``args`` (a JSON object) are no valid input for ``tool``, in words, or ``None``:
    the one check of arguments against a tool's schema.

    A tool of :func:`tools_from_schema` checks as it checks the model's calls (its doc's
    schema, then its method's parameter names); other JSON-schema tools (MCP, OpenAPI,
    ``StructuredTool`` with a dict schema) by :func:`json_schema_problem` (a schema that
    cannot check them is refused in words); pydantic schemas validate as the tool itself
    would, and names the tool does not take are refused (pydantic would drop them without
    a word). Arguments nested too deep are refused first.
    """
    too_deep = depth_problem(args)
    if too_deep is not None:
        return str(too_deep)
    binding = tool._binding if isinstance(tool, _DocTool) else None
    schema = tool.tool_call_schema
    try:
        if binding is not None:
            problem = binding.problem(args)
            return None if problem is None else str(problem)
        if isinstance(schema, dict):
            problem = json_schema_problem(schema, args)
            return None if problem is None else str(problem)
    except SchemaCheckError as exc:
        return f"the tool's own schema cannot check arguments: {exc.message}"
    except jsonschema.SchemaError as exc:
        return f"the tool's own schema is not valid JSON schema ({exc.message})"
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return _model_problem(schema, args)
    return None


def _model_problem(schema: type[BaseModel], args: Mapping[str, Any]) -> str | None:
    unknown = _unknown_names(schema, args)
    if unknown:
        return unknown
    try:
        schema.model_validate(args)
    except ValidationError as exc:
        return validation_text(exc, whole="(arguments)", every=True)
    return None


def _unknown_names(schema: type[BaseModel], args: Mapping[str, Any]) -> str | None:
    """Names the tool does not take. Pydantic would drop them without a word, so a typo in
    an optional argument's name would run the tool as if it had not been edited."""
    if schema.model_config.get("extra") == "allow":
        return None
    properties = set(schema.model_json_schema().get("properties", {}))
    known = set(properties)
    for name, info in schema.model_fields.items():
        known.add(name)
        if info.alias:
            known.add(info.alias)
    unknown = sorted(k for k in args if k not in known)
    if not unknown:
        return None
    takes = ", ".join(sorted(properties)) or "none"
    return f"unknown argument(s) {', '.join(unknown)} (the tool takes: {takes})"


def depth_problem(args: Any) -> ArgumentProblem | None:
    """Why ``args`` nest too deep to check or record (more than :data:`MAX_ARG_DEPTH`
    levels of objects and arrays), or ``None``. Walked without recursion, so any depth (a
    cycle too) is safe to ask about before anything recursive, ``json.dumps`` or a schema
    check, sees the arguments."""
    stack: list[tuple[Any, int]] = [(args, 0)]
    while stack:
        item, depth = stack.pop()
        if is_mapping(item):
            children: Any = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        if depth > MAX_ARG_DEPTH:
            return ArgumentProblem((), f"nested more than {MAX_ARG_DEPTH} levels deep")
        stack.extend((child, depth + 1) for child in children)
    return None


# -- patterns, matched in linear time ----------------------------------------------------

_RE2_OPTIONS: Final = re2.Options()
_RE2_OPTIONS.log_errors = False  # a refused pattern is reported once, as our own error

_ECMA_ESCAPE: Final = re.compile(
    r"\\\\|\\u([dD][89abAB][0-9a-fA-F]{2})\\u([dD][c-fC-F][0-9a-fA-F]{2})|\\u([0-9a-fA-F]{4})"
)
"""An escaped backslash, or a ``\\uXXXX`` escape (a surrogate pair as one), which RE2 spells
``\\x{...}``. Linear: no nested repetition."""

_SURROGATE: Final = re.compile("[\ud800-\udfff]")

_NAMED_SCHEMAS: Final = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"}
)
"""Keywords whose value maps names to subschemas."""

_DATA: Final = frozenset({"const", "enum", "default", "examples", "required"})
"""Keywords whose value is data, not a schema."""


def _keywords(schema: Any) -> Iterator[tuple[str, Any]]:
    """Every (keyword, value) of every subschema of ``schema``, found without recursion."""
    stack: list[Any] = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
            continue
        if not isinstance(node, Mapping):
            continue
        for key, value in node.items():
            yield key, value
            if key in _DATA:
                continue
            if key in _NAMED_SCHEMAS and isinstance(value, Mapping):
                stack.extend(value.values())
            else:
                stack.append(value)


def _patterns(schema: Mapping[str, Any]) -> Iterator[str]:
    """Every regular expression in ``schema``: ``pattern`` values, ``patternProperties``
    names."""
    for key, value in _keywords(schema):
        if key == "pattern" and isinstance(value, str):
            yield value
        elif key == "patternProperties" and isinstance(value, Mapping):
            yield from (name for name in value if isinstance(name, str))


def _re2_syntax(pattern: str) -> str:
    def escape(match: re.Match[str]) -> str:
        high, low, single = match.groups()
        if single is not None:
            return f"\\x{{{single}}}"
        if high is not None:
            code = 0x10000 + ((int(high, 16) - 0xD800) << 10) + (int(low, 16) - 0xDC00)
            return f"\\x{{{code:X}}}"
        return match.group(0)  # an escaped backslash stays as it is

    return _ECMA_ESCAPE.sub(escape, pattern)


@functools.lru_cache(maxsize=512)
def _program(pattern: str) -> Any:
    """``pattern`` compiled by RE2; a pattern RE2 cannot run is a :class:`SchemaCheckError`."""
    try:
        return re2.compile(_re2_syntax(pattern), _RE2_OPTIONS)
    except re2.error as exc:
        why = exc.args[0] if exc.args else "unsupported"
        why = why.decode("utf-8", "replace") if isinstance(why, bytes) else str(why)
        raise SchemaCheckError(
            f"pattern {pattern!r} cannot be matched in linear time ({why}); RE2 runs no "
            "lookaround and no backreferences"
        ) from None


def _matches(pattern: str, text: str) -> bool:
    """``re.search(pattern, text)`` as JSON Schema means it, in linear time."""
    program = _program(pattern)
    try:
        return program.search(text) is not None
    except UnicodeEncodeError:  # a lone surrogate: UTF-8 cannot carry it, RE2 reads UTF-8
        return program.search(_SURROGATE.sub("\ufffd", text)) is not None


def _pattern(validator: Any, pattern: Any, instance: Any, _schema: Any) -> Iterator[Any]:
    if validator.is_type(instance, "string") and not _matches(pattern, instance):
        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: Any, instance: Any, _schema: Any
) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if _matches(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(original: Any) -> Any:
    """jsonschema's ``additionalProperties``, but names are matched against
    ``patternProperties`` by RE2."""

    def check(validator: Any, allowed: Any, instance: Any, schema: Any) -> Iterator[Any]:
        patterns = schema.get("patternProperties")
        if not patterns or not validator.is_type(instance, "object"):
            yield from original(validator, allowed, instance, schema)
            return
        known = schema.get("properties", {})
        extras = [
            k for k in instance if k not in known and not any(_matches(p, k) for p in patterns)
        ]
        if validator.is_type(allowed, "object"):
            for extra in extras:
                yield from validator.descend(instance[extra], allowed, path=extra)
        elif not allowed and extras:
            names = ", ".join(repr(k) for k in sorted(extras))
            verb = "does" if len(extras) == 1 else "do"
            regexes = ", ".join(repr(p) for p in sorted(patterns))
            yield jsonschema.ValidationError(
                f"{names} {verb} not match any of the regexes: {regexes}"
            )

    return check


@functools.cache
def _linear(validator_class: Any) -> Any:
    """``validator_class`` with every pattern matched by RE2 (made once per dialect)."""
    return jsonschema.validators.extend(  # type: ignore[no-untyped-call]
        validator_class,
        {
            "pattern": _pattern,
            "patternProperties": _pattern_properties,
            "additionalProperties": _additional_properties(
                validator_class.VALIDATORS["additionalProperties"]
            ),
        },
    )


@dataclass(frozen=True, slots=True)
class FunctionSpec:
    """One function doc, checked: its name, description and parameter schema."""

    name: str
    description: str
    parameters: Mapping[str, Any]


def function_spec(doc: FunctionDoc) -> FunctionSpec:
    """Read one doc in either accepted shape (see :data:`FunctionDoc`); a doc that is not
    one raises ``ConfigurationError`` (``field`` names the part that is wrong)."""
    if not isinstance(doc, Mapping):
        raise ConfigurationError(
            f"a function doc must be a mapping, got {type(doc).__name__}", field="functions"
        )
    inner = doc.get("function") if doc.get("type") == "function" else doc
    if not isinstance(inner, Mapping):
        raise ConfigurationError("a tools-format doc needs a 'function' object", field="functions")
    name = inner.get("name")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ConfigurationError(
            f"a function name must be 1-64 letters, digits, '_' or '-', got {name!r:.80}",
            field="name",
        )
    description = inner.get("description", "")
    if not isinstance(description, str):
        raise ConfigurationError(f"{name}: the description must be text", field="description")
    parameters = inner.get("parameters", _EMPTY_PARAMETERS)
    if not isinstance(parameters, Mapping) or parameters.get("type") != "object":
        raise ConfigurationError(
            f"{name}: parameters must be a JSON schema of type 'object'", field="parameters"
        )
    try:
        _validator(parameters)
        for pattern in _patterns(parameters):
            _program(pattern)
    except SchemaCheckError as exc:
        raise ConfigurationError(f"{name}: {exc.message}", field="parameters") from None
    except jsonschema.SchemaError as exc:
        raise ConfigurationError(
            f"{name}: parameters are not valid JSON Schema: {exc.message}", field="parameters"
        ) from None
    return FunctionSpec(name, description, copy.deepcopy(dict(parameters)))


@dataclass(frozen=True, slots=True)
class _Binding:
    """How a doc's arguments become a call of its method."""

    spec: FunctionSpec
    validator: Any
    """The parameters' validator, built (and the schema checked) once."""
    method: Callable[..., Any]
    positional: tuple[inspect.Parameter, ...]
    """Positional-only parameters, in order: passed by position."""
    accepted: frozenset[str] | None
    """Names the method takes by keyword or position; ``None`` when it takes ``**kwargs``."""
    defaults: Mapping[str, Any]
    """Schema defaults, by argument name."""

    def invalid(self, problem: ArgumentProblem, args: Any) -> ValidationError:
        """The error for arguments that do not fit: pydantic's ``ValidationError``, which the
        dispatcher reports as ``invalid_arguments`` (``where: what``), like a pydantic tool's."""
        error = PydanticCustomError("json_schema", "{message}", {"message": problem.message})
        return ValidationError.from_exception_data(
            self.spec.name, [{"type": error, "loc": problem.path, "input": args}]
        )

    def problem(self, args: Mapping[str, Any]) -> ArgumentProblem | None:
        """Why ``args`` do not fit: the doc's schema, then the method's parameter names."""
        problem = _best_problem(self.validator, dict(args))
        if problem is None and self.accepted is not None:
            unknown = sorted(set(args) - self.accepted)
            if unknown:
                problem = ArgumentProblem((unknown[0],), "is not an argument of this function")
        return problem

    def arguments(self, args: Mapping[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        """Validate ``args``, fill in defaults, and split them into positional and keyword
        arguments of the method; raises :meth:`invalid` when they do not fit."""
        problem = self.problem(args)
        if problem is not None:
            raise self.invalid(problem, args)
        named = {k: copy.deepcopy(v) for k, v in self.defaults.items() if k not in args}
        named.update(args)
        positional = [named.pop(p.name) if p.name in named else p.default for p in self.positional]
        return positional, named


def _bind(backend: object, spec: FunctionSpec) -> _Binding:
    name = spec.name
    method = None if name.startswith("_") else getattr(backend, name, None)
    if method is None or not callable(method):
        raise ConfigurationError(
            f"{type(backend).__name__} has no public method {name!r} for its doc", field="functions"
        )
    try:
        params = list(inspect.signature(method).parameters.values())
    except (TypeError, ValueError) as exc:
        raise ConfigurationError(
            f"{name}: no signature to map ({exc})", field="functions"
        ) from None
    kinds = inspect.Parameter
    takes_any = any(p.kind is kinds.VAR_KEYWORD for p in params)
    named = {p.name: p for p in params if p.kind not in (kinds.VAR_POSITIONAL, kinds.VAR_KEYWORD)}
    properties: Mapping[str, Any] = spec.parameters.get("properties", {})
    required = set(spec.parameters.get("required", []))
    for prop in properties:
        if prop not in named and not takes_any:
            raise ConfigurationError(
                f"{name}: the doc's parameter {prop!r} is not a parameter of the method",
                field="parameters",
            )
    defaults = {
        k: v["default"] for k, v in properties.items() if isinstance(v, Mapping) and "default" in v
    }
    for param in named.values():
        if param.default is kinds.empty and param.name not in required | set(defaults):
            raise ConfigurationError(
                f"{name}: the method needs {param.name!r}, which the doc neither requires "
                "nor gives a default",
                field="parameters",
            )
    return _Binding(
        spec,
        _validator(spec.parameters),
        method,
        tuple(p for p in params if p.kind is kinds.POSITIONAL_ONLY),
        None if takes_any else frozenset(named),
        defaults,
    )


class _DocTool(StructuredTool):
    """A tool of a function doc: it keeps its binding, so :func:`argument_problem` checks
    a person's edit exactly as the tool checks the model's call."""

    _binding: _Binding | None = PrivateAttr(default=None)


def _tool(binding: _Binding) -> BaseTool:
    method = binding.method
    body: dict[str, Any]
    if inspect.iscoroutinefunction(method):

        async def acall(**kwargs: Any) -> Any:
            positional, named = binding.arguments(kwargs)
            return await method(*positional, **named)

        body = {"coroutine": acall}
    else:

        def call(**kwargs: Any) -> Any:
            positional, named = binding.arguments(kwargs)
            return method(*positional, **named)

        body = {"func": call}
    spec = binding.spec
    tool = _DocTool.from_function(
        name=spec.name,
        description=spec.description or spec.name,
        args_schema=dict(spec.parameters),
        **body,
    )
    tool._binding = binding
    return tool


def tools_from_schema(backend: object, functions: Iterable[FunctionDoc]) -> list[BaseTool]:
    """One validated tool per doc in ``functions``, each calling ``backend``'s method of the
    same name (see the module doc). Async methods become async tools.

    Raises ``ConfigurationError`` for a doc that is malformed, names no public method of
    ``backend``, repeats a name, or does not fit its method's signature.
    """
    specs = [function_spec(doc) for doc in functions]
    names = [s.name for s in specs]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ConfigurationError(
            f"function names must be unique; repeated: {', '.join(repeated)}", field="functions"
        )
    return [_tool(_bind(backend, spec)) for spec in specs]
