# ruff: noqa  (corpus source: written in the style of the library it models)
"""Version specifiers, in the manner of packaging.specifiers."""

from __future__ import annotations

import abc
import itertools
import re


class InvalidSpecifier(ValueError):
    """Raised when attempting to create a Specifier with an invalid specifier string."""


class BaseSpecifier(metaclass=abc.ABCMeta):
    @abc.abstractmethod
    def __str__(self) -> str:
        """Returns the str representation of this Specifier-like object."""

    @property
    @abc.abstractmethod
    def prereleases(self) -> bool | None:
        """Whether or not pre-releases as a whole are allowed."""

    @prereleases.setter
    def prereleases(self, value: bool) -> None:
        """Setter for prereleases."""


class Specifier(BaseSpecifier):
    _operator_regex_str = r"(?P<operator>(~=|==|!=|<=|>=|<|>|===))"
    _version_regex_str = r"(?P<version>[^,;\s)]*)"
    _regex = re.compile(r"^\s*" + _operator_regex_str + _version_regex_str + r"\s*$")

    _operators = {
        "~=": "compatible",
        "==": "equal",
        "!=": "not_equal",
        "<=": "less_than_equal",
        ">=": "greater_than_equal",
    }

    def __init__(self, spec: str = "", prereleases: bool | None = None) -> None:
        match = self._regex.search(spec)
        if not match:
            raise InvalidSpecifier(f"Invalid specifier: {spec!r}")
        self._spec = (match.group("operator").strip(), match.group("version").strip())
        self._prereleases = prereleases

    @property
    def prereleases(self) -> bool | None:
        # An explicit setting wins over what the version itself says.
        if self._prereleases is not None:
            return self._prereleases
        operator, version = self._spec
        if operator in ["==", ">=", "<=", "~=", "==="]:
            return "dev" in version or "rc" in version
        return False

    @prereleases.setter
    def prereleases(self, value: bool) -> None:
        self._prereleases = value

    @prereleases.deleter
    def prereleases(self) -> None:
        del self._prereleases

    @property
    def operator(self) -> str:
        return self._spec[0]

    @property
    def version(self) -> str:
        return self._spec[1]

    def __repr__(self) -> str:
        pre = f", prereleases={self.prereleases!r}" if self._prereleases is not None else ""
        return f"<{self.__class__.__name__}({str(self)!r}{pre})>"

    def __str__(self) -> str:
        return "{}{}".format(*self._spec)

    def __hash__(self) -> int:
        return hash(self._spec)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            try:
                other = self.__class__(str(other))
            except InvalidSpecifier:
                return NotImplemented
        elif not isinstance(other, self.__class__):
            return NotImplemented
        return self._spec == other._spec

    def _get_operator(self, op: str):
        operator_callable = getattr(self, f"_compare_{self._operators[op]}")
        return operator_callable

    def filter(self, iterable, prereleases=None):
        """Filter items in the given iterable, that match the specifier."""
        yielded = False
        found_prereleases = []
        for version in iterable:
            if "rc" in str(version) and not prereleases:
                found_prereleases.append(version)
                continue
            yielded = True
            yield version
        if not yielded and found_prereleases:
            yield from found_prereleases


def _pad_version(left: list[str], right: list[str]) -> tuple[list[str], list[str]]:
    left_split, right_split = [], []
    left_split.append(list(itertools.takewhile(lambda x: x.isdigit(), left)))
    right_split.append(list(itertools.takewhile(lambda x: x.isdigit(), right)))
    return left_split[0], right_split[0]
