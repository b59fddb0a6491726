"""The one dataclass <-> JSON pair: round trips, and strict decoding that fails closed."""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal, NamedTuple

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_vgate.jsonable import Jsonable, JsonShapeError, from_json, rounded, to_json


class Color(str, enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.Enum):
    LOW = 1
    HIGH = 2


@dataclass(frozen=True)
class Inner:
    name: str
    color: Color
    level: Level | None = None


@dataclass(frozen=True)
class Outer:
    text: str
    count: int
    ratio: float
    flag: bool
    maybe: int | None
    path: Path
    items: tuple[str, ...]
    pairs: list[int]
    table: dict[str, float]
    inner: Inner
    inners: tuple[Inner, ...]
    either: int | str
    fixed: tuple[int, str]
    tag: Literal["a", "b"] = "a"
    extra: Mapping[str, Any] = field(default_factory=dict)


JSON_FLOATS = st.floats(allow_nan=False, allow_infinity=False)
JSON_LEAVES = st.none() | st.booleans() | st.integers() | JSON_FLOATS | st.text()
JSON_VALUES = st.recursive(
    JSON_LEAVES,
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(), kids, max_size=3),
    max_leaves=8,
)
INNERS = st.builds(
    Inner, name=st.text(), color=st.sampled_from(Color), level=st.none() | st.sampled_from(Level)
)
OUTERS = st.builds(
    Outer,
    text=st.text(),
    count=st.integers(),
    ratio=JSON_FLOATS,
    flag=st.booleans(),
    maybe=st.none() | st.integers(),
    path=st.text(st.characters(blacklist_characters="\0"), min_size=1).map(Path),
    items=st.lists(st.text()).map(tuple),
    pairs=st.lists(st.integers()),
    table=st.dictionaries(st.text(), JSON_FLOATS),
    inner=INNERS,
    inners=st.lists(INNERS, max_size=3).map(tuple),
    either=st.integers() | st.text(),
    fixed=st.tuples(st.integers(), st.text()),
    tag=st.sampled_from(["a", "b"]),
    extra=st.dictionaries(st.text(), JSON_VALUES, max_size=3),
)


@given(OUTERS)
def test_round_trip_through_json_text(value: Outer) -> None:
    encoded = to_json(value)
    text = json.dumps(encoded, allow_nan=False)
    assert from_json(Outer, json.loads(text)) == value
    assert to_json(from_json(Outer, json.loads(text))) == encoded


def test_encoding_is_plain_primitives_in_field_order() -> None:
    value = Inner("x", Color.GREEN, Level.HIGH)
    encoded = to_json(value)
    assert encoded == {"name": "x", "color": "green", "level": 2}
    assert list(encoded) == ["name", "color", "level"]
    assert type(encoded["color"]) is str


def test_a_field_with_rounded_metadata_is_encoded_rounded() -> None:
    @dataclass(frozen=True)
    class Timed:
        duration: float = field(default=0.0, metadata=rounded(3))

    assert to_json(Timed(1.23456789)) == {"duration": 1.235}


def test_a_missing_key_with_a_default_takes_the_default() -> None:
    assert from_json(Inner, {"name": "x", "color": "red"}) == Inner("x", Color.RED)


def _outer_json() -> dict[str, Any]:
    return to_json(
        Outer(
            text="t",
            count=1,
            ratio=0.5,
            flag=True,
            maybe=None,
            path=Path("a/b"),
            items=("i",),
            pairs=[1],
            table={"k": 1.0},
            inner=Inner("n", Color.RED),
            inners=(),
            either=3,
            fixed=(1, "x"),
        )
    )


@pytest.mark.parametrize(
    ("change", "where", "says"),
    [
        ({"surprise": 1}, "Outer", "unknown key 'surprise'"),
        ({"count": None}, "Outer.count", "expected an integer, got null"),
        ({"count": True}, "Outer.count", "expected an integer, got true"),
        ({"count": 1.5}, "Outer.count", "expected an integer"),
        ({"flag": 1}, "Outer.flag", "expected true or false"),
        ({"ratio": "0.5"}, "Outer.ratio", "expected a number"),
        ({"text": 3}, "Outer.text", "expected a string"),
        ({"items": "abc"}, "Outer.items", "expected a JSON array"),
        ({"items": ["a", 1]}, "Outer.items[1]", "expected a string"),
        ({"table": []}, "Outer.table", "expected a JSON object"),
        ({"table": {"k": "v"}}, "Outer.table['k']", "expected a number"),
        ({"inner": {"name": "n", "color": "blue"}}, "Outer.inner.color", "'red', 'green'"),
        ({"inner": {"color": "red"}}, "Outer.inner.name", "missing"),
        ({"inner": "n"}, "Outer.inner", "expected a JSON object"),
        ({"either": None}, "Outer.either", "expected an integer"),
        ({"fixed": [1]}, "Outer.fixed", "expected 2 items"),
        ({"tag": "c"}, "Outer.tag", "expected one of"),
        ({"maybe": "1"}, "Outer.maybe", "expected an integer"),
    ],
)
def test_a_value_of_the_wrong_shape_is_refused_naming_class_and_field(
    change: dict[str, Any], where: str, says: str
) -> None:
    data = {**_outer_json(), **change}
    with pytest.raises(JsonShapeError) as info:
        from_json(Outer, data)
    assert info.value.where == where
    assert says in str(info.value)
    assert isinstance(info.value, ValueError)  # old callers catch ValueError


def test_a_missing_required_key_is_refused() -> None:
    data = _outer_json()
    del data["count"]
    with pytest.raises(JsonShapeError, match=r"^Outer\.count: missing$"):
        from_json(Outer, data)


def test_a_non_object_is_refused() -> None:
    with pytest.raises(JsonShapeError, match=r"^Inner: expected a JSON object, got an array"):
        from_json(Inner, ["x", "red"])


def test_to_json_refuses_what_json_cannot_carry() -> None:
    @dataclass(frozen=True)
    class Holder:
        value: Any

    with pytest.raises(TypeError, match="not JSON-able"):
        to_json(Holder(object()))
    with pytest.raises(TypeError, match="keys are strings"):
        to_json(Holder({1: "x"}))
    with pytest.raises(TypeError, match="dataclass instance"):
        to_json({"a": 1})


class Stat(NamedTuple):
    dev: int
    size: int


@dataclass(frozen=True)
class Versioned(Jsonable):
    __json_head__: ClassVar[tuple[str, ...]] = ("v",)
    __json_tail__: ClassVar[tuple[str, ...]] = ("label",)
    v: ClassVar[int] = 3

    name: str
    stat: Stat | None = None

    @property
    def label(self) -> str:
        return f"<{self.name}>"


def test_head_and_tail_keys_are_written_around_the_fields_and_skipped_on_reading() -> None:
    value = Versioned("x", Stat(1, 2))
    encoded = value.to_dict()
    assert list(encoded.items()) == [
        ("v", 3),
        ("name", "x"),
        ("stat", [1, 2]),
        ("label", "<x>"),
    ]
    assert Versioned.from_dict(encoded) == value
    assert Versioned.from_dict({"name": "x"}) == Versioned("x")
    with pytest.raises(JsonShapeError, match=r"Versioned\.stat\[1\]: expected an integer"):
        Versioned.from_dict({"name": "x", "stat": [1, "2"]})


@dataclass(frozen=True)
class Env:
    """JSON is not its fields: it keeps its own pair."""

    pairs: tuple[tuple[str, str], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"set": dict(self.pairs)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Env:
        return cls(tuple(data["set"].items()))


@dataclass(frozen=True)
class Holds(Jsonable):
    env: Env
    envs: tuple[Env, ...] = ()


def test_a_field_type_with_its_own_pair_is_encoded_and_decoded_by_it() -> None:
    value = Holds(Env((("A", "1"),)), (Env(), Env((("B", "2"),))))
    encoded = value.to_dict()
    assert encoded == {"env": {"set": {"A": "1"}}, "envs": [{"set": {}}, {"set": {"B": "2"}}]}
    assert Holds.from_dict(json.loads(json.dumps(encoded))) == value
    with pytest.raises(JsonShapeError, match=r"^Holds\.env: KeyError"):
        Holds.from_dict({"env": {}})
