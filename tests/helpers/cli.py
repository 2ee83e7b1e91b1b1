"""``fedsel`` in process, as a test calls it: ``from helpers.cli import run_fedsel``."""

from __future__ import annotations

from fl_oracle.cli import main


def run_fedsel(argv, capsys) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``fedsel *argv`` (arguments str()-ed), pytest's
    ``capsys`` capturing the output."""
    try:
        main([str(a) for a in argv])
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


def forbid_data(monkeypatch, why: str) -> None:
    """Make building a federation (loading or generating data, in train, study or flower)
    fail the test with ``why``: a refusal that must come before any data."""
    import fl_oracle.cli.study as cli_study
    import fl_oracle.cli.train as cli_train
    import fl_oracle.sim.loading as loading
    import fl_oracle.sim.oracle as oracle

    def touched(*args, **kwargs):
        raise AssertionError(why)

    monkeypatch.setattr(cli_train, "make_oracle", touched)
    monkeypatch.setattr(cli_study, "study_factory", touched)
    monkeypatch.setattr(oracle, "load_federation_data", touched)  # the Oracle's
    monkeypatch.setattr(loading, "load_federation_data", touched)  # the runners' and Flower's
    try:
        import fl_oracle.cli.flower as cli_flower
    except ImportError:  # the flower extra is missing: its doors skip
        return
    monkeypatch.setattr(cli_flower, "make_settings", touched)
