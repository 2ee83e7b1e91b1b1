"""Image-folder datasets: DIR/<domain>/<class>/*.png read, split and checked."""

import numpy as np
import pytest
from PIL import Image

from fl_oracle.sim.data.base import DataError
from fl_oracle.sim.data.folders import load_dataset, scan_dataset
from fl_oracle.sim.data.shapes import write_shapes


@pytest.fixture(scope="module")
def shapes(tmp_path_factory):
    root = tmp_path_factory.mktemp("shapes")
    return write_shapes(root, per_class=6, size=24, classes=("circle", "square", "star"))


def test_domains_and_classes_are_the_folders(shapes):
    idx = scan_dataset(shapes)
    assert idx.domains == ("cartoon", "photo", "sketch")
    assert idx.classes == ("circle", "square", "star")
    # 6 per class, ceil(0.2 * 6) = 2 of them test
    assert [idx.count(d, "train") for d in idx.domains] == [12, 12, 12]
    assert [idx.count(d, "test") for d in idx.domains] == [6, 6, 6]
    labels = {lab for _, lab in idx.files["photo"]["train"]}
    assert labels == {0, 1, 2}


def test_load_resizes_and_records_provenance(shapes):
    idx = scan_dataset(shapes)
    data = load_dataset(idx, resolution=16)
    tr = data["sketch"]["train"]
    assert tuple(tr.images.shape) == (12, 3, 16, 16)
    assert tr.n_classes == 3 and tr.source == "real"
    assert "16x16" in tr.version and tr.path.endswith("sketch")
    # standardized per image
    flat = tr.images.reshape(12, -1).numpy()
    assert np.allclose(flat.mean(1), 0, atol=1e-4) and np.allclose(flat.std(1), 1, atol=1e-3)
    again = load_dataset(scan_dataset(shapes), resolution=16)
    assert again["sketch"]["train"].sha256 == tr.sha256
    other = load_dataset(scan_dataset(shapes, seed=1), resolution=16)
    assert other["sketch"]["train"].sha256 != tr.sha256  # another seeded split


def test_split_file_and_split_folders(shapes, tmp_path):
    idx = scan_dataset(shapes)
    rows = ["path,split"]
    for d in idx.domains:
        for s in ("train", "test"):
            for f, _ in idx.files[d][s]:
                keep = "test" if f.name.endswith("_0000.png") else "train"
                rows.append(f"{f.relative_to(shapes)},{keep}")
    sf = tmp_path / "split.csv"
    sf.write_text("\n".join(rows) + "\n")
    fixed = scan_dataset(shapes, split_file=sf)
    assert fixed.count("photo", "test") == 3 and fixed.count("photo", "train") == 15
    sf.write_text("\n".join(rows[:-1]) + "\n")
    with pytest.raises(DataError, match="is not listed"):
        scan_dataset(shapes, split_file=sf)
    # DIR/<domain>/{train,test}/<class>/ is taken as the split
    root = tmp_path / "ds"
    for s, n in (("train", 3), ("test", 2)):
        for c in ("a", "b"):
            (root / "dom" / s / c).mkdir(parents=True)
            for i in range(n):
                Image.new("L", (10, 12), color=40 * i).save(root / "dom" / s / c / f"{i}.png")
    idx2 = scan_dataset(root)
    assert idx2.split_rule == "folders"
    assert (idx2.count("dom", "train"), idx2.count("dom", "test")) == (6, 4)
    data = load_dataset(idx2, resolution=8)
    assert tuple(data["dom"]["train"].images.shape) == (6, 1, 8, 8)  # all grey: one channel


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda r: None, "does not exist"),
        (lambda r: r.mkdir(), "no domain folders"),
        (lambda r: (r / "dom" / "cls").mkdir(parents=True), "no images"),
        (lambda r: (r / "own" / "cls").mkdir(parents=True), "reserved name"),
        (lambda r: (r / "+++" / "cls").mkdir(parents=True), "not usable"),
    ],
)
def test_unusable_folders_are_refused_in_one_line(tmp_path, make, match):
    root = tmp_path / "ds"
    make(root)
    with pytest.raises(DataError, match=match) as info:
        scan_dataset(root)
    assert "\n" not in str(info.value)


def test_an_unreadable_image_is_named(tmp_path):
    (tmp_path / "d" / "c").mkdir(parents=True)
    for i in range(3):
        Image.new("RGB", (8, 8)).save(tmp_path / "d" / "c" / f"{i}.png")
    (tmp_path / "d" / "c" / "3.png").write_bytes(b"not a png")
    with pytest.raises(DataError, match="3.png: not a readable image"):
        load_dataset(scan_dataset(tmp_path), resolution=8)


def test_split_files_and_split_folders_that_contradict_themselves_are_refused(shapes, tmp_path):
    idx = scan_dataset(shapes)
    rows = ["path,split"] + [
        f"{f.relative_to(shapes)},{s}" for d in idx.domains for s in ("train", "test")
        for f, _ in idx.files[d][s]
    ]  # fmt: skip
    sf = tmp_path / "split.csv"
    first = rows[1].split(",")[0]
    for extra, needle in (
        ([f"{first},test"], r"is listed again \(line 2\)"),  # one path, two splits
        (["photo/circle/nope.png,train"], "is not an image of the dataset"),
        (["../outside.png,train"], "lies outside"),
    ):
        sf.write_text("\n".join(rows + extra) + "\n")
        with pytest.raises(DataError, match=needle) as info:
            scan_dataset(shapes, split_file=sf)
        assert "\n" not in str(info.value)
    # a domain with train/ but no test/ is not a domain whose classes are named train
    (tmp_path / "ds" / "dom" / "train" / "a").mkdir(parents=True)
    Image.new("RGB", (8, 8)).save(tmp_path / "ds" / "dom" / "train" / "a" / "0.png")
    with pytest.raises(DataError, match="has train/ but no test/"):
        scan_dataset(tmp_path / "ds")


def test_an_image_too_large_to_decode_is_named_in_one_line(tmp_path, monkeypatch):
    # PIL refuses an image over twice MAX_IMAGE_PIXELS (a 14,000 x 14,000 PNG by default);
    # a lowered limit makes a 40 x 40 image that image
    (tmp_path / "d" / "c").mkdir(parents=True)
    for i in range(3):
        Image.new("RGB", (8, 8)).save(tmp_path / "d" / "c" / f"{i}.png")
    Image.new("RGB", (40, 40)).save(tmp_path / "d" / "c" / "3.png")
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 500)
    with pytest.raises(DataError, match="3.png: too large to decode safely") as info:
        load_dataset(scan_dataset(tmp_path), resolution=8)
    assert "\n" not in str(info.value)


def test_folder_names_of_other_benchmarks_are_taken_as_they_are(tmp_path):
    # Office-Home's "Real World", class folders with spaces: the domain becomes Real_World
    for dom in ("Real World", "Art"):
        for cls in ("Alarm Clock", "back pack"):
            (tmp_path / dom / cls).mkdir(parents=True)
            for i in range(3):
                Image.new("RGB", (9, 7), color=(30 * i, 0, 0)).save(
                    tmp_path / dom / cls / f"{i}.jpg"
                )
    idx = scan_dataset(tmp_path)
    assert idx.domains == ("Art", "Real_World") and idx.classes == ("Alarm Clock", "back pack")
    data = load_dataset(idx, resolution=8)
    assert data["Real_World"]["train"].path.endswith("Real World")
    (tmp_path / "Real_World" / "x").mkdir(parents=True)
    with pytest.raises(DataError, match="both give the domain name 'Real_World'"):
        scan_dataset(tmp_path)


def test_only_what_the_federation_uses_is_decoded(shapes):
    idx = scan_dataset(shapes)
    lim = {"photo": {"train": 5, "test": None}}
    a = load_dataset(idx, resolution=8, limit=lim, seed=3)
    b = load_dataset(idx, resolution=8, limit=lim, seed=3)
    c = load_dataset(idx, resolution=8, limit=lim, seed=4)
    assert len(a["photo"]["train"]) == 5 and len(a["photo"]["test"]) == 6
    assert len(a["sketch"]["train"]) == 12  # no cap
    assert a["photo"]["train"].sha256 == b["photo"]["train"].sha256
    assert a["photo"]["train"].sha256 != c["photo"]["train"].sha256


def test_split_folders_with_a_split_file_keep_their_classes(tmp_path):
    root = tmp_path / "ds"
    rows = ["path,split"]
    for s in ("train", "test"):
        for c in ("cat", "dog"):
            (root / "A" / s / c).mkdir(parents=True)
            for i in range(2):
                f = root / "A" / s / c / f"{i}.png"
                Image.new("RGB", (6, 6)).save(f)
                rows.append(f"{f.relative_to(root)},{'test' if i == 0 else 'train'}")
    (root / "split.csv").write_text("\n".join(rows) + "\n")
    idx = scan_dataset(root, split_file=root / "split.csv")
    assert idx.classes == ("cat", "dog")  # not ("test", "train")
    assert idx.count("A", "train") == 4 and idx.count("A", "test") == 4


def test_archive_metadata_is_not_an_image_and_16_bit_grey_keeps_its_range(tmp_path):
    (tmp_path / "d" / "c").mkdir(parents=True)
    (tmp_path / "d" / "__MACOSX").mkdir()
    (tmp_path / "d" / "__MACOSX" / "x.png").write_bytes(b"junk")
    (tmp_path / "d" / "c" / "._0.png").write_bytes(b"junk")
    ramp = (np.arange(64, dtype=np.uint16).reshape(8, 8) * 900).astype(np.uint16)
    for i in range(3):
        Image.fromarray(ramp).save(tmp_path / "d" / "c" / f"{i}.png")
    idx = scan_dataset(tmp_path)
    assert idx.count("d", "train") + idx.count("d", "test") == 3
    x = load_dataset(idx, resolution=8, standardize=False)["d"]["train"].images
    assert x.shape[1] == 1 and float(x.min()) == 0.0 and float(x.max()) == 1.0
    assert len(np.unique(x.numpy())) > 32  # a ramp, not clipped to white
