"""Reading spec YAML files and turning pydantic validation errors into one-line ``SpecError``s."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from antsim.errors import SpecError

# Limits on a spec file. A real spec is a few kB with no aliases; a YAML "billion laughs" document (aliases
# of aliases) is tiny on disk but expands exponentially once walked, so the expanded node count is bounded.
MAX_YAML_BYTES = 1 << 20  # 1 MiB: a hundred times the largest spec in the repository
MAX_YAML_NODES = 100_000  # nodes after alias expansion; specs hold a few hundred


def _expanded_size(node: yaml.Node, memo: dict[int, int], active: set[int]) -> int:
    """Nodes in ``node`` with every alias expanded (memoised, so a bomb costs linear time to measure)."""
    key = id(node)
    if key in memo:
        return memo[key]
    if key in active:
        raise ValueError("recursive alias (a node that contains itself)")
    active.add(key)
    size = 1
    if isinstance(node, yaml.SequenceNode):
        size += sum(_expanded_size(child, memo, active) for child in node.value)
    elif isinstance(node, yaml.MappingNode):
        size += sum(_expanded_size(k, memo, active) + _expanded_size(v, memo, active) for k, v in node.value)
    active.discard(key)
    memo[key] = min(size, MAX_YAML_NODES + 1)
    return memo[key]


def _parse(text: str) -> Any:
    """``yaml.safe_load`` with the alias-expansion bound checked on the composed node graph first."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if _expanded_size(node, {}, set()) > MAX_YAML_NODES:
            raise ValueError(f"more than {MAX_YAML_NODES} nodes once aliases are expanded (an alias bomb?)")
        return loader.construct_document(node)
    finally:
        loader.dispose()


def load_yaml(path: str | Path, kind: str | None = None) -> dict[str, Any]:
    """Load a YAML mapping; check its top-level ``kind`` when asked.

    Raises:
        SpecError: missing file, not UTF-8, too large, malformed YAML, an alias bomb or recursive alias,
            a non-mapping document or the wrong ``kind``.
    """
    path = Path(path)
    if not path.is_file():
        raise SpecError(str(path), "", "file not found")
    raw = path.read_bytes()
    if len(raw) > MAX_YAML_BYTES:
        raise SpecError(str(path), "", f"larger than {MAX_YAML_BYTES} bytes; not a spec file", len(raw))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError(str(path), "", f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start})") from None
    try:
        data = _parse(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or "syntax error"
        raise SpecError(str(path), "", f"malformed YAML{where}: {problem}") from None
    except (ValueError, RecursionError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise SpecError(str(path), "", f"refused YAML: {reason}") from None
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
