"""A hand-labelled corpus of citations as PR answers write them, over three libraries'
release diffs: humanize 4.7.0 -> 4.8.0, toolz 0.12.0 -> 0.12.1, click 8.0.1 -> 8.0.2.

The cited files are the new release's, shipped in ``tests/data/release_corpus`` as
``NAME.py.src`` (so that neither pytest nor the linters take them for ours; licenses and
provenance in ``tests/data/README.md``) and laid out under a root per library as in the
project's repository. Each row is one line of an answer, its true status, the true
location when it is corrected, the word its description gets, and why, as read by hand
from the file. True claims at their lines are ``verified``: a description whose words the
syntax cannot decide is ``not-judged``, never a failure. ``python
tests/helpers/citation_release_corpus.py --write-docs`` rewrites the table in
``docs/citations.md``.
"""

from __future__ import annotations

import shutil
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data" / "release_corpus"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "citations.md"
STATUSES = ("verified", "corrected", "dropped", "fabricated", "unsupported")
LAYOUT = {  # library -> {shipped file: path in the project's repository}
    "humanize": {f: f"src/humanize/{f}" for f in ("time.py", "i18n.py", "number.py")},
    "toolz": {
        "_signatures.py": "toolz/_signatures.py",
        "itertoolz.py": "toolz/itertoolz.py",
        "test_itertoolz.py": "toolz/tests/test_itertoolz.py",
    },
    "click": {
        f: f"src/click/{f}"
        for f in [
            "__init__.py",
            "core.py",
            "types.py",
            "shell_completion.py",
            "termui.py",
            "globals.py",
            "_termui_impl.py",
            "decorators.py",
        ]
    },
}


@dataclass(frozen=True)
class Row:
    library: str
    text: str  # the answer's line
    status: str
    corrected_to: str | None
    description: str | None  # vgate_description; None when the location failed first
    why: str


V, C, D, F, U = STATUSES
SHOWN, CONTRA, NOTJ = "shown", "contradicted", "not-judged"
H, T, K = "humanize", "toolz", "click"
HT, HI, HN = "src/humanize/time.py", "src/humanize/i18n.py", "src/humanize/number.py"
TS, TI, TT = "toolz/_signatures.py", "toolz/itertoolz.py", "toolz/tests/test_itertoolz.py"
KC, KT, KS = "src/click/core.py", "src/click/types.py", "src/click/shell_completion.py"
KM, KG, KI = "src/click/termui.py", "src/click/globals.py", "src/click/_termui_impl.py"
KD = "src/click/decorators.py"

ROWS: tuple[Row, ...] = (
    # --- humanize 4.7.0 -> 4.8.0: aware datetimes in naturaltime, the hu_HU separators --
    Row(H, f"- `naturaltime` now converts both arguments first ({HT}:249-250).", V, None, NOTJ,
        "lines 249-250 call _convert_aware_datetime on value and when, inside naturaltime"),
    Row(H, f"- {HT}:249 — `value` is passed through `_convert_aware_datetime`", V, None, NOTJ,
        "line 249 assigns value from the call"),
    Row(H, f"- {HT}:250 — `when` is converted the same way", V, None, NOTJ,
        "line 250: when = _convert_aware_datetime(when)"),
    Row(H, f"- {HT}:250 — calls `_convert_aware_datetime` on `when`", V, None, SHOWN,
        "a call on the line"),
    Row(H, f"- {HT}:252 — `now` falls back to `_now()` when no `when` is given", V, None,
        NOTJ, "now = when or _now()"),
    Row(H, f"- {HT}:270 — `_convert_aware_datetime` is defined here", V, None, SHOWN,
        "its def line"),
    Row(H, f"- {HT}:270-276 — the new helper `_convert_aware_datetime`", V, None, NOTJ,
        "the whole function"),
    Row(H, f"- {HT}:273 — `_convert_aware_datetime` turns an aware datetime into a naive "
        "one and passes anything else through", C, f"{HT}:270", NOTJ,
        "its docstring line: never code; its definition is 3 lines up"),
    Row(H, f"- {HT}:274 — only values with a `tzinfo` are converted", V, None, NOTJ,
        "the isinstance/tzinfo test"),
    Row(H, f"- {HT}:275 — `fromtimestamp` rebuilds the datetime without its zone", V, None,
        NOTJ, "value = dt.datetime.fromtimestamp(value.timestamp())"),
    Row(H, f"- {HT}:276 — `_convert_aware_datetime` returns the value", V, None, SHOWN,
        "return value"),
    Row(H, f"- {HT}:276 — `_convert_aware_datetime` returns `None` for naive values", V,
        None, SHOWN, "wrong (it returns the value), but `return value` returns a name that "
        "may be None: the syntax shows the return, not the value"),
    Row(H, f"- {HT}:15 — imports `Any` for the helper's return type", V, None, SHOWN,
        "from typing import Any"),
    Row(H, f"- {HT}:15 — `Any` is imported from `typing`", V, None, SHOWN, "the import"),
    Row(H, f"- {HT}:17 — `Any` is imported from `typing`", C, f"{HT}:15", SHOWN,
        "drift of 2: line 17 imports _gettext"),
    Row(H, f"- {HT}:267 — `naturaltime` returns `ago % delta` as a string", V, None, SHOWN,
        "return str(ago % delta)"),
    Row(H, f"- {HT}:265 — `naturaltime` returns \"now\" for a moment", V, None, SHOWN,
        "return _('now'): the return is shown; its value is a call"),
    Row(H, f"- {HT}:256 — `naturaltime` returns `str(value)` when there is no date", V, None,
        SHOWN, "return str(value)"),
    Row(H, f"- {HT}:262 — `naturaldelta` formats the delta", V, None, NOTJ,
        "delta = naturaldelta(delta, months, minimum_unit)"),
    Row(H, f"- {HT}:259 — the tense comes from comparing `date` with `now`", V, None, SHOWN,
        "future = date > now"),
    Row(H, f"- {HT}:244 — `_convert_aware_datetime` keeps naive datetimes", C, f"{HT}:249",
        NOTJ, "line 244 is naturaltime's docstring; the nearest use is the call on 249"),
    Row(H, f"- {HT}:280 — `_convert_aware_datetime` is the new helper", C, f"{HT}:270", NOTJ,
        "line 280 is naturalday's docstring; the helper's def is 10 lines up"),
    Row(H, f"- {HT}:612 — `_convert_aware_datetime` handles timezones", C, f"{HT}:270", NOTJ,
        "far away; the only definition in the file"),
    Row(H, f"- {HT}:900 — `_convert_aware_datetime` strips the zone", C, f"{HT}:270", NOTJ,
        "past the end of the 614-line file; found: a fabrication sign, corrected"),
    Row(H, f"- {HT}:901 — `_to_naive` converts aware datetimes", F, None, None,
        "past the end, and _to_naive is nowhere"),
    Row(H, f"- {HT}:249 — `_to_naive` is called on the value", D, None, None,
        "no _to_naive anywhere in the file"),
    Row(H, "- src/humanize/times.py:249 — `naturaltime` converts aware datetimes", F, None,
        None, "no file times.py anywhere"),
    Row(H, "- humanize/time.py:270 — `_convert_aware_datetime` is added", C, f"{HT}:270", NOTJ,
        "the path lacks src/; the basename search finds the one time.py holding it"),
    Row(H, f"- {HT}:47 — `_now` returns the current local time", V, None, SHOWN,
        "def _now, its body returns"),
    Row(H, f"- {HT}:48 — `_now` returns `None`", V, None, SHOWN,
        "wrong, but it returns a call's value: the syntax cannot say it is not None"),
    Row(H, f"- {HT}:129 — `naturaldelta` raises `ValueError` for an unsupported minimum "
        "unit", V, None, SHOWN, "raise ValueError(msg)"),
    Row(H, f"- {HT}:129 — `naturaldelta` raises `TypeError` for a bad unit", U, None, CONTRA,
        "the line raises ValueError, not a TypeError"),
    Row(H, f"- {HT}:129 — `naturaldelta` raises an `ArithmeticError`", U, None, CONTRA,
        "ValueError is no ArithmeticError"),
    Row(H, f"- {HT}:428 — `_suitable_minimum_unit` raises `Exception`", V, None, SHOWN,
        "ValueError is an Exception"),
    Row(H, f"- {HI}:22 — `hu_HU` uses a space as thousands separator", V, None, NOTJ,
        "the dict entry \"hu_HU\": \" \""),
    Row(H, f"- {HI}:22 — now maps \"hu_HU\" to a space", V, None, SHOWN, "\" \" is a space"),
    Row(H, f"- {HI}:22 — now maps \"hu_HU\" to a comma", U, None, CONTRA,
        "line 22 maps hu_HU to a space in the thousands table"),
    Row(H, f"- {HI}:30 — now maps \"hu_HU\" to a comma", V, None, SHOWN,
        "the decimal table: \"hu_HU\": \",\""),
    Row(H, f"- {HI}:30 — maps \"hu_HU\" to a dot for decimals", U, None, CONTRA,
        "the decimal separator for hu_HU is a comma"),
    Row(H, f"- {HI}:19 — now maps \"fr_FR\" to a comma", U, None, CONTRA,
        "fr_FR's thousands separator is a space; it has no decimal entry"),
    Row(H, f"- {HI}:19 — `fr_FR` keeps its space separator", V, None, NOTJ, "\"fr_FR\": \" \""),
    Row(H, f"- {HI}:17 — `_THOUSANDS_SEPARATOR` gains an entry for Hungarian", V, None, NOTJ,
        "the table's assignment line"),
    Row(H, f"- {HI}:26-31 — `_DECIMAL_SEPARATOR` now has four locales", V, None, NOTJ,
        "the whole table"),
    Row(H, f"- {HI}:27 — `_DECIMAL_SEPARATOR` maps \"de_DE\" to a comma", V, None, SHOWN,
        "de_DE: \",\" inside the table"),
    Row(H, f"- {HI}:40 — `_DECIMAL_SEPARATOR` is keyed by locale", C, f"{HI}:26", NOTJ,
        "line 40 is in _get_default_locale_path; the table is defined at 26"),
    Row(H, f"- {HI}:177 — `thousands_separator` defaults to a comma", V, None, NOTJ,
        "sep = \",\"; 'defaults to' a value: the subject is the function, not assigned"),
    Row(H, f"- {HI}:190 — `decimal_separator` falls back to a dot", V, None, NOTJ,
        "sep = \".\""),
    Row(H, f"- {HI}:190 — `sep` is set to \".\" when the locale has no entry", V, None, SHOWN,
        "sep = \".\""),
    Row(H, f"- {HI}:190 — `sep` is set to \",\" when the locale has no entry", U, None,
        CONTRA, "the decimal fallback is a dot"),
    Row(H, f"- {HI}:73 — `activate` raises an `Exception` without a locale path", V, None,
        SHOWN, "raise Exception(msg)"),
    Row(H, f"- {HI}:8 — `decimal_separator` is exported", V, None, NOTJ,
        "named as a string in __all__"),
    Row(H, f"- {HI}:8 — `__all__` lists the separator getters", V, None, NOTJ, "__all__ = [...]"),
    Row(H, f"- {HN}:16 — imports `thousands_separator` and `decimal_separator`", V, None,
        SHOWN, "from .i18n import decimal_separator, thousands_separator"),
    Row(H, f"- {HN}:146 — `intcomma` reads the separator for the active locale", V, None,
        NOTJ, "thousands_sep = thousands_separator() inside intcomma"),
    Row(H, f"- {HN}:366 — folds a 1/1 fraction into the whole number in `fractional`", V,
        None, NOTJ, "return f'{whole_number:.0f}' inside fractional"),
    Row(H, f"- {HN}:363 — `fractional` compares the denominator with 1", V, None, SHOWN,
        "denominator == 1"),
    Row(H, f"- {HN}:363 — `fractional` compares the denominator with 10", U, None, CONTRA,
        "the comparison is with 1"),
    Row(H, f"- {HN}:32 — `_format_not_finite` returns \"NaN\" for a NaN", V, None, SHOWN,
        "return \"NaN\""),
    Row(H, f"- {HN}:32 — `_format_not_finite` returns \"nan\"", U, None, CONTRA,
        "the literal is 'NaN'"),
    Row(H, f"- {HN}:82 — `ordinal` is now keyed by gender", V, None, NOTJ,
        "if gender == \"male\": inside ordinal"),
    Row(H, f"- {HN}:82 — `ordinal` compares `gender` with \"male\"", V, None, SHOWN,
        "gender == \"male\""),
    Row(H, f"- {HN}:108 — `ordinal` special-cases 11, 12 and 13", V, None, NOTJ,
        "value % 100 in (11, 12, 13)"),
    Row(H, f"- [the female suffixes]({HN}#L96-L107) of `ordinal`", V, None, NOTJ,
        "the else branch with the female table"),
    Row(H, f"- [`ordinal`]({HN}#L40) takes a `gender` argument", V, None, NOTJ, "def ordinal"),
    Row(H, f"- [`ordinal`]({HN}#L44) takes a `gender` argument", C, f"{HN}:40", NOTJ,
        "drift of 4 into the docstring"),
    Row(H, f"- {HN}:315 — the signature of `fractional`", V, None, SHOWN, "def fractional"),
    Row(H, f"- {HN}:320 — the signature of `fractional`", C, f"{HN}:315", SHOWN,
        "line 320 is inside fractional's docstring; its def is at 315"),
    Row(H, f"- {HN}:371 — `fractional` returns the mixed form", V, None, SHOWN,
        "the last return"),
    # --- toolz 0.12.0 -> 0.12.1: pairwise and product in the itertools registry ---------
    Row(T, f"- {TS}:312 — `pairwise` is registered with a one-argument signature", V, None,
        NOTJ, "pairwise=[ as a keyword of dict(...)"),
    Row(T, f"- {TS}:312-313 — `pairwise` takes a single iterable", V, None, NOTJ,
        "pairwise=[lambda iterable: None]"),
    Row(T, f"- {TS}:316 — `product` moves into the main itertools table", V, None, NOTJ,
        "product=[ inside module_info[itertools] = dict(...)"),
    Row(T, f"- {TS}:316-317 — `product` keeps its keyword-only `repeat`", V, None, NOTJ,
        "(0, lambda *iterables: None, ('repeat',))"),
    Row(T, f"- {TS}:277 — `module_info` for itertools is one dict again", V, None, NOTJ,
        "module_info[itertools] = dict("),
    Row(T, f"- {TS}:38-39 — the comment on `keyword_only_args` loses its typo", V, None, NOTJ,
        "the name is only ever in comments here; line 38 names it"),
    Row(T, f"- {TS}:39 — the comment fixes the typo in `keyword_only_args`", C, f"{TS}:38",
        NOTJ, "the typo was on 39, but the name is on 38: one line off"),
    Row(T, f"- {TS}:330 — `product` is added to the registry", C, f"{TS}:316", NOTJ,
        "line 330 is blank; product is 14 lines up"),
    Row(T, f"- {TS}:325 — `pairwise` is registered here", C, f"{TS}:312", NOTJ,
        "line 325 is tee's lambda; pairwise is 13 lines up"),
    Row(T, f"- {TS}:312 — `product` is registered here", C, f"{TS}:316", NOTJ,
        "the line registers pairwise; product is 4 lines down"),
    Row(T, f"- {TS}:661 — `create_signature_registry` reads every module's table", V, None,
        NOTJ, "its def line"),
    Row(T, f"- {TS}:668 — `signatures` is filled per builtin", V, None, NOTJ,
        "signatures[getattr(module, name)] = new_sigs"),
    Row(T, f"- {TS}:658 — `signatures` starts empty", V, None, NOTJ, "signatures = {}"),
    Row(T, f"- {TS}:658 — `signatures` defaults to `None`", U, None, CONTRA,
        "it is set to the literal {}"),
    Row(T, f"- {TS}:682 — `check_valid` returns `True` when the call fits", V, None, SHOWN,
        "return True"),
    Row(T, f"- {TS}:684 — `check_valid` returns `True` on a TypeError", U, None, CONTRA,
        "the line returns False"),
    Row(T, f"- {TS}:690 — `_is_valid_args` returns `None` for unknown builtins", V, None,
        SHOWN, "return None"),
    Row(T, f"- {TS}:690 — `_is_valid_args` returns `False` for unknown builtins", U, None,
        CONTRA, "the cited return returns None"),
    Row(T, f"- {TS}:2000 — `pairwise` gets its signature", C, f"{TS}:312", NOTJ,
        "past the end of the file; pairwise is found once"),
    Row(T, f"- {TS}:2001 — `batched` is registered", F, None, None,
        "past the end; batched is nowhere"),
    Row(T, f"- {TS}:312 — `batched` is registered", D, None, None, "batched is nowhere"),
    Row(T, "- toolz/signatures.py:312 — `pairwise` is registered", F, None, None,
        "no file signatures.py"),
    Row(T, f"- {TI}:276 — `isiterable` is defined here", V, None, SHOWN, "def isiterable"),
    Row(T, f"- {TI}:288 — `isiterable` returns `True` when `iter` works", V, None, SHOWN,
        "return True"),
    Row(T, f"- {TI}:290 — `isiterable` returns `False` on `TypeError`", V, None, SHOWN,
        "return False"),
    Row(T, f"- {TI}:290 — `isiterable` returns `True` on `TypeError`", U, None, CONTRA,
        "the line returns False"),
    Row(T, f"- {TI}:287 — `isiterable` calls `iter` on its argument", V, None, SHOWN,
        "iter(x)"),
    Row(T, f"- {TI}:287 — `isiterable` yields each item", U, None, CONTRA,
        "no yield in isiterable, none near that holds it"),
    Row(T, f"- {TI}:276-290 — `isiterable` treats `__iter__ = None` as not iterable", V,
        None, NOTJ, "the whole function; what iter() does is not syntax"),
    Row(T, f"- {TI}:280 — `isiterable` is defined here", C, f"{TI}:276", SHOWN,
        "inside its docstring"),
    Row(T, f"- {TT}:108 — `test_isiterable` covers the new cases", V, None, NOTJ,
        "def test_isiterable"),
    Row(T, f"- {TT}:111 — `IterIterable` defines `__iter__`", V, None, SHOWN,
        "class IterIterable: def __iter__"),
    Row(T, f"- {TT}:113 — `__iter__` returns an iterator over three letters", V, None, SHOWN,
        "return iter([...])"),
    Row(T, f"- {TT}:115 — `GetItemIterable` only has `__getitem__`", V, None, NOTJ,
        "class GetItemIterable"),
    Row(T, f"- {TT}:122 — `NotIterable` sets `__iter__` to `None`", V, None, SHOWN,
        "__iter__ = None inside NotIterable"),
    Row(T, f"- {TT}:122 — `NotIterable` sets `__iter__` to `False`", U, None, CONTRA,
        "__iter__ is set to None"),
    Row(T, f"- {TT}:124 — `NotIterableEvenWithGetItem` sets `__iter__` to `None` but keeps "
        "`__getitem__`", V, None, SHOWN, "its class line: the class sets __iter__ = None"),
    Row(T, f"- {TT}:132 — `test_isiterable` asserts an `IterIterable` is iterable", V, None,
        SHOWN, "assert isiterable(IterIterable()) is True"),
    Row(T, f"- {TT}:136 — `test_isiterable` asserts the getitem class is not iterable", V,
        None, SHOWN, "assert ... is False"),
    Row(T, f"- {TT}:108 — `test_isiterable` checks that it raises `TypeError`", U, None,
        CONTRA, "the test asserts nothing raises"),
    Row(T, f"- {TT}:108 — `test_isiterable` checks that nothing raises", V, None, SHOWN,
        "no raise, no pytest.raises"),
    Row(T, f"- {TT}:139 — `test_isiterable` asserts five cases", C, f"{TT}:108", SHOWN,
        "line 139 is test_isdistinct; test_isiterable is defined 31 lines up, the only one"),
    Row(T, f"- {TT}:135 — `NotIterable` instances are not iterable", V, None, NOTJ,
        "assert isiterable(NotIterable()) is False"),
    Row(T, f"- {TT}:141 — `isdistinct` finds the duplicate", V, None, NOTJ,
        "assert isdistinct([1, 2, 1]) is False"),
    Row(T, f"- {TT}:999 — `test_isiterable` grows", C, f"{TT}:108", NOTJ,
        "past the end; found once"),
    Row(T, f"- {TT}:131 — `isiterable` accepts a string", V, None, NOTJ,
        "assert isiterable('abc') is True"),
    Row(T, f"- {TT}:109 — `__getitem__` makes an object iterable", C, f"{TT}:116", NOTJ,
        "a comment line; the nearest definition of __getitem__ is at 116 (the next at 127)"),
    # --- click 8.0.1 -> 8.0.2 --------------------------------------------------------------
    Row(K, "- `__version__` is bumped to 8.0.2 (src/click/__init__.py:75)", V, None, SHOWN,
        "__version__ = \"8.0.2\""),
    Row(K, "- src/click/__init__.py:75 — `__version__` is bumped to 8.0.3", U, None, CONTRA,
        "the version is 8.0.2"),
    Row(K, "- src/click/__init__.py:75 — `__version__` is bumped from 8.0.1 to 8.0.2", V,
        None, SHOWN, "the new value is shown"),
    Row(K, "- src/click/__init__.py:74 — `__version__` is bumped to 8.0.2", C,
        "src/click/__init__.py:75", SHOWN, "drift of 1: line 74 is blank"),
    Row(K, "- src/click/__init__.py:120 — `__version__` is 8.0.2", C,
        "src/click/__init__.py:75", NOTJ, "past the end of the 75-line file; found"),
    Row(K, f"- {KC}:1122 — shell completion now ends with `sys.exit(rv)`", V, None, NOTJ,
        "sys.exit(rv)"),
    Row(K, f"- {KC}:1122 — calls `sys.exit` with the completion result", V, None, SHOWN,
        "a call"),
    Row(K, f"- {KC}:1121 — `shell_complete` is imported lazily", C, f"{KC}:1119", SHOWN,
        "line 1121 calls it; the import is 2 lines up"),
    Row(K, f"- {KC}:1119 — `shell_complete` is imported lazily", V, None, SHOWN,
        "from .shell_completion import shell_complete"),
    Row(K, f"- {KC}:1125 — `_fast_exit` is removed in favour of `sys.exit`", C, f"{KC}:1122",
        NOTJ, "_fast_exit is gone; the next entity, sys.exit, is 3 lines up"),
    Row(K, f"- {KC}:1064 — `main` raises `Abort` from None on EOF", V, None, SHOWN,
        "raise Abort() from None inside main"),
    Row(K, f"- {KC}:1064 — `main` raises `KeyboardInterrupt` on EOF", V, None, SHOWN,
        "wrong (it raises Abort), but Abort's bases are in another module: undecided"),
    Row(K, f"- {KC}:2213 — `get_default` only calls a callable default when asked", V, None,
        SHOWN, "if call and callable(value): a call"),
    Row(K, f"- {KC}:2216 — `get_default` returns the default without casting", V, None,
        SHOWN, "return value inside Parameter.get_default"),
    Row(K, f"- {KC}:2210 — `get_default` falls back to `self.default`", V, None, NOTJ,
        "if value is None: value = self.default"),
    Row(K, f"- {KC}:2195 — type casting is dropped from `get_default`", C, f"{KC}:2185", NOTJ,
        "a docstring line (never code); the nearest definition of it is 10 lines up"),
    Row(K, f"- {KC}:2301 — `process_value` now always casts the value", V, None, NOTJ,
        "value = self.type_cast_value(ctx, value)"),
    Row(K, f"- {KC}:2301 — `process_value` calls `type_cast_value` unconditionally", V, None,
        SHOWN, "the call"),
    Row(K, f"- {KC}:2304 — `process_value` raises `MissingParameter` when required", V, None,
        SHOWN, "raise MissingParameter(...)"),
    Row(K, f"- {KC}:2304 — `process_value` raises `BadParameter` when required", V, None,
        SHOWN, "true (MissingParameter is a BadParameter), read in another module"),
    Row(K, f"- {KC}:2309 — `process_value` returns the value", V, None, SHOWN, "return value"),
    Row(K, f"- {KC}:2512 — `is_bool_flag` now needs `is_flag`", V, None, NOTJ,
        "self.is_bool_flag = is_flag and ..."),
    Row(K, f"- {KC}:2512 — `is_bool_flag` is set to `True` for every bool type", V, None,
        NOTJ, "wrong, but the value is an expression the syntax cannot evaluate"),
    Row(K, f"- {KC}:2574 — `Option` raises a `TypeError` naming the duplicated name", V,
        None, SHOWN, "deep in the long class, but TypeError is on the line, inside Option"),
    Row(K, f"- {KC}:2574 — raises `TypeError` when a name is defined twice", V, None, SHOWN,
        "raise TypeError(...)"),
    Row(K, f"- {KC}:2732 — the default is shown only when `default_string` is not empty", V,
        None, NOTJ, "if default_string:"),
    Row(K, f"- {KC}:2738 — a count option with the default range hides the range", V, None,
        NOTJ, "the new condition on self.count"),
    Row(K, f"- {KC}:2749 — `extra_str` joins with \"; \" now", V, None, NOTJ,
        "extra_str = \"; \".join(extra)"),
    Row(K, f"- {KC}:2745 — `extra_str` joins with \"; \" now", C, f"{KC}:2749", NOTJ,
        "drift of 4"),
    Row(K, f"- {KC}:2859 — `consume_value` replaces flag sentinels in multiple values", V,
        None, NOTJ, "any(v is _flag_needs_value for v in value) inside Option.consume_value"),
    Row(K, f"- {KC}:2861 — each `_flag_needs_value` becomes the `flag_value`", V, None, NOTJ,
        "the list comprehension"),
    Row(K, f"- {KC}:2862 — `source` is set to the command line for them", V, None, NOTJ,
        "source = ParameterSource.COMMANDLINE"),
    Row(K, f"- {KC}:2870 — `_flag_needs_value` handling for multiple options", C,
        f"{KC}:2861", NOTJ, "line 2870 is the prompt branch; the nearest use is 2861"),
    Row(K, f"- {KC}:2445 — `show_default` now accepts a string", V, None, NOTJ,
        "show_default: t.Union[bool, str] = False"),
    Row(K, f"- {KC}:2445 — `show_default` defaults to `True`", U, None, CONTRA,
        "the default is False"),
    Row(K, f"- {KC}:2445 — `show_default` defaults to `False`", V, None, SHOWN,
        "= False"),
    Row(K, f"- {KC}:9000 — `show_default` accepts a string", D, None, None,
        "past the end; show_default is in many places: ambiguous"),
    Row(K, f"- {KS}:306 — `_check_version` asks bash for `BASH_VERSION`", V, None, NOTJ,
        "the new subprocess.run argv inside _check_version"),
    Row(K, f"- {KS}:308 — `match` reads the version with an anchored regex", V, None, NOTJ,
        "match = re.search(...)"),
    Row(K, f"- {KS}:314 — `_check_version` raises `RuntimeError` for bash before 4.4", V,
        None, SHOWN, "raise RuntimeError(...)"),
    Row(K, f"- {KS}:314 — `_check_version` raises `OSError` for an old bash", U, None, CONTRA,
        "RuntimeError is no OSError"),
    Row(K, f"- {KS}:313 — `_check_version` compares `major` with \"4\"", V, None, SHOWN,
        "major < \"4\""),
    Row(K, f"- {KS}:458 — `_start_of_option` lets \"/\" start a path", V, None, NOTJ,
        "c != \"/\""),
    Row(K, f"- {KS}:458 — `_start_of_option` compares the first character with \"/\"", V,
        None, SHOWN, "c != \"/\""),
    Row(K, f"- {KS}:454 — `_start_of_option` returns `False` for an empty value", V, None,
        SHOWN, "return False"),
    Row(K, f"- {KS}:454 — `_start_of_option` returns `True` for an empty value", U, None,
        CONTRA, "the line returns False"),
    Row(K, f"- {KS}:451 — the signature of `_start_of_option`", V, None, SHOWN, "its def"),
    Row(K, f"- {KS}:455 — `_start_of_option` is defined here", C, f"{KS}:451", SHOWN,
        "inside the function; its def is at 451"),
    Row(K, f"- {KG}:41 — `get_current_context` chains the `RuntimeError` from the lookup", V,
        None, NOTJ, "raise RuntimeError(...) from e"),
    Row(K, f"- {KG}:41 — `get_current_context` raises `RuntimeError` without a context", V,
        None, SHOWN, "raise RuntimeError"),
    Row(K, f"- {KG}:39 — `e` is bound to the lookup error", V, None, NOTJ,
        "except (AttributeError, IndexError) as e"),
    Row(K, f"- {KG}:43 — `get_current_context` returns `None` when silent", V, None, SHOWN,
        "return None"),
    Row(K, f"- {KM}:601 — `style` uses 3 and 23 for italic", V, None, NOTJ,
        "bits.append(f'...{3 if italic else 23}m')"),
    Row(K, f"- {KM}:599 — `overline` now uses its own flag", V, None, NOTJ,
        "53 if overline else 55"),
    Row(K, f"- {KM}:584 — `style` raises `TypeError` for an unknown colour", V, None, SHOWN,
        "raise TypeError(...) from None"),
    Row(K, f"- {KM}:584 — `style` raises `KeyError` for an unknown colour", U, None, CONTRA,
        "the KeyError is caught and a TypeError raised"),
    Row(K, f"- {KI}:429 — `_tempfilepager` keeps the descriptor from `mkstemp`", V, None,
        NOTJ, "fd, filename = tempfile.mkstemp()"),
    Row(K, f"- {KI}:440 — `_tempfilepager` closes the descriptor", V, None, NOTJ,
        "os.close(fd)"),
    Row(K, f"- {KI}:440 — calls `os.close` on the descriptor", V, None, SHOWN, "a call"),
    Row(K, f"- {KI}:441 — `_tempfilepager` deletes the file", V, None, SHOWN,
        "os.unlink(filename) removes it"),
    Row(K, f"- {KT}:840 — `dir_` is the folder holding the path", V, None, NOTJ,
        "dir_ = os.path.dirname(os.path.abspath(rv))"),
    Row(K, f"- {KT}:852 — a relative link target is joined to `dir_`", V, None, NOTJ,
        "rv = os.path.join(dir_, rv)"),
    Row(K, f"- {KT}:883 — `os.access` now checks the resolved `rv`", V, None, NOTJ,
        "os.access(rv, os.W_OK)"),
    Row(K, f"- {KT}:845 — `rv` is read with `os.readlink`", V, None, NOTJ,
        "the line is the if; readlink is on 846: rv is on the line"),
    Row(K, f"- {KT}:846 — calls `os.readlink` on a symlink", V, None, SHOWN, "a call"),
    Row(K, f"- {KT}:830 — `Path.convert` resolves symlinks relative to their folder", V,
        None, NOTJ, "def convert inside class Path"),
    Row(K, f"- {KT}:835 — `Path.convert` resolves symlinks relative to their folder", V,
        None, NOTJ, "a line inside Path.convert"),
    Row(K, f"- {KT}:858 — `Path.convert` returns the coerced path when it need not exist",
        V, None, SHOWN, "return self.coerce_path_result(rv)"),
    Row(K, f"- {KT}:100 — `Path.convert` resolves symlinks", C, f"{KT}:830", NOTJ,
        "far from it; Path.convert is defined once"),
    Row(K, "- [resolving the link](https://github.com/pallets/click/blob/8.0.2/src/click/"
        "types.py#L845-L852) in `Path.convert`", V, None, NOTJ,
        "a forge link to this repository's file, inside Path.convert"),
    Row(K, "- https://github.com/pallets/click/blob/8.0.2/src/click/globals.py#L41 — "
        "`get_current_context` raises `RuntimeError`", V, None, SHOWN, "a forge link"),
    Row(K, "- https://github.com/pallets/click/blob/8.0.2/src/click/globals.py#L45 — "
        "`get_current_context` raises `RuntimeError`", C, f"{KG}:41", SHOWN,
        "line 45 is blank; the raise of get_current_context is 4 lines up"),
    # --- more of click: the same name in another file, link forms -------------------------
    Row(K, f"- {KD}:13 — `get_current_context` raises `RuntimeError` without a context", U,
        None, CONTRA, "decorators.py only imports it; the raise is in globals.py"),
    Row(K, f"- {KD}:26 — `get_current_context` returns the active context", U, None, CONTRA,
        "a call site in pass_context: the return on the line is new_func's, the definition "
        "of get_current_context is in globals.py"),
    Row(K, f"- {KD}:26 — `pass_context` calls `get_current_context` for the context", V,
        None, SHOWN, "inside pass_context, a call"),
    Row(K, f"- {KD}:13 — imports `get_current_context` from the globals module", V, None,
        SHOWN, "from .globals import get_current_context"),
    Row(K, f"- {KD}:343 — `f_back` is read without asserting the frame", V, None, NOTJ,
        "f_back = frame.f_back if frame is not None else None"),
    Row(K, f"- {KD}:347 — `version_option` deletes the frame to break the cycle", V, None,
        SHOWN, "del frame inside version_option"),
    Row(K, f"- {KD}:383 — `version_option` raises the `RuntimeError` from None", V, None,
        SHOWN, "raise RuntimeError(...) from None, inside version_option"),
    Row(K, f"- {KG}:64 — `resolve_color_default` asks for the context silently", V, None,
        NOTJ, "ctx = get_current_context(silent=True)"),
    Row(K, f"- {KG}:62 — `resolve_color_default` returns `color` unchanged when given", V,
        None, SHOWN, "return color"),
    Row(K, f"- {KG}:69 — `resolve_color_default` returns `False` without a context", U,
        None, CONTRA, "the line returns None"),
    Row(K, f"- {KG}:22 — `get_current_context` defaults `silent` to `False`", V, None, NOTJ,
        "'defaults X to' is not the 'defaults to' form; the parameter is on the line"),
    Row(K, f"- {KG}:22 — `silent` defaults to `False`", V, None, SHOWN,
        "silent: bool = False"),
    Row(K, f"- {KG}:22 — `silent` defaults to `True`", U, None, CONTRA,
        "the default is False"),
    Row(K, f"- [`get_current_context`]({KG}#L22-L43 \"the new chaining\")", V, None, NOTJ,
        "a link with a title over the whole function"),
    Row(K, f"- [{KG}:41]({KG}#L41) — the `RuntimeError` is chained", V, None, NOTJ,
        "link text and target agree"),
    Row(K, f"- [{KG}:40]({KG}#L41) — the `RuntimeError` is chained", C, f"{KG}:41", NOTJ,
        "the link text says 40, the target 41, which is right"),
    Row(K, f"- [the raise](<{KG}#L41>) chains `RuntimeError`", V, None, NOTJ,
        "an angle-bracketed target"),
    Row(K, f"- {KG}:41:13 — `RuntimeError` is raised from `e`", V, None, SHOWN,
        "line and column; raise on the line"),
    Row(K, f"- {KG}#L48 — `push_context` appends to the stack", V, None, NOTJ,
        "a hash form; the append inside push_context"),
    Row(K, f"- {KG}#L53 — `pop_context` deletes the top context", V, None, SHOWN,
        "_local.stack.pop(): a removing call"),
    Row(K, f"- {KG}#L51-L53 — `pop_context` returns the popped context", U, None, CONTRA,
        "pop_context has no return; nothing near that holds it returns"),
    Row(K, f"- {KM}:599 — `style` uses 53 and 55 for the overline", V, None, NOTJ,
        "53 if overline else 55"),
    Row(K, f"- {KS}:305 — `subprocess.run` asks bash for its version", V, None, NOTJ,
        "output = subprocess.run(..."),
)  # fmt: skip


def lay_out(root: Path, library: str) -> None:
    for name, rel in LAYOUT[library].items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(DATA / library / f"{name}.src", root / rel)


@dataclass
class Measured:
    rows: list[tuple[Row, str, str | None, str | None]]  # row, status, corrected_to, desc

    def confusion(self) -> Counter[tuple[str, str]]:
        return Counter((row.status, status) for row, status, _, _ in self.rows)

    def wrong(self) -> list[tuple[str, str, str, str | None, str | None, str | None]]:
        return [
            (row.text, row.status, status, row.corrected_to, to, desc)
            for row, status, to, desc in self.rows
            if (row.status, row.corrected_to, row.description) != (status, to, desc)
        ]


def measure(tmp: Path) -> Measured:
    """Each library's answer checked in a root laid out as its repository."""
    from pytest_vgate.citations import CitationChecker, parse_citations

    out = []
    for library in LAYOUT:
        root = tmp / library
        lay_out(root, library)
        rows = [r for r in ROWS if r.library == library]
        answer = root / "answer.md"
        answer.write_text(
            "# The release, file by file\n\n" + "\n".join(r.text for r in rows) + "\n"
        )
        results = [CitationChecker(root).check(c) for c in parse_citations(answer)]
        assert [r.citation.line for r in results] == list(range(3, 3 + len(rows))), library
        for row, r in zip(rows, results, strict=True):
            desc = r.description.value if r.description else None
            out.append((row, r.status.value, r.corrected_to, desc))
    return Measured(out)


def render_table(measured: Measured) -> str:
    true = Counter(row.status for row, _, _, _ in measured.rows)
    given = Counter(status for _, status, _, _ in measured.rows)
    confusion = measured.confusion()
    libraries = Counter(row.library for row, _, _, _ in measured.rows)
    lines = [
        f"Release corpus: {len(measured.rows)} citations, "
        + ", ".join(f"{n} on {lib}" for lib, n in libraries.items())
        + ".",
        "",
        "| true \\ given | " + " | ".join(f"`{s}`" for s in STATUSES) + " |",
        "|---|" + "---|" * len(STATUSES),
    ]
    for t in STATUSES:
        cells = " | ".join(str(confusion[(t, g)]) for g in STATUSES)
        lines.append(f"| `{t}` ({true[t]}) | {cells} |")
    words = Counter(row.description for row, _, _, _ in measured.rows if row.description)
    lines += [
        "",
        "Given: "
        + ", ".join(f"{given[s]} `{s}`" for s in STATUSES)
        + "; descriptions: "
        + ", ".join(f"{n} `{w}`" for w, n in sorted(words.items()))
        + ".",
    ]
    return "\n".join(lines)


START, END = "<!-- release-corpus:start -->", "<!-- release-corpus:end -->"


def docs_table() -> str | None:
    text = DOCS.read_text(encoding="utf-8")
    if START not in text or END not in text:
        return None
    return text.split(START, 1)[1].split(END, 1)[0].strip("\n")


if __name__ == "__main__" and "--write-docs" in sys.argv:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        table = render_table(measure(Path(tmp)))
    text = DOCS.read_text(encoding="utf-8")
    head, rest = text.split(START, 1)
    DOCS.write_text(f"{head}{START}\n{table}\n{END}{rest.split(END, 1)[1]}", encoding="utf-8")
    print(table)
