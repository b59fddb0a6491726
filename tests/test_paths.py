"""``pytest_vgate.paths``: one way to show or key a path relative to a root."""

from __future__ import annotations

from pathlib import Path

from pytest_vgate.paths import relative, shown


def test_inside_the_root_is_posix_text_and_the_root_is_dot(tmp_path: Path) -> None:
    assert relative(tmp_path / "a" / "b.yaml", tmp_path) == "a/b.yaml"
    assert relative(tmp_path, tmp_path) == "."


def test_outside_the_root_is_none_unless_it_may_climb(tmp_path: Path) -> None:
    root = tmp_path / "root"
    assert relative(tmp_path / "x.yaml", root) is None
    assert relative(tmp_path / "rooted.yaml", root) is None  # a prefix is not a parent
    assert relative(tmp_path / "x.yaml", root, climb=True) == "../x.yaml"


def test_resolve_follows_links_into_the_root(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(root / "sub")
    assert relative(link, root) is None
    assert relative(link, root, resolve=True) == "sub"


def test_shown_falls_back_to_the_path_as_given(tmp_path: Path) -> None:
    assert shown(tmp_path / "g.yaml", tmp_path) == "g.yaml"
    assert shown(tmp_path / "g.yaml", tmp_path / "other") == str(tmp_path / "g.yaml")
