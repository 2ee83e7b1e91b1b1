"""An information model is parsed once (issue 49): the spec's ``@MODEL`` (or ``--stats``)
becomes an :class:`~selection.information.Information`, a ``str`` carrying its class and
argument, and the drivers' checks and constructors take it as it is."""

from __future__ import annotations

import pickle

import pytest

import selection.information.base as base
from selection.errors import SelectionError
from selection.information import Information, make_information, parse_information
from selection.specs import parse_spec


@pytest.fixture
def parses(monkeypatch):
    calls: list[str] = []
    real = base._split
    monkeypatch.setattr(base, "_split", lambda text: calls.append(str(text)) or real(text))
    return calls


def test_a_parsed_model_is_not_parsed_again(parses):
    spec = parse_spec("maxmin:2@pool:4.0")
    assert parses == ["pool:4.0"]  # the spec's parse
    info = spec.run_information(n=8, k=2)  # every driver's check, by arithmetic
    assert info == "pool:4" and info is spec.stats_mode
    assert Information(info) is info and parse_information(info) is info
    model = make_information(info, seed=1)
    assert type(model).__name__ == "Pool" and (model.value, model.seed) == (4, 1)
    pytest.importorskip("torch")
    from fl_oracle.experiments.loop import check_information

    assert check_information(info) is info
    assert parses == ["pool:4.0"]


def test_it_reads_as_its_canonical_text_and_reaches_a_worker_as_parsed(parses):
    info = Information(" pool:10.0 ")
    assert info == "pool:10" and f"{info}" == "pool:10" and {info: 1}["pool:10"] == 1
    assert (info.model.__name__, info.arg) == ("Pool", 10)
    back = pickle.loads(pickle.dumps(info))
    assert back == info and back.model is info.model and back.arg == 10
    assert isinstance(back, Information) and parses == [" pool:10.0 "]  # not parsed again
    with pytest.raises(SelectionError, match="needs P"):
        Information("pool")


def test_a_spec_holds_its_parts_as_objects_and_travels_as_its_fields():
    """The spec's surrogate and model are parsed objects; after make_selector has looked its
    formulation up, a pickled spec carries the fields only (a formulation registered in a
    test or a notebook cannot travel to a worker by reference) and finds it again there."""
    from selection.selectors import make_selector
    from selection.surrogates import SurrogateSpec, get_surrogate

    spec = parse_spec("eps:5@probe+weighted")
    assert isinstance(spec.surrogate, SurrogateSpec) and spec.surrogate == "weighted"
    assert spec.surrogate.model is get_surrogate("weighted")
    assert isinstance(spec.stats_mode, Information) and spec.stats_mode.model.reads_probe
    make_selector(spec, seed=0)
    assert spec.formulation.name == "eps" and "formulation" in vars(spec)
    back = pickle.loads(pickle.dumps(spec))
    assert back == spec and hash(back) == hash(spec) and "formulation" not in vars(back)
    assert back.formulation is spec.formulation and back.surrogate.model is spec.surrogate.model
