"""Progress off a terminal: plain lines at a steady pace, nothing for quick work."""

import itertools

from selection import progress as prog


def _fake_clock(monkeypatch, times):
    it = iter(times)
    monkeypatch.setattr(prog.time, "monotonic", lambda: next(it))


def test_plain_lines_at_a_steady_pace(monkeypatch):
    lines = []
    _fake_clock(monkeypatch, [0, 10, 31, 40, 62, 100])
    p = prog.plain_progress(interval=30, write=lines.append)
    for done in range(6):
        p(done, 5, "study")
    # t=0 start, t=10 too early, t=31 first line, t=40 within the interval, t=62 due, t=100
    # finished (5/5 at t=100 is past the total: a last line)
    assert lines == [
        "study: 2/5 (40%), 31s elapsed, ETA 46s",
        "study: 4/5 (80%), 1m02s elapsed, ETA 16s",
        "study: 5/5 (100%), 1m40s elapsed",
    ]


def test_quick_work_prints_nothing_and_unknown_totals_count(monkeypatch):
    lines = []
    _fake_clock(monkeypatch, itertools.count(0, 1))
    p = prog.plain_progress(interval=30, write=lines.append)
    for done in range(4):
        p(done, 3, "sweep")
    assert lines == []
    q = prog.plain_progress(interval=0, write=lines.append)
    q(7, None, "rounds: training")
    assert lines == ["rounds: training: 7 done, 0s elapsed"]


def test_off_a_terminal_rich_progress_is_plain(monkeypatch, capsys):
    monkeypatch.setenv("FEDSEL_PROGRESS_SECONDS", "0")
    with prog.rich_progress(transient=False) as p:
        p(1, 2, "demo")
        p(2, 2, "demo")
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("demo: 1/2 (50%)") and err[-1].startswith("demo: 2/2 (100%)")


def test_the_eta_counts_only_this_commands_work(monkeypatch):
    lines = []
    _fake_clock(monkeypatch, [0, 60])
    p = prog.plain_progress(interval=30, write=lines.append)
    p(80, 100, "study")  # a resumed study: 80 of 100 done before this command started
    p(90, 100, "study")  # 10 more in 60 s: 10 left take 60 s more
    assert lines == ["study: 90/100 (90%), 1m00s elapsed, ETA 1m00s"]
