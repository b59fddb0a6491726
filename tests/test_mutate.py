"""Planting mutants of the change (``evidence/mutate``), where a mutant's failure was raised
(``evidence/discriminate``), the names a change defines (``evidence/defined``) and what a
run's output says: on real source text, parsed and compiled. The verdict on the mutants
is ``gate/decide.py``'s (``tests/test_decide.py``)."""

from __future__ import annotations

from pytest_vgate.evidence.defined import added_modules, added_names, is_check_file, missing_defined
from pytest_vgate.evidence.discriminate import raised_in
from pytest_vgate.evidence.mutate import FileChange, definition_lines, plant, seed_of
from pytest_vgate.evidence.record import skipped_only

SHOP = '''\
def total(prices):
    """Sum of the prices."""
    return sum(prices)


def discount(amount: float, rate: float) -> float:
    if rate < 0 or rate > 1:
        raise ValueError("rate must be between 0 and 1")
    return round(amount * (1 - rate), 2)


def names():
    yield "a"
'''
ALL = frozenset(range(1, 14))


def shop(executed: frozenset[int] = ALL) -> FileChange:
    return FileChange("pkg/shop.py", SHOP, ALL, executed)


def test_extreme_mutants_come_first_and_keep_every_line_number() -> None:
    mutants = plant([shop()], seed=seed_of("g"), limit=50)
    extremes = [m for m in mutants if m.kind == "extreme"]
    assert [m.shown for m in extremes] == [
        "pkg/shop.py:3  body of total → return None",
        "pkg/shop.py:7  body of discount → return None",
        "pkg/shop.py:7  body of discount → return 0.0",  # from the annotation
        "pkg/shop.py:13  body of names → yield nothing",  # still a generator
    ]
    assert mutants[: len(extremes)] == extremes
    for mutant in mutants:
        assert mutant.text.count("\n") == SHOP.count("\n"), mutant.shown
        compile(mutant.text, "shop.py", "exec")
        assert mutant.text != SHOP
    gen = extremes[-1].text
    namespace: dict[str, object] = {}
    exec(compile(gen, "shop.py", "exec"), namespace)
    assert list(namespace["names"]()) == []  # type: ignore[operator]


def test_value_mutants_follow_the_documented_operators() -> None:
    mutants = plant([shop()], seed=seed_of("g"), limit=50)
    shown = {m.shown for m in mutants if m.kind == "value"}
    assert "pkg/shop.py:9  amount * (1 - rate) → amount / (1 - rate)" in shown
    assert "pkg/shop.py:9  1 - rate → 1 + rate" in shown
    assert "pkg/shop.py:9  2 → 3" in shown
    assert "pkg/shop.py:9  return round(amount * (1 - rate), 2) → return None" in shown
    # The same text as an extreme mutant is planted once.
    assert "pkg/shop.py:3  return sum(prices) → return None" not in shown
    assert "pkg/shop.py:13  'a' → ''" in shown
    # The guard's test is never mutated (it could only force the raise), nor its message.
    assert not [m for m in mutants if m.line in (7, 8) and m.kind == "value"]


def test_module_metadata_is_never_mutated() -> None:
    text = '__version__ = "1.2.0"\n__all__ = ["f"]\nLIMIT = 3\n'
    mutants = plant([FileChange("pkg/__init__.py", text, ALL, ALL)], seed=1, limit=50)
    assert [m.shown for m in mutants] == ["pkg/__init__.py:3  3 → 4"]


def test_the_choice_is_bounded_deterministic_and_seeded_by_the_gate() -> None:
    first = plant([shop()], seed=seed_of("gate-a"), limit=6)
    again = plant([shop()], seed=seed_of("gate-a"), limit=6)
    other = plant([shop()], seed=seed_of("gate-b"), limit=9)
    assert [m.shown for m in first] == [m.shown for m in again]
    assert len(first) == 6 and [m.kind for m in first[:4]] == ["extreme"] * 4
    values = [m for m in plant([shop()], seed=seed_of("gate-a"), limit=50) if m.kind == "value"]
    assert [m.shown for m in other[4:]] != [m.shown for m in values[:5]] or len(values) < 2
    lines = [m.line for m in values]
    distinct = len(set(lines))
    assert len(set(lines[:distinct])) == distinct  # one per line before a second on any
    assert plant([shop()], seed=1, limit=0) == []


def test_only_what_the_run_executed_is_mutated() -> None:
    # Only `total`'s body ran (and the `def` lines, at import): nothing of discount.
    mutants = plant([shop(frozenset({1, 3, 6}))], seed=1, limit=50)
    assert {m.function for m in mutants} == {"total"}
    assert plant([shop(frozenset({1, 6, 12}))], seed=1, limit=50) == []
    unparsable = FileChange("pkg/bad.py", "def f(:\n    return 1\n", ALL, ALL)
    assert plant([unparsable], seed=1, limit=50) == []


def test_def_and_class_lines_define_names() -> None:
    text = "import x\n\n@dec\ndef f(\n    a,\n):\n    return a\n\n\nclass C:\n    y = 1\n"
    assert definition_lines(text) == {3, 4, 5, 6, 10}
    assert definition_lines("def (") == frozenset()


def test_names_the_change_defines() -> None:
    base = (
        "def total(p):\n    return sum(p[1:])\n\n\nclass Cart:\n    def add(self):\n        pass\n"
    )
    head = base + "\n\ndef discount(a, r):\n    return a\n\n\nRATE = 1\n"
    head = head.replace("        pass\n", "        pass\n\n    def clear(self):\n        pass\n")
    assert added_names(base, head) == {"discount", "RATE", "Cart.clear", "clear"}
    assert added_names(None, "def f():\n    pass\n") == {"f"}
    assert added_names(base, "def (") == frozenset()
    assert added_modules("src/pkg/new.py") == {"src.pkg.new", "pkg.new", "new"}
    assert added_modules("pkg/sub/__init__.py") == {"pkg.sub", "sub"}
    assert added_modules("tests/test_new.py") == frozenset()  # a new test is not a feature
    defined = frozenset({"discount", "pkg.new"})
    for line in (
        "E   ImportError: cannot import name 'discount' from 'pkg.shop' (/b/pkg/shop.py)",
        "AttributeError: module 'pkg.shop' has no attribute 'discount'",
        "NameError: name 'discount' is not defined",
        "ModuleNotFoundError: No module named 'pkg.new'",
    ):
        assert missing_defined(f"noise\n{line}\n", defined), line
    # A typo, or a test that is not on the base, names nothing the change defines.
    assert not missing_defined(
        "AttributeError: module 'pkg.shop' has no attribute 'dicsount'", defined
    )
    assert not missing_defined("ERROR: file or directory not found: tests/test_new.py", defined)
    assert not missing_defined("ModuleNotFoundError: No module named 'tests.test_new'", defined)


def test_a_raise_inside_the_mutated_code_is_not_a_kill() -> None:
    traceback = (
        "Traceback (most recent call last):\n"
        '  File "<string>", line 1, in <module>\n'
        '  File "/tmp/copy/pkg/shop.py", line 9, in discount\n'
        "    return round(amount / (1 - rate), 2)\n"
        "ZeroDivisionError: float division by zero\n"
    )
    assert raised_in(traceback, "pkg/shop.py", (9, 9))
    assert not raised_in(traceback, "pkg/shop.py", (3, 3))  # raised elsewhere in the file
    assert raised_in("pkg/shop.py:9: ZeroDivisionError\n", "pkg/shop.py", (9, 9))
    # The check's own code failing on the value it got back: a kill.
    assert not raised_in("tests/test_shop.py:5: TypeError\n", "pkg/shop.py", (9, 9))
    assert not raised_in("pkg/shop.py:9: AssertionError\n", "pkg/shop.py", (9, 9))
    both = "pkg/shop.py:9: ZeroDivisionError\ntests/test_shop.py:5: AssertionError\n"
    assert not raised_in(both, "pkg/shop.py", (9, 9))
    assert not raised_in("1 failed in 0.01s\n", "pkg/shop.py", (9, 9))


def test_a_run_that_only_skipped() -> None:
    assert skipped_only("s    [100%]\n1 skipped in 0.01s\n") == ""
    reason = "SKIPPED [1] tests/test_x.py:3: needs discount\n===== 1 skipped in 0.01s =====\n"
    assert skipped_only(reason) == "tests/test_x.py:3: needs discount"
    assert skipped_only("1 skipped, 2 deselected in 0.01s\n") == ""
    assert skipped_only("Ran 1 test in 0.000s\n\nOK (skipped=1)\n") == ""
    # Something ran: not a skip.
    assert skipped_only(".s\n1 passed, 1 skipped in 0.02s\n") is None
    assert skipped_only("Ran 2 tests in 0.000s\n\nOK (skipped=1)\n") is None
    assert skipped_only("ok\n") is None


def test_a_verifier_module_is_the_check_only_as_the_gate_imports_it() -> None:
    """A verifier module is the check's own code (never mutated, never contamination) at
    its path from the gates root only: a verifier named like the product's last component
    (``shop`` beside ``pkg/shop.py``) must not turn the product into check code."""
    modules = frozenset({"verify_shop", "shop", "pkg.checks"})
    assert is_check_file("verify_shop.py", modules)
    assert is_check_file("pkg/checks.py", modules)
    assert is_check_file("pkg/checks/__init__.py", modules)
    assert not is_check_file("pkg/shop.py", modules)
    assert not is_check_file("src/pkg/checks.py", modules)  # not what the gate imports
    assert is_check_file("tests/test_shop.py")  # test code by name, whatever the gate
