"""Pull the examples out of Markdown pages so the suite can run them."""

from __future__ import annotations

import textwrap
from pathlib import Path

import yaml


def write(folder: Path, text: str, name: str = "gates.yaml") -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def fenced_blocks(page: Path, language: str) -> list[tuple[int, bool, str]]:
    """(line, valid, text) per fenced block; `<!-- invalid -->` above marks bad ones."""
    blocks: list[tuple[int, bool, str]] = []
    lines = page.read_text("utf-8").splitlines()
    index = 0
    while index < len(lines):
        if lines[index].strip() == f"```{language}":
            start = index
            body: list[str] = []
            index += 1
            while lines[index].strip() != "```":
                body.append(lines[index])
                index += 1
            invalid = start > 0 and lines[start - 1].strip() == "<!-- invalid -->"
            blocks.append((start + 1, not invalid, "\n".join(body) + "\n"))
        index += 1
    return blocks


def yaml_blocks(page: Path) -> list[tuple[int, bool, str]]:
    return fenced_blocks(page, "yaml")


def materialise(folder: Path, text: str) -> Path:
    """Write a docs example as gates.yaml and create the documents and folders it names."""
    data = yaml.safe_load(text)
    if isinstance(data, dict):
        for pattern in data.get("citations") or []:
            if isinstance(pattern, str) and not pattern.startswith("/"):
                name = pattern.replace("**/", "").replace("*", "example").replace("?", "x")
                write(folder, "see src/mod.py:1\n", name)
        if isinstance(data.get("root"), str):
            (folder / data["root"]).mkdir(parents=True, exist_ok=True)
    return write(folder, text)
