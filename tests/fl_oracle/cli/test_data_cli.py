"""``fedsel data preview`` writes a PNG; bad options exit 2 with one line."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from fl_oracle.cli import main


def test_preview_writes_png(tmp_path, capsys):
    out = tmp_path / "sub" / "preview.png"
    main(
        [
            "data",
            "preview",
            "--out",
            str(out),
            "--n",
            "4",
            "--seed",
            "1",
            "--data",
            "generated",
            "--cache-dir",
            str(tmp_path / "cache"),
        ]
    )
    assert "wrote" in capsys.readouterr().err
    with Image.open(out) as im:
        assert im.format == "PNG" and im.size[0] > 200 and im.size[1] > 200
        arr = np.asarray(im.convert("RGB"))
    assert arr.std() > 10  # not a blank canvas
    assert [p.name for p in out.parent.iterdir()] == ["preview.png"]  # no temp left behind


def test_preview_real_without_root_fails_with_one_line(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["data", "preview", "--out", str(tmp_path / "p.png"), "--data", "real"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("fedsel: error:") and "needs a data root" in err and "\n" not in err
    assert not (tmp_path / "p.png").exists()


def test_cli_module_does_not_import_torch():
    code = "import sys, fl_oracle.cli.data; print('torch' in sys.modules)"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert res.stdout.strip() == "False"
