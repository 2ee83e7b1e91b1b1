"""Every command follows the same conventions: short flags, described options, exit codes."""

import re

import typer

from fl_oracle.cli import build_app

# the short flag of each shared option; a command that has the option has the flag
SHORT = {"--k": "-k", "--rounds": "-r", "--out": "-o", "--method": "-m"}
# --stats names a statistics file in the selection commands (-s) and a mode (fresh | stale)
# in the training commands, which therefore have no short flag for it
STATS_FILE = {"solve", "sweep", "compare", "analyze"}


def _commands():
    cmd = typer.main.get_command(build_app())
    return sorted(cmd.commands.items())


def test_the_same_short_flag_means_the_same_option_everywhere():
    meaning: dict[str, tuple[str, str]] = {}
    for name, c in _commands():
        for p in c.params:
            if getattr(p, "hidden", False):  # a renamed flag's old spelling (a note says so)
                continue
            longs = [o for o in p.opts + p.secondary_opts if o.startswith("--")]
            shorts = [o for o in p.opts + p.secondary_opts if not o.startswith("--")]
            for s in shorts:
                seen = meaning.setdefault(s, (longs[0], name))
                assert seen[0] == longs[0], f"{s} is {longs[0]} in {name}, {seen[0]} in {seen[1]}"
            for long, short in SHORT.items():
                if long in longs:
                    assert short in shorts, f"fedsel {name} {long} has no {short}"
            if "--stats" in longs:
                assert ("-s" in shorts) == (name in STATS_FILE), name


def test_every_option_says_what_it_does():
    for name, c in _commands():
        assert (c.help or "").strip(), f"fedsel {name} has no description"
        for p in c.params:
            if p.name == "help" or isinstance(p, typer.core.click.Argument):
                continue
            if getattr(p, "hidden", False):  # a renamed flag's old spelling, not in --help
                continue
            assert (p.help or "").strip(), f"fedsel {name} {p.opts[0]} has no description"
            assert "[default" not in p.help, f"fedsel {name} {p.opts[0]}: use show_default"


def test_help_fits_80_columns_without_cutting_option_names(monkeypatch, capsys):
    from fl_oracle.cli import main

    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("TERMINAL_WIDTH", "80")
    for name, _c in _commands():
        try:
            main([name, "--help"])
        except SystemExit as exc:
            assert exc.code in (0, None)
        out = capsys.readouterr().out
        assert out.strip(), name
        assert max(len(line) for line in out.splitlines()) <= 80, name
        assert "…" not in out, f"fedsel {name} --help cuts text at 80 columns"
        assert not re.search(r" \.(\s|$)", out), f"fedsel {name} --help: a stray ' .'"


def test_the_command_listing_is_the_full_apps_and_loads_nothing_heavy():
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from fl_oracle.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('numpy', 'pandas', 'torch', 'pymoo', 'scipy') if m in sys.modules]\n"
        "print('HEAVY', heavy)\n"
    )
    env = {"COLUMNS": "100", "PATH": "/usr/bin:/bin"}
    lazy = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert lazy.returncode == 0, lazy.stderr
    assert lazy.stdout.strip().endswith("HEAVY []"), lazy.stdout[-300:]
    full = subprocess.run(
        [sys.executable, "-c",
         "from fl_oracle.cli import build_app\nbuild_app()(['--help'], prog_name='fedsel')"],
        capture_output=True, text=True, env=env,
    )  # fmt: skip
    listing = lazy.stdout.rsplit("HEAVY", 1)[0]
    assert listing.strip() and listing == full.stdout


def test_help_spends_its_columns_on_the_help_texts(monkeypatch, capsys):
    """At 80 columns no command's --help runs past 120 lines (train's was 207: typer's
    ``INTEGER RANGE`` metavars left the help texts a 22-column strip, and --selector listed
    every registered name, which fedsel methods lists)."""
    from fl_oracle.cli import main

    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("TERMINAL_WIDTH", "80")
    lengths = {}
    for name, _c in _commands():
        try:
            main([name, "--help"])
        except SystemExit:
            pass
        out = capsys.readouterr().out
        lengths[name] = len(out.splitlines())
        assert "INTEGER RANGE" not in out and "FLOAT RANGE" not in out, name
    assert max(lengths.values()) <= 120, lengths
