"""The scenario files shipped inside the package, reachable by name.

The scenarios live in ``ldpsim/scenarios/`` (in a checkout, the top-level ``scenarios/`` is
a symlink to that folder), so ``pip install ldpsim`` alone can run the quick start:
``ldpsim run survey`` finds ``ldpsim/scenarios/survey.toml``. :func:`names` and
:func:`describe` list them, :func:`resolve` turns a command-line argument (a file or a
shipped name) into a path, and :func:`copy` writes an editable copy of one, with the data
files it reads, into a folder of the user's.

Standard library only (and :mod:`ldpsim.errors`, :mod:`ldpsim._files`): listing the
scenarios costs no numpy, pandas or pydantic.
"""

from __future__ import annotations

import difflib
import tomllib
from pathlib import Path
from typing import Any

from ldpsim._files import check_output_folder, describe_os_error, write_bytes
from ldpsim.errors import LdpSimError, invalid

#: the folder of the shipped scenario files (``*.toml``) and their data (``data/``)
FOLDER = Path(__file__).with_name("scenarios")
SUFFIX = ".toml"
#: longest one-line description :func:`describe` returns
DESCRIPTION_WIDTH = 90
_LISTED_BY = "ldpsim scenarios lists them"


def names() -> list[str]:
    """The shipped scenario names (file stems), sorted."""
    return sorted(p.stem for p in FOLDER.glob(f"*{SUFFIX}") if p.is_file())


def describe() -> list[tuple[str, str]]:
    """``(name, description)`` of every shipped scenario, sorted by name: the file's
    ``description`` shortened to one line of at most :data:`DESCRIPTION_WIDTH` characters."""
    return [(name, shorten(str(_read(FOLDER / f"{name}{SUFFIX}").get("description", "")))) for name in names()]


def shorten(text: str, width: int = DESCRIPTION_WIDTH) -> str:
    """``text`` on one line; cut at a word boundary and ended with ``...`` if longer than ``width``."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    cut = text[: width - 2]  # room for "..." after dropping the partial word and a space
    cut = cut[: cut.rfind(" ")] if " " in cut else text[: width - 3]
    return cut.rstrip(" ,;:-") + "..."


def resolve(arg: str) -> Path:
    """The scenario file that ``arg`` names: ``arg`` itself if it is an existing file, else
    the shipped scenario of that name (``survey`` or ``survey.toml``); anything else is one
    LdpSimError with the closest shipped name."""
    path = Path(arg)
    if path.is_file():
        return path
    shipped = _shipped_path(arg)
    if shipped is not None:
        return shipped
    raise invalid("file", arg, f"a scenario file or a shipped scenario name ({_hint(path.stem)})")


def copy(name: str, dest: str | Path = ".", force: bool = False) -> list[Path]:
    """Write an editable copy of the shipped scenario ``name`` into the folder ``dest``
    (created if need be): the scenario file and the data files it reads (``[population]
    file = "data/anes96.csv"``), at the same relative paths so the copy runs as it is, with
    the README of each data folder (source and licence). An existing file is overwritten
    only with ``force``; nothing is written if any would be. Every write is atomic. Returns
    the files written."""
    source = _shipped_path(name)
    if source is None:
        raise invalid("name", name, f"a shipped scenario name ({_hint(Path(name).stem)})")
    dest = Path(dest)
    if dest.exists() and not dest.is_dir():
        raise invalid("--to", str(dest), "a folder (or a path to create)")
    relative = [Path(source.name), *_data_files(source)]
    targets = [dest / rel for rel in relative]
    if not force:
        for target in targets:
            if target.exists():
                raise invalid("copy", str(target), "a file that does not exist yet (--force overwrites it)")
    for folder in dict.fromkeys(t.parent for t in targets):  # a path under a file, a read-only place: one line
        check_output_folder(folder, force=True, option="--to")
    made: list[Path] = []  # what this call made, removed again if a write fails (a full disk, Ctrl-C)
    try:
        for rel, target in zip(relative, targets):
            missing = [p for p in (target.parent, *target.parent.parents) if not p.exists()]
            target.parent.mkdir(parents=True, exist_ok=True)
            made.extend(reversed(missing))
            new = not target.exists()
            write_bytes(target, (FOLDER / rel).read_bytes())
            if new:
                made.append(target)
    except BaseException as exc:
        for p in reversed(made):
            try:
                p.rmdir() if p.is_dir() else p.unlink()
            except OSError:
                pass
        if isinstance(exc, OSError):
            raise LdpSimError(
                f"--to: got {str(dest)!r}, expected a folder we can write ({describe_os_error(exc)})"
            ) from None
        raise
    return targets


# --------------------------------------------------------------------------- helpers
def _shipped_path(arg: str) -> Path | None:
    """The shipped file named ``arg`` (``survey`` or ``survey.toml``), else None."""
    name = arg[: -len(SUFFIX)] if arg.endswith(SUFFIX) else arg
    return FOLDER / f"{name}{SUFFIX}" if name in names() else None


def _hint(word: str) -> str:
    close = difflib.get_close_matches(word, names(), n=1)
    return f"did you mean {close[0]!r}?; {_LISTED_BY}" if close else _LISTED_BY


def _read(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise LdpSimError(f"{path}: cannot read the shipped scenario ({' '.join(str(exc).split())})") from None


def _data_files(source: Path) -> list[Path]:
    """The files a shipped scenario reads (every ``file = "..."`` value, relative to the
    scenario), and the README.md of each data folder, relative to :data:`FOLDER`."""
    out: list[Path] = []
    root = FOLDER.resolve()
    for value in _file_values(_read(source)):
        rel = Path(value)
        full = (FOLDER / rel).resolve()
        if rel.is_absolute() or not full.is_relative_to(root) or not full.is_file():
            raise invalid(f"{source.name}: file", value, "a data file shipped beside the scenario")
        rel = full.relative_to(root)
        readme = rel.parent / "README.md"
        for item in (rel, readme) if rel.parent != Path(".") and (root / readme).is_file() else (rel,):
            if item not in out:
                out.append(item)
    return out


def _file_values(node: Any) -> list[str]:
    """Every string value of a ``file`` key, at any depth of the parsed TOML."""
    if isinstance(node, dict):
        found = [v for k, v in node.items() if k == "file" and isinstance(v, str)]
        return found + [x for v in node.values() for x in _file_values(v)]
    if isinstance(node, list):
        return [x for v in node for x in _file_values(v)]
    return []
