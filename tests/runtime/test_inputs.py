"""Inputs from files: .npy, .npz, images through every preprocessing and resize mode, and
calibration folders, each checked against a numpy computation."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from compiler.model.program import TensorSpec
from runtime.errors import FeedError
from runtime.inputs import (
    PREPROCESS,
    Resize,
    load_array,
    load_calibration,
    load_image,
    parse_resize,
    read_inputs,
)

MEAN = np.array([0.485, 0.456, 0.406], np.float32)
STD = np.array([0.229, 0.224, 0.225], np.float32)


def _rgb(tmp_path, w, h, name="img.png", seed=0):
    pixels = np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)
    path = tmp_path / name
    Image.fromarray(pixels, "RGB").save(path)
    return path, pixels


def _nchw(pixels):
    return pixels.astype(np.float32).transpose(2, 0, 1)[None]


@pytest.mark.parametrize("mode", sorted(PREPROCESS))
def test_each_preprocessing_matches_numpy(tmp_path, mode):
    path, pixels = _rgb(tmp_path, 6, 4)
    got = load_image(path, (1, 3, 4, 6), preprocess=mode)
    x = _nchw(pixels) / 255
    want = {
        "imagenet": (x - MEAN[:, None, None]) / STD[:, None, None],
        "unit": x,
        "symmetric": _nchw(pixels) / 127.5 - 1,
    }[mode]
    assert got.dtype == np.float32 and got.shape == (1, 3, 4, 6)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_short_side_and_centre_crop(tmp_path):
    # the short side is already 8: no resampling, only the centred crop
    path, pixels = _rgb(tmp_path, 12, 8)
    got = load_image(
        path, (-1, 3, -1, -1), preprocess="unit", resize=parse_resize("short:8,crop:6")
    )
    np.testing.assert_allclose(got, _nchw(pixels[1:7, 3:9]) / 255, atol=1e-7)
    # a real resize: Pillow's bilinear resampling to 16x24, then the crop in numpy
    got = load_image(
        path, (1, 3, 10, 10), preprocess="unit", resize=parse_resize("short:16,crop:10")
    )
    big = np.asarray(Image.open(path).convert("RGB").resize((24, 16), Image.Resampling.BILINEAR))
    np.testing.assert_allclose(got, _nchw(big[3:13, 7:17]) / 255, atol=1e-7)


def test_letterbox_pads_with_black_around_the_centred_image(tmp_path):
    path, pixels = _rgb(tmp_path, 10, 6)
    got = load_image(path, (1, 3, -1, -1), preprocess="unit", resize=parse_resize("letterbox:10"))
    want = np.zeros((10, 10, 3), np.uint8)
    want[2:8] = pixels
    np.testing.assert_allclose(got, _nchw(want) / 255, atol=1e-7)


def test_width_by_height_and_the_models_static_size(tmp_path):
    path, _ = _rgb(tmp_path, 9, 7)
    small = np.asarray(Image.open(path).resize((5, 3), Image.Resampling.BILINEAR))
    for resize, dims in ((parse_resize("5x3"), (1, 3, -1, -1)), (None, (1, 3, 3, 5))):
        got = load_image(path, dims, preprocess="unit", resize=resize)
        np.testing.assert_allclose(got, _nchw(small) / 255, atol=1e-7)
    # free height and width and no --resize: the image's own size
    assert load_image(path, (-1, 3, -1, -1)).shape == (1, 3, 7, 9)


def test_a_one_channel_model_gets_grayscale(tmp_path):
    path, _ = _rgb(tmp_path, 4, 4)
    gray = np.asarray(Image.open(path).convert("L"), np.float32)
    got = load_image(path, (1, 1, 4, 4), preprocess="imagenet")
    np.testing.assert_allclose(got[0, 0], (gray / 255 - 0.485) / 0.229, rtol=1e-6, atol=1e-6)


def test_image_inputs_that_cannot_fit_the_model_are_refused(tmp_path):
    path, _ = _rgb(tmp_path, 4, 4)
    with pytest.raises(FeedError, match="batch of 1; the input's batch is 2"):
        load_image(path, (2, 3, 4, 4))
    with pytest.raises(FeedError, match="1 or 3 channels; the input has 4"):
        load_image(path, (1, 4, 4, 4))
    with pytest.raises(FeedError, match=r"--resize gives 6x6, the input is 4x4"):
        load_image(path, (1, 3, 4, 4), resize=parse_resize("letterbox:6"))
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"not a png")
    with pytest.raises(FeedError, match=r"--input .*bad.png: not a readable image"):
        load_image(bad)


@pytest.mark.parametrize("text", ["crop:4", "short:4,crop:8", "letterbox:0", "4x", "short:x"])
def test_bad_resize_modes_are_refused(text):
    with pytest.raises(ValueError, match="expected short:S"):
        parse_resize(text)
    assert parse_resize("short:256,crop:224") == Resize(short=256, crop=224)


def test_npz_feeds_are_matched_by_name(tmp_path):
    specs = [TensorSpec("a", (1, 2), "float32"), TensorSpec("b", (3,), "int64")]
    a, b = np.ones((1, 2), np.float32), np.arange(3)
    np.savez(tmp_path / "f.npz", a=a, b=b)
    feeds = read_inputs([str(tmp_path / "f.npz")], specs)
    assert sorted(feeds) == ["a", "b"] and np.array_equal(feeds["b"], b)
    np.savez(tmp_path / "missing.npz", a=a)
    with pytest.raises(FeedError, match=r"missing.npz: no array for input\(s\) 'b'"):
        read_inputs([str(tmp_path / "missing.npz")], specs)
    np.savez(tmp_path / "extra.npz", a=a, b=b, c=b)
    with pytest.raises(
        FeedError, match=r"extra.npz: arrays 'c' name no input \(the model's inputs: a, b\)"
    ):
        read_inputs([str(tmp_path / "extra.npz")], specs)


def test_empty_truncated_pickled_and_non_numeric_files_are_refused_naming_the_file(tmp_path):
    empty = tmp_path / "empty.npy"
    empty.write_bytes(b"")
    with pytest.raises(FeedError, match=r"--input .*empty.npy: the file is empty"):
        load_array(empty)
    full = tmp_path / "full.npy"
    np.save(full, np.zeros((64, 64), np.float32))
    cut = tmp_path / "cut.npy"
    cut.write_bytes(full.read_bytes()[:200])
    with pytest.raises(FeedError, match=r"--input .*cut.npy: not a readable .npy/.npz file"):
        load_array(cut)
    obj = tmp_path / "obj.npy"
    np.save(obj, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(FeedError, match=r"--input .*obj.npy: not a readable"):
        load_array(obj)
    text = tmp_path / "text.npy"
    np.save(text, np.array(["a", "b"]))
    with pytest.raises(FeedError, match=r"--input .*text.npy: holds <U1 values"):
        load_array(text)
    cut_npz = tmp_path / "cut.npz"
    np.savez(tmp_path / "ok.npz", x=np.zeros((64, 64)))
    cut_npz.write_bytes((tmp_path / "ok.npz").read_bytes()[:300])
    with pytest.raises(FeedError, match=r"cut.npz"):
        read_inputs([str(cut_npz)], [TensorSpec("x", (64, 64), "float64")])


def test_calibration_from_a_folder_of_images(tmp_path):
    folder = tmp_path / "calib"
    folder.mkdir()
    pixels = [_rgb(folder, 8, 8, f"{k}.png", seed=k)[1] for k in range(3)]
    (folder / "notes.txt").write_text("not an image")
    spec = TensorSpec("x", (1, 3, 8, 8), "float32")
    got = load_calibration(folder, spec, preprocess="symmetric")
    want = np.concatenate([_nchw(p) / 127.5 - 1 for p in pixels])
    np.testing.assert_allclose(got, want, atol=1e-6)
    # images of several sizes need --resize when the model's size is free
    _rgb(folder, 5, 8, "3.png")
    with pytest.raises(FeedError, match="come out at 2 sizes"):
        load_calibration(folder, TensorSpec("x", (-1, 3, -1, -1), "float32"))
    assert load_calibration(folder, TensorSpec("x", (-1, 3, -1, -1), "float32"),
                            resize=parse_resize("4x4")).shape == (4, 3, 4, 4)  # fmt: skip
    np.save(tmp_path / "c.npy", want)
    np.testing.assert_array_equal(load_calibration(tmp_path / "c.npy", spec), want)
