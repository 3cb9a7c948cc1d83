"""Reading spec YAML files and turning pydantic validation errors into one-line ``SpecError``s."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from antsim.errors import SpecError


def load_yaml(path: str | Path, kind: str | None = None) -> dict[str, Any]:
    """Load a YAML mapping; check its top-level ``kind`` when asked.

    Raises:
        SpecError: missing file, malformed YAML, a non-mapping document or the wrong ``kind``.
    """
    path = Path(path)
    if not path.is_file():
        raise SpecError(str(path), "", "file not found")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or "syntax error"
        raise SpecError(str(path), "", f"malformed YAML{where}: {problem}") from None
    if not isinstance(data, dict):
        raise SpecError(str(path), "", "must be a YAML mapping", type(data).__name__)
    if kind is not None and data.get("kind", kind) != kind:
        raise SpecError(str(path), "kind", f"must be {kind!r}", data.get("kind"))
    return data


def lookup(data: Any, loc: tuple[Any, ...]) -> Any:
    """The value at a pydantic error location inside ``data`` (``None`` if absent)."""
    for part in loc:
        try:
            data = data[part]
        except (KeyError, IndexError, TypeError):
            return None
    return data


def validation_error_to_spec_error(exc: ValidationError, source: str, data: Any, prefix: str = "") -> SpecError:
    """The first pydantic error as a ``SpecError`` naming the file, dotted key and value."""
    err = exc.errors(include_url=False)[0]
    loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
    key = ".".join(str(p) for p in ((prefix,) if prefix else ()) + loc)
    message = err["msg"]
    if err["type"] == "extra_forbidden":
        model_keys = _allowed_keys(exc, loc)
        message = "unknown key" + (f"; known: {', '.join(model_keys)}" if model_keys else "")
        return SpecError(source, key, message)
    if err["type"] == "missing":
        return SpecError(source, key, "required key is missing")
    if message.startswith("Value error, "):
        message = message[len("Value error, "):]
    return SpecError(source, key, message, lookup(data, loc))


def _allowed_keys(exc: ValidationError, loc: tuple[Any, ...]) -> list[str]:
    model = getattr(exc, "_antsim_model", None)
    if model is None:
        return []
    for part in loc[:-1]:
        field = model.model_fields.get(part) if isinstance(part, str) else None
        ann = getattr(field, "annotation", None)
        if not (isinstance(ann, type) and issubclass(ann, BaseModel)):
            return []
        model = ann
    return sorted(model.model_fields)


def validate_model(model: type[BaseModel], data: Any, source: str, prefix: str = "") -> Any:
    """Build ``model`` from ``data``; raise a one-line ``SpecError`` on failure."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        exc._antsim_model = model  # type: ignore[attr-defined]
        raise validation_error_to_spec_error(exc, source, data, prefix) from None
