"""``antsim.errors``: a SpecError's one line reads ``file: key: rule; got value``; every user error is an
AntsimError (the CLI's exit status 2); the subject survives the pickling worker processes use."""

from __future__ import annotations

import pickle

import pytest

from antsim.errors import AntsimError, MappingError, MissingExtraError, SpecError, WorkloadError


def test_spec_error_line_names_file_key_rule_and_value() -> None:
    exc = SpecError("my_arch.yaml", "pe_array.F", "must be a positive integer", 0)
    assert str(exc) == "my_arch.yaml: pe_array.F: must be a positive integer; got 0"
    assert (exc.file, exc.key, exc.rule, exc.value) == ("my_arch.yaml", "pe_array.F",
                                                        "must be a positive integer", 0)


def test_spec_error_without_key_or_value_leaves_them_out() -> None:
    assert str(SpecError("s.yaml", "", "not a mapping")) == "s.yaml: not a mapping"
    assert str(SpecError("s.yaml", "name", "required key is missing")) == "s.yaml: name: required key is missing"
    # A value of None is a value the user gave (``key: null``), not a missing one.
    assert str(SpecError("s.yaml", "kind", "must be 'arch'", None)) == "s.yaml: kind: must be 'arch'; got None"


def test_spec_error_is_one_line_whatever_the_rule_or_value_holds() -> None:
    exc = SpecError("s.yaml", "name", "bad\nname", "a\nb")
    assert "\n" not in str(exc) and str(exc) == "s.yaml: name: bad name; got 'a\\nb'"


@pytest.mark.parametrize("kind", [SpecError, WorkloadError, MappingError, MissingExtraError])
def test_every_user_error_is_an_antsim_error(kind: type[Exception]) -> None:
    assert issubclass(kind, AntsimError) and not issubclass(AntsimError, kind)


@pytest.mark.parametrize("kind", [AntsimError, WorkloadError, MappingError, MissingExtraError])
def test_subject_and_message_survive_pickling(kind: type[AntsimError]) -> None:
    exc = kind("storage URL 'x': not an RDB URL", subject="storage")
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is kind and str(back) == str(exc) and back.subject == "storage"
    assert kind("no subject").subject is None


@pytest.mark.parametrize("value", ["sideways", 0, None])
def test_spec_errors_survive_pickling_with_file_key_and_value(value: object) -> None:
    """A sweep worker sends its SpecError back pickled: the same line, file, key, rule and value arrive."""
    errors = (SpecError("arch.yaml", "mapping.wgrad_dy", "unknown value", value), SpecError("arch.yaml", "", "empty"))
    for exc in errors:
        back = pickle.loads(pickle.dumps(exc))
        assert type(back) is SpecError and str(back) == str(exc)
        assert (back.file, back.key, back.rule) == (exc.file, exc.key, exc.rule)
    back = pickle.loads(pickle.dumps(SpecError("arch.yaml", "pe_array.F", "must be >= 1", value)))
    assert back.value == value and str(back).endswith(f"; got {value!r}")
