"""One JSON encoding for the plugin's frozen value types, and ``StrEnum``, the base of every
closed vocabulary.

``to_json`` turns a dataclass into JSON-able primitives (fields in order, enums by value,
tuples as lists, ``Path`` as str); ``from_json`` is its inverse, driven by the field
annotations, and strict, because what it reads may come from another process or an edited
file: an unknown or missing key or a wrong type raises :class:`JsonShapeError` naming the
field. ``metadata=rounded(6)`` rounds a float; ``__json_head__``/``__json_tail__`` name
read-only attributes encoded around the fields. A type whose JSON is not its fields keeps
its own ``to_dict``/``from_dict``, which encode and decode it as a field.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, NoReturn, Protocol, TypeAlias, TypeVar

T = TypeVar("T")
J = TypeVar("J", bound="Jsonable")

JsonScalar: TypeAlias = "bool | int | float | str | None"
JsonValue: TypeAlias = "JsonScalar | list[JsonValue] | dict[str, JsonValue]"
"""A JSON value as ``json.loads`` returns it and ``to_json`` makes it."""
JsonDict: TypeAlias = "dict[str, JsonValue]"
"""A JSON object: what ``to_dict()`` returns, and what crosses xdist, a pipe or the ledger."""
Decoder: TypeAlias = Callable[[object, str], object]
"""Decodes one JSON value (at a path, for messages) into a value of its field's type."""

_ROUND = "pytest_vgate.jsonable.round"


class StrEnum(str, enum.Enum):
    """The base of every closed vocabulary (modes, causes, gate types, ...): a member is its
    string value (equal to it, printed as it, encoded as it), the public name users read in
    junit and the JSON report. (``enum.StrEnum`` is Python 3.11+.)"""

    def __str__(self) -> str:
        return str(self.value)


class JsonShapeError(ValueError):
    """A JSON value does not have the shape of the type it was decoded into."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"{where}: {message}")
        self.where = where


def json_objects(value: object) -> list[JsonDict]:
    """The items of a JSON array of objects (a tuple of dataclasses, encoded)."""
    items = [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []
    if not isinstance(value, list) or len(items) != len(value):
        raise TypeError(f"expected a JSON array of objects, got {value!r:.80}")
    return items


def as_object(value: object) -> Mapping[str, object]:
    """``value`` if it is a JSON object, else an empty one: how a reader of a JSON document
    (a report, a record) takes a part that may be absent or null."""
    return value if isinstance(value, Mapping) else {}


def as_array(value: object) -> Sequence[object]:
    """``value`` if it is a JSON array, else an empty one (see :func:`as_object`)."""
    return value if isinstance(value, (list, tuple)) else ()


def rounded(digits: int) -> dict[str, int]:
    """Field metadata: encode this float rounded to ``digits`` decimals."""
    return {_ROUND: digits}


@dataclasses.dataclass(frozen=True)
class _Field:
    name: str
    hint: object
    required: bool
    round_to: int | None


_FIELDS: dict[type, tuple[_Field, ...]] = {}


class Jsonable:
    """Mixin for a frozen dataclass: ``to_dict``/``from_dict`` are :func:`to_json`/
    :func:`from_json` (so a type's JSON shape is its fields, declared once)."""

    __json_head__: ClassVar[tuple[str, ...]] = ()
    __json_tail__: ClassVar[tuple[str, ...]] = ()

    def to_dict(self) -> JsonDict:
        return to_json(self)

    @classmethod
    def from_dict(cls: type[J], data: object) -> J:
        return from_json(cls, data)


def _fields(cls: type) -> tuple[_Field, ...]:
    cached = _FIELDS.get(cls)
    if cached is None:
        hints = typing.get_type_hints(cls)
        cached = tuple(
            _Field(
                name=f.name,
                hint=hints[f.name],
                required=(
                    f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
                ),
                round_to=f.metadata.get(_ROUND),
            )
            for f in dataclasses.fields(cls)
            if f.init
        )
        _FIELDS[cls] = cached
    return cached


def to_json(obj: object) -> JsonDict:
    """The JSON object of a dataclass instance (only JSON-able primitives inside)."""
    cls = type(obj)
    plan = _PLANS.get(cls)
    if plan is None:
        if not dataclasses.is_dataclass(obj) or isinstance(obj, type):
            raise TypeError(f"to_json() takes a dataclass instance, not {cls.__name__}")
        plan = _plan(cls)
    head, fields, tail = plan
    out: JsonDict = {name: _encode(getattr(obj, name)) for name in head}
    for name, round_to in fields:
        value = getattr(obj, name)
        if type(value) not in _PLAIN:
            value = _encode(value)
        if round_to is not None and isinstance(value, float):
            value = round(value, round_to)
        out[name] = value
    for name in tail:
        out[name] = _encode(getattr(obj, name))
    return out


# Per dataclass, worked out once: (head names, (field name, digits to round to), tail).
_PLANS: dict[type, tuple[tuple[str, ...], tuple[tuple[str, int | None], ...], tuple[str, ...]]] = {}
# Types whose values are their own JSON (exactly these: a str enum is not one of them).
_PLAIN = frozenset({type(None), bool, int, float, str})


def _plan(
    cls: type,
) -> tuple[tuple[str, ...], tuple[tuple[str, int | None], ...], tuple[str, ...]]:
    plan = (
        tuple(getattr(cls, "__json_head__", ())),
        tuple((f.name, f.round_to) for f in _fields(cls)),
        tuple(getattr(cls, "__json_tail__", ())),
    )
    _PLANS[cls] = plan
    return plan


def _encode(value: object) -> JsonValue:
    cls = type(value)
    if cls in _PLAIN:  # exactly the JSON scalars' types
        return typing.cast(JsonScalar, value)
    encoder = _ENCODERS.get(cls)
    if encoder is None:
        encoder = _encoder(cls)
    return encoder(value)


def _encoder(cls: type) -> Callable[[Any], JsonValue]:
    """How values of ``cls`` encode (decided once per type: the order of the checks is
    the order in which a value's kinds take precedence)."""
    encoder: Callable[[Any], JsonValue]
    if issubclass(cls, enum.Enum):
        encoder = _encode_enum
    elif issubclass(cls, (bool, int, float, str)):
        encoder = _encode_plain_subclass
    elif _own_codec(cls) is not None:
        encoder = _encode_own
    elif dataclasses.is_dataclass(cls):
        encoder = to_json
    elif issubclass(cls, Path):
        encoder = str
    elif issubclass(cls, Mapping):
        encoder = _encode_mapping
    elif issubclass(cls, (list, tuple)):
        encoder = _encode_sequence
    else:
        encoder = _not_jsonable
    _ENCODERS[cls] = encoder
    return encoder


_ENCODERS: dict[type, Callable[[Any], JsonValue]] = {}
"""Per type, its encoder: each takes values of that type only."""


def _encode_enum(value: enum.Enum) -> JsonValue:
    return _encode(value.value)


def _encode_plain_subclass(value: JsonScalar) -> JsonValue:
    return value


class _OwnCodec(Protocol):
    def to_dict(self) -> JsonValue: ...


def _encode_own(value: _OwnCodec) -> JsonValue:
    return value.to_dict()


def _encode_mapping(value: Mapping[object, object]) -> JsonDict:
    out: JsonDict = {}
    for key, item in value.items():
        if not isinstance(key, str):
            raise TypeError(f"JSON object keys are strings, not {key!r}")
        out[key] = _encode(item)
    return out


def _encode_sequence(value: Sequence[object]) -> list[JsonValue]:
    return [_encode(item) for item in value]


def _not_jsonable(value: object) -> NoReturn:
    raise TypeError(f"{type(value).__name__} is not JSON-able: {value!r}")


def _own_codec(cls: type) -> Callable[[object], object] | None:
    """The ``from_dict`` of a class that encodes itself (not through :class:`Jsonable`)."""
    to_dict = getattr(cls, "to_dict", None)
    from_dict = getattr(cls, "from_dict", None)
    if to_dict is None or from_dict is None or to_dict is Jsonable.to_dict:
        return None
    return typing.cast("Callable[[object], object]", from_dict)


def from_json(cls: type[T], data: object) -> T:
    """Rebuild a ``cls`` from its JSON object; :class:`JsonShapeError` if it does not fit."""
    return typing.cast(T, _decode_dataclass(cls, data, cls.__name__))


def _decode_dataclass(cls: type, data: object, where: str) -> object:
    if not isinstance(data, Mapping):
        raise JsonShapeError(where, f"expected a JSON object, got {_kind(data)}")
    shape = _SHAPES.get(cls) or _shape(cls)
    if not shape.keys.issuperset(data):
        unknown = sorted(str(k) for k in data if k not in shape.keys)
        raise JsonShapeError(where, f"unknown key {unknown[0]!r} (keys: {shape.names})")
    kwargs: dict[str, object] = {}
    top = where == cls.__name__  # the usual case: the field paths are made already
    for name, decoder, required, path in shape.fields:
        if name in data:
            kwargs[name] = decoder(data[name], path if top else f"{where}.{name}")
        elif required:
            raise JsonShapeError(f"{where}.{name}", "missing")
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as exc:  # __post_init__ validation
        if isinstance(exc, JsonShapeError):
            raise
        raise JsonShapeError(where, str(exc)) from exc


class _Shape(typing.NamedTuple):
    """How a dataclass decodes, worked out once: its keys (fields and derived names), the
    fields' names for messages, and (name, decoder, required, ``Class.name``) per field."""

    keys: frozenset[str]
    names: str
    fields: tuple[tuple[str, Decoder, bool, str], ...]


_SHAPES: dict[type, _Shape] = {}


def _shape(cls: type) -> _Shape:
    fields = _fields(cls)
    derived = (*getattr(cls, "__json_head__", ()), *getattr(cls, "__json_tail__", ()))
    shape = _Shape(
        keys=frozenset((*(f.name for f in fields), *derived)),
        names=", ".join(f.name for f in fields),
        fields=tuple(
            (f.name, _decoder(f.hint), f.required, f"{cls.__name__}.{f.name}") for f in fields
        ),
    )
    _SHAPES[cls] = shape
    return shape


def _decode(hint: object, data: object, where: str) -> object:
    return _decoder(hint)(data, where)


_DECODERS: dict[object, Decoder] = {}


def _decoder(hint: object) -> Decoder:
    """How values of ``hint`` decode, worked out once per hint."""
    decoder = _DECODERS.get(hint)
    if decoder is None:
        decoder = _DECODERS[hint] = _make_decoder(hint)
    return decoder


def _make_decoder(hint: object) -> Decoder:
    if hint is Any:
        return _as_is
    origin = typing.get_origin(hint)
    if origin is typing.Union or origin is types.UnionType:
        arms = typing.get_args(hint)
        if len(arms) == 2 and type(None) in arms:  # X | None
            arm = arms[0] if arms[1] is type(None) else arms[1]
            return functools.partial(_decode_optional, _decoder(arm))
        return functools.partial(_decode_union, arms)
    if origin is typing.Literal:
        return functools.partial(_decode_literal, typing.get_args(hint))
    args = typing.get_args(hint)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:  # tuple[X, ...]
        return functools.partial(_decode_tuple_of, _decoder(args[0]))
    if origin is not None:
        return functools.partial(_decode_generic, origin, args)
    if hint is type(None):
        return _null
    if isinstance(hint, type):
        if issubclass(hint, enum.Enum):
            return functools.partial(_decode_enum, hint)
        own = _own_codec(hint)
        if own is not None:
            return functools.partial(_decode_own, own)
        if dataclasses.is_dataclass(hint):
            return functools.partial(_decode_dataclass, hint)
        if issubclass(hint, tuple) and hasattr(hint, "_fields"):  # a NamedTuple
            return functools.partial(_decode_named_tuple, hint)
        scalar = _SCALARS.get(hint)
        if scalar is not None:
            return scalar
    return functools.partial(_cannot_decode, hint)


def _as_is(data: object, where: str) -> object:
    return data


def _null(data: object, where: str) -> None:
    if data is None:
        return None
    raise JsonShapeError(where, f"expected null, got {_kind(data)}")


def _decode_literal(values: tuple[object, ...], data: object, where: str) -> object:
    if data in values and not isinstance(data, bool):
        return data
    raise JsonShapeError(where, f"expected one of {values}, got {data!r}")


def _decode_enum(hint: type[enum.Enum], data: object, where: str) -> enum.Enum:
    try:
        return hint(data)
    except ValueError:
        names = ", ".join(repr(m.value) for m in hint)
        raise JsonShapeError(where, f"expected one of {names}, got {data!r}") from None


def _decode_own(own: Callable[[object], object], data: object, where: str) -> object:
    try:
        return own(data)
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, JsonShapeError):
            raise
        raise JsonShapeError(where, f"{type(exc).__name__}: {exc}") from exc


def _decode_named_tuple(hint: Any, data: object, where: str) -> Any:
    args = tuple(typing.get_type_hints(hint)[name] for name in hint._fields)
    return hint(*_decode_items(tuple, args, data, where))


def _cannot_decode(hint: object, data: object, where: str) -> NoReturn:
    raise TypeError(f"{where}: from_json() cannot decode the type {hint!r}")


def _decode_optional(decoder: Decoder, data: object, where: str) -> object:
    return None if data is None else decoder(data, where)


def _decode_tuple_of(decoder: Decoder, data: object, where: str) -> tuple[object, ...]:
    if not isinstance(data, (list, tuple)):
        raise JsonShapeError(where, f"expected a JSON array, got {_kind(data)}")
    return tuple([decoder(item, f"{where}[{i}]") for i, item in enumerate(data)])


def _decode_union(arms: Sequence[object], data: object, where: str) -> object:
    if data is None and type(None) in arms:
        return None
    errors: list[str] = []
    for arm in arms:
        if arm is type(None):
            continue
        try:
            return _decode(arm, data, where)
        except JsonShapeError as exc:
            errors.append(str(exc).removeprefix(f"{where}: "))
    raise JsonShapeError(where, " or ".join(errors) if errors else f"got {_kind(data)}")


def _decode_generic(origin: object, args: tuple[object, ...], data: object, where: str) -> object:
    if origin in (dict, Mapping):
        if not isinstance(data, Mapping):
            raise JsonShapeError(where, f"expected a JSON object, got {_kind(data)}")
        value_hint = args[1] if len(args) == 2 else Any
        out: dict[str, object] = {}
        for key, item in data.items():
            if not isinstance(key, str):
                raise JsonShapeError(where, f"object keys are strings, not {key!r}")
            out[key] = _decode(value_hint, item, f"{where}[{key!r}]")
        return out
    if origin in (tuple, list, Sequence):
        items = _decode_items(origin, args, data, where)
        return items if origin is list else tuple(items)
    raise TypeError(f"{where}: from_json() cannot decode the type {origin!r}")


def _decode_items(
    origin: object, args: tuple[object, ...], data: object, where: str
) -> list[object]:
    if not isinstance(data, (list, tuple)):
        raise JsonShapeError(where, f"expected a JSON array, got {_kind(data)}")
    if origin is tuple and args:  # tuple[X, Y]; tuple[X, ...] is _decode_tuple_of's
        if len(args) != len(data):
            raise JsonShapeError(where, f"expected {len(args)} items, got {len(data)}")
        hints: Sequence[object] = args
    else:
        hints = [args[0] if args else Any] * len(data)
    pairs = enumerate(zip(hints, data, strict=True))
    return [_decode(h, item, f"{where}[{i}]") for i, (h, item) in pairs]


def _str(data: object, where: str) -> str:
    if isinstance(data, str):
        return data
    raise JsonShapeError(where, f"expected a string, got {_kind(data)}")


def _int(data: object, where: str) -> int:
    if isinstance(data, int) and not isinstance(data, bool):
        return data
    raise JsonShapeError(where, f"expected an integer, got {_kind(data)}")


def _float(data: object, where: str) -> float:
    if isinstance(data, (int, float)) and not isinstance(data, bool):
        return float(data)
    raise JsonShapeError(where, f"expected a number, got {_kind(data)}")


def _bool(data: object, where: str) -> bool:
    if isinstance(data, bool):
        return data
    raise JsonShapeError(where, f"expected true or false, got {_kind(data)}")


def _path(data: object, where: str) -> Path:
    return Path(_str(data, where))


_SCALARS: dict[type, Decoder] = {
    str: _str,
    int: _int,
    float: _float,
    bool: _bool,
    Path: _path,
}


def _kind(data: object) -> str:
    if data is None:
        return "null"
    if isinstance(data, bool):
        return "true" if data else "false"
    if isinstance(data, (int, float)):
        return f"the number {data!r}"
    if isinstance(data, str):
        return f"the string {data[:40]!r}"
    if isinstance(data, Mapping):
        return "an object"
    if isinstance(data, (list, tuple)):
        return "an array"
    return type(data).__name__
