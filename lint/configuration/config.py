"""Settings from ``[tool.gradguard]`` in ``pyproject.toml`` (or a file given by --config).

A configuration is a ``pyproject.toml`` that has a ``[tool.gradguard]`` table. As in
ruff, each file is linted with the nearest one at or above its directory (``check``
finds them, see ``settings.Resolver``); a file given with ``--config`` that is not named
``pyproject.toml`` (say ``gradguard.toml``) holds the settings at its top level. TOML is
read with ``tomllib`` (Python 3.11+) or ``tomli``; without either, a found configuration
is skipped with a warning. A file that is not valid TOML is a ``ConfigError`` (the
parser's message, with its line and column) wherever it is read, also a
``pyproject.toml`` on the way up that may or may not configure gradguard: as in ruff,
it stops the run rather than being passed over.

Rules' own settings are in ``[tool.gradguard.rules.<rule-name>]`` (``data-write``, as
``gradguard rules`` names them), each key one of the options the rule declares.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from gradguard.rules import ALL_RULES

try:
    import tomllib
except ImportError:  # Python 3.10
    try:
        import tomli as tomllib  # type: ignore[no-redef]
    except ImportError:
        tomllib = None  # type: ignore[assignment]

LIST_KEYS = ("select", "ignore", "extend-select", "exclude", "extend-exclude")
TABLE_KEYS = ("per-file-ignores", "rules")
BOOL_KEYS = ("conditional",)
PATH_KEYS = ("models",)  # folders, relative to the configuration file's
_SECTION = re.compile(r"^\s*\[\s*tool\s*\.\s*gradguard\s*[\].]", re.MULTILINE)


class ConfigError(ValueError):
    """A configuration that cannot be used (bad TOML, unknown key, wrong type)."""


@dataclass
class Config:
    """The settings one configuration file gives; None where it says nothing."""

    path: Optional[Path] = None
    select: Optional[list[str]] = None
    ignore: Optional[list[str]] = None
    extend_select: Optional[list[str]] = None
    exclude: Optional[list[str]] = None
    extend_exclude: Optional[list[str]] = None
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    # the rules' settings: code -> option name -> value (only those the file sets)
    rules: dict[str, dict[str, object]] = field(default_factory=dict)
    # report hazards on a path a flag selects, with the condition (``gradguard.engine.conditions``)
    conditional: Optional[bool] = None
    # folders of the team's own library models (``gradguard.libraries``), absolute
    models: list[str] = field(default_factory=list)

    @property
    def root(self) -> Optional[Path]:
        """The directory relative globs in this configuration are resolved against."""
        return self.path.parent if self.path else None


def find_pyproject(start: Path) -> Optional[Path]:
    """The nearest ``pyproject.toml`` at or above ``start`` with a gradguard section."""
    for directory in (start, *start.parents):
        candidate = directory / "pyproject.toml"
        if has_section(candidate):
            return candidate
    return None


def has_section(candidate: Path) -> bool:
    """Whether ``candidate`` is a file with a ``[tool.gradguard]`` table (a
    ``pyproject.toml`` without one is no gradguard configuration: it is passed over).
    Raises ``ConfigError`` for a file that is not valid TOML. Without a TOML reader the
    text is searched for the table's header (``load`` then warns)."""
    if not candidate.is_file():
        return False
    if tomllib is None:
        return bool(_SECTION.search(_read_text(candidate)))
    return _gradguard_table(_read_toml(candidate)) is not None


def load(path: Path, warn: Callable[[str], None]) -> Config:
    """Read the settings in ``path``; see the module docstring for where they live."""
    if tomllib is None:
        warn(f"{path}: cannot read the configuration: install `tomli` on Python < 3.11")
        return Config()
    document = _read_toml(path)
    table = (_gradguard_table(document) or {}) if path.name == "pyproject.toml" else document
    return _parse(path, table)


def _read_toml(path: Path) -> dict:
    """The document in ``path``; ``ConfigError`` with the parser's message (which gives
    the line and column) when it is not TOML."""
    try:
        return tomllib.loads(_read_text(path))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path}: invalid TOML: {error}") from None


def _gradguard_table(document: dict) -> Optional[dict]:
    """A ``pyproject.toml``'s ``[tool.gradguard]``; None when it has none."""
    tool = document.get("tool")
    return tool.get("gradguard") if isinstance(tool, dict) else None


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"{path}: cannot read the configuration: {error.strerror}") from None


def _parse(path: Path, table) -> Config:
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: the settings must be a table ([tool.gradguard])")
    known = LIST_KEYS + TABLE_KEYS + BOOL_KEYS + PATH_KEYS
    unknown = sorted(set(table) - set(known))
    if unknown:
        raise ConfigError(
            f"{path}: unknown option(s) {', '.join(map(repr, unknown))}; known: "
            f"{', '.join(known)}"
        )
    config = Config(path=path)
    for key in LIST_KEYS:
        if key in table:
            setattr(config, key.replace("-", "_"), _string_list(path, key, table[key]))
    ignores = table.get("per-file-ignores", {})
    if not isinstance(ignores, dict):
        raise ConfigError(f"{path}: 'per-file-ignores' must be a table of glob = [codes]")
    config.per_file_ignores = {
        glob: _string_list(path, f"per-file-ignores.{glob}", codes)
        for glob, codes in ignores.items()
    }
    config.rules = _rule_options(path, table.get("rules", {}))
    for key in BOOL_KEYS:
        if key in table:
            if not isinstance(table[key], bool):
                raise ConfigError(f"{path}: '{key}' must be true or false")
            setattr(config, key, table[key])
    if "models" in table:
        config.models = [str((path.parent / folder).resolve())
                         for folder in _string_list(path, "models", table["models"])]
        missing = [folder for folder in config.models if not Path(folder).is_dir()]
        if missing:
            raise ConfigError(f"{path}: 'models' names no folder: {', '.join(missing)}")
    return config


def _rule_options(path: Path, table) -> dict[str, dict[str, object]]:
    """``[rules.<rule-name>]`` tables, checked against the options each rule declares."""
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: 'rules' must be a table of [rules.<rule-name>] tables")
    by_name = {rule.name: rule for rule in ALL_RULES}
    configurable = ", ".join(rule.name for rule in ALL_RULES if rule.options) or "none"
    found: dict[str, dict[str, object]] = {}
    for name, settings in table.items():
        rule = by_name.get(name)
        if rule is None:
            by_code = next((r for r in ALL_RULES if r.code == name.upper()), None)
            hint = f"; write its name: [rules.{by_code.name}]" if by_code else ""
            raise ConfigError(f"{path}: unknown rule {name!r} in 'rules'{hint} (rules with "
                              f"options: {configurable})")
        if not isinstance(settings, dict):
            raise ConfigError(f"{path}: 'rules.{name}' must be a table of options")
        options = {option.name: option for option in rule.options}
        unknown = sorted(set(settings) - set(options))
        if unknown:
            known = ", ".join(options) or "none"
            raise ConfigError(f"{path}: unknown option(s) {', '.join(map(repr, unknown))} "
                              f"for rule {name} ({rule.code}); known: {known}")
        values = {}
        for key, value in settings.items():
            try:
                values[key] = options[key].parse(value)
            except ValueError as error:
                raise ConfigError(f"{path}: 'rules.{name}.{key}' {error}") from None
        found[rule.code] = values
    return found


def _string_list(path: Path, key: str, value) -> list[str]:
    """A list of strings; a single string is accepted as a comma-separated list."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{path}: {key!r} must be a list of strings")
    return value
