"""The one TOML value writer: what it writes reads back equal."""

import tomllib

import pytest

from selection.toml_text import toml_key, toml_value


@pytest.mark.parametrize(
    "v",
    [
        True,
        False,
        0,
        -7,
        2**40,
        0.1,
        1e-300,
        -2.5,
        "",
        'a "quoted" \\ path',
        [1, 2.5, "x"],
        {"cartoon": 38, "a b": [True]},
        [],
    ],  # fmt: skip
)
def test_values_read_back_equal(v):
    assert tomllib.loads(f"x = {toml_value(v)}")["x"] == (list(v) if isinstance(v, tuple) else v)


def test_keys_and_strictness():
    assert toml_key("svhn-3") == "svhn-3" and toml_key("a b") == '"a b"'
    assert tomllib.loads(f"{toml_key('a b')} = 1") == {"a b": 1}
    assert toml_value(None) == '"None"'
    with pytest.raises(TypeError, match="cannot write"):
        toml_value(object(), strict=True)


def test_numpy_scalars_are_written_as_toml():
    import numpy as np

    text = f"a = {toml_value(np.float64(0.5))}\nb = {toml_value(np.int64(3))}\nc = {toml_value(np.bool_(True))}"
    assert tomllib.loads(text) == {"a": 0.5, "b": 3, "c": True}
