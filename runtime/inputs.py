"""Model inputs from files: arrays, archives and images, and the shapes they give a model.

``vtac run --input`` takes, for each input:

* ``x.npy`` (a single-input model) or ``NAME=x.npy``;
* ``feeds.npz``: one array per input, matched by name (a missing or an extra name is refused);
* an image (``.jpg``, ``.jpeg``, ``.png``, ``.bmp``, ``.gif``, ``.tif``, ``.tiff``, ``.webp``),
  read with Pillow and turned into an NCHW float32 batch of one: the model's channel count picks
  grayscale (1) or RGB (3), ``--resize`` (:func:`parse_resize`) its size (by default the model's
  static height and width, else the image's own), ``--preprocess`` (:data:`PREPROCESS`) its
  values.

``.npy`` and ``.npz`` files are read with ``allow_pickle=False``; an empty, truncated or
non-numeric file is refused with one line naming the file. ``--calibrate`` takes an ``.npy``, an
``.npz`` or a folder of images (:func:`load_calibration`). Free (symbolic) dimensions of the
model come from the arrays read, as onnxruntime takes them from its feeds
(:func:`feed_shapes`), or from ``--input-shape NAME=D0,D1,...`` (:func:`parse_input_shape`).

Example:
    >>> parse_resize("short:256,crop:224")
    Resize(short=256, crop=224, letterbox=None, size=None)
    >>> parse_input_shape("x=1,3,224,224")
    ('x', (1, 3, 224, 224))
"""

from __future__ import annotations

import argparse
import os
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from runtime.errors import FeedError

#: File suffixes read as images (with Pillow).
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".gif", ".tif", ".tiff", ".webp")

#: ``--preprocess`` modes: per-channel ``(mean, std)`` applied to pixel values in ``[0, 1]``.
PREPROCESS: dict[str, tuple[tuple[float, ...], tuple[float, ...]]] = {
    # torchvision's ImageNet normalization
    "imagenet": ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225)),
    # pixels / 255
    "unit": ((0.0,), (1.0,)),
    # pixels / 127.5 - 1, i.e. [-1, 1]
    "symmetric": ((0.5,), (0.5,)),
}


@dataclass(frozen=True)
class Resize:
    """How an image is brought to the model's size (see :func:`parse_resize`)."""

    short: int | None = None
    crop: int | None = None
    letterbox: int | None = None
    size: tuple[int, int] | None = None  # (width, height)


def parse_resize(text: str) -> Resize:
    """``short:S[,crop:C]`` (shorter side to S keeping the aspect ratio, then a centred CxC
    crop), ``letterbox:L`` (longer side to L keeping the aspect ratio, centred on an LxL black
    canvas) or ``WxH`` (stretched to W by H).

    Example:
        >>> parse_resize("letterbox:320"), parse_resize("64x48").size
        (Resize(short=None, crop=None, letterbox=320, size=None), (64, 48))
        >>> parse_resize("crop:224")
        Traceback (most recent call last):
        ...
        ValueError: --resize crop:224: expected short:S[,crop:C], letterbox:L or WxH
    """
    bad = ValueError(f"--resize {text}: expected short:S[,crop:C], letterbox:L or WxH")
    parts = dict(p.partition(":")[::2] for p in text.lower().split(","))
    try:
        if "x" in text.lower() and ":" not in text:
            w, h = (int(v) for v in text.lower().split("x"))
            out = Resize(size=(w, h))
        elif set(parts) == {"letterbox"}:
            out = Resize(letterbox=int(parts["letterbox"]))
        elif set(parts) in ({"short"}, {"short", "crop"}):
            crop = int(parts["crop"]) if "crop" in parts else None
            out = Resize(short=int(parts["short"]), crop=crop)
        else:
            raise bad
    except ValueError:
        raise bad from None
    values = [v for v in (out.short, out.crop, out.letterbox, *(out.size or ())) if v is not None]
    if min(values) < 1 or (out.crop is not None and out.short is not None and out.crop > out.short):
        raise bad
    return out


def parse_input_shape(text: str) -> tuple[str, tuple[int, ...]]:
    """``NAME=D0,D1,...`` with positive dims (``--input-shape``).

    Example:
        >>> parse_input_shape("x=1,0")
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: 'x=1,0': expected NAME=D0,D1,... with positive dims
    """
    name, sep, dims = text.partition("=")
    try:
        shape = tuple(int(d) for d in dims.split(",")) if sep else ()
    except ValueError:
        shape = ()
    if not name or not shape or min(shape) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected NAME=D0,D1,... with positive dims")
    return name, shape


def add_input_shape_option(p: argparse.ArgumentParser) -> None:
    """``--input-shape NAME=D0,D1,...`` (repeatable) on a ``vtac`` command."""
    p.add_argument(
        "--input-shape",
        type=parse_input_shape,
        action="append",
        default=[],
        metavar="NAME=D0,D1,...",
        help="static shape of an input with symbolic dims (must agree with its fixed dims)",
    )


def add_image_options(p: argparse.ArgumentParser) -> None:
    """``--preprocess`` and ``--resize``: how image inputs become arrays."""
    p.add_argument(
        "--preprocess", choices=sorted(PREPROCESS), default="imagenet",
        help="image inputs: imagenet (/255, ImageNet mean and std), unit (/255) or symmetric "
        "(/127.5 - 1) (default imagenet)",
    )  # fmt: skip
    p.add_argument(
        "--resize", type=_resize_arg, default=None, metavar="MODE",
        help="image inputs: short:256,crop:224 | letterbox:320 | WxH (default: the model's "
        "static height and width, else the image's own size)",
    )  # fmt: skip


def _resize_arg(text: str) -> Resize:
    try:
        return parse_resize(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix(f"--resize {text}: ")) from None


# ---- arrays -------------------------------------------------------------------------------------


def load_array(path: str | os.PathLike, what: str = "--input") -> np.ndarray:
    """One numeric array from an ``.npy`` file (no pickles), refused naming the file when it is
    missing, empty, truncated, an archive or not numeric.

    Example:
        >>> load_array("no-such.npy")
        Traceback (most recent call last):
        ...
        runtime.errors.FeedError: --input no-such.npy: no such file
    """
    where = f"{what} {os.fspath(path)}"
    arrays = _load(path, where)
    if not isinstance(arrays, np.ndarray):
        raise FeedError(f"{where}: an .npz archive, not one .npy array")
    return _numeric(arrays, where)


def load_archive(path: str | os.PathLike, what: str = "--input") -> dict[str, np.ndarray]:
    """Every array of an ``.npz`` archive by name (no pickles; refused like :func:`load_array`)."""
    where = f"{what} {os.fspath(path)}"
    arrays = _load(path, where)
    if isinstance(arrays, np.ndarray):
        raise FeedError(f"{where}: one .npy array, not an .npz archive of named arrays")
    try:
        with arrays:
            out = {name: _numeric(arrays[name], f"{where} ({name})") for name in arrays.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
        raise FeedError(f"{where}: truncated or corrupted archive ({e})") from None
    if not out:
        raise FeedError(f"{where}: the archive holds no arrays")
    return out


def _load(path: str | os.PathLike, where: str) -> Any:
    p = Path(path)
    if not p.is_file():
        raise FeedError(f"{where}: no such file")
    if p.stat().st_size == 0:
        raise FeedError(f"{where}: the file is empty")
    try:
        return np.load(p, allow_pickle=False)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise FeedError(f"{where}: not a readable .npy/.npz file ({first})") from None


def _numeric(arr: np.ndarray, where: str) -> np.ndarray:
    if arr.dtype.kind not in "biuf":
        raise FeedError(f"{where}: holds {arr.dtype} values; inputs are numeric arrays")
    return arr


# ---- images -------------------------------------------------------------------------------------


def is_image(path: str | os.PathLike) -> bool:
    """Whether ``path`` is read as an image (by its suffix)."""
    return Path(path).suffix.lower() in IMAGE_SUFFIXES


def load_image(
    path: str | os.PathLike,
    dims: Sequence[int] = (-1, 3, -1, -1),
    *,
    preprocess: str = "imagenet",
    resize: Resize | None = None,
    what: str = "--input",
) -> np.ndarray:
    """An image as a float32 ``(1, C, H, W)`` batch for an input declared ``dims`` (``-1`` for a
    free dimension): ``C`` 1 is grayscale, 3 (or free) RGB; without ``resize`` a static ``H, W``
    is the size the image is stretched to.

    Example:
        >>> load_image("missing.png")
        Traceback (most recent call last):
        ...
        runtime.errors.FeedError: --input missing.png: no such file
    """
    from PIL import Image, UnidentifiedImageError

    where = f"{what} {os.fspath(path)}"
    if not Path(path).is_file():
        raise FeedError(f"{where}: no such file")
    if len(dims) != 4:
        raise FeedError(f"{where}: an image feeds a 4-d NCHW input, the input has rank {len(dims)}")
    n, c, h, w = (int(d) for d in dims)
    if n not in (-1, 1):
        raise FeedError(f"{where}: an image is a batch of 1; the input's batch is {n}")
    if c not in (-1, 1, 3):
        raise FeedError(f"{where}: an image gives 1 or 3 channels; the input has {c}")
    if preprocess not in PREPROCESS:
        raise FeedError(f"{where}: unknown preprocessing {preprocess!r} ({', '.join(PREPROCESS)})")
    try:
        with Image.open(path) as im:
            img = im.convert("L" if c == 1 else "RGB")
    except (UnidentifiedImageError, OSError, ValueError) as e:
        raise FeedError(f"{where}: not a readable image ({e})") from None
    img = _resized(img, resize, (w, h) if w > 0 and h > 0 else None)
    pixels = np.asarray(img, np.float32).reshape(img.size[1], img.size[0], -1)
    mean, std = (np.asarray(v, np.float32) for v in PREPROCESS[preprocess])
    if pixels.shape[2] == 1:
        mean, std = mean[:1], std[:1]  # grayscale: the first channel's statistics
    values = (pixels / np.float32(255.0) - mean) / std
    out = values.transpose(2, 0, 1)[None]
    if h > 0 and w > 0 and out.shape[2:] != (h, w):
        raise FeedError(
            f"{where}: --resize gives {out.shape[3]}x{out.shape[2]}, the input is {w}x{h}"
        )
    return np.ascontiguousarray(out, np.float32)


def _resized(img: Any, resize: Resize | None, model_wh: tuple[int, int] | None) -> Any:
    from PIL import Image

    bilinear = Image.Resampling.BILINEAR
    if resize is None:
        return img if model_wh is None or img.size == model_wh else img.resize(model_wh, bilinear)
    if resize.size is not None:
        return img if img.size == resize.size else img.resize(resize.size, bilinear)
    w, h = img.size
    if resize.short is not None:
        k = resize.short / min(w, h)
        size = (max(1, round(w * k)), max(1, round(h * k)))
        img = img if size == img.size else img.resize(size, bilinear)
        if resize.crop is None:
            return img
        w, h = img.size
        left, top = (w - resize.crop) // 2, (h - resize.crop) // 2
        return img.crop((left, top, left + resize.crop, top + resize.crop))
    assert resize.letterbox is not None
    side = resize.letterbox
    k = side / max(w, h)
    size = (max(1, round(w * k)), max(1, round(h * k)))
    img = img if size == img.size else img.resize(size, bilinear)
    canvas = Image.new(img.mode, (side, side))
    canvas.paste(img, ((side - size[0]) // 2, (side - size[1]) // 2))
    return canvas


def load_image_folder(
    folder: str | os.PathLike,
    dims: Sequence[int],
    *,
    preprocess: str = "imagenet",
    resize: Resize | None = None,
    what: str = "--calibrate",
) -> np.ndarray:
    """Every image of ``folder`` (sorted by name), preprocessed as :func:`load_image`, stacked
    along the batch axis; all must come out at one size."""
    paths = sorted(p for p in Path(folder).iterdir() if p.is_file() and is_image(p))
    if not paths:
        raise FeedError(f"{what} {os.fspath(folder)}: no image files ({', '.join(IMAGE_SUFFIXES)})")
    one = (1, *tuple(dims)[1:]) if len(dims) == 4 else tuple(dims)
    images = [load_image(p, one, preprocess=preprocess, resize=resize, what=what) for p in paths]
    sizes = {im.shape for im in images}
    if len(sizes) > 1:
        raise FeedError(
            f"{what} {os.fspath(folder)}: the images come out at {len(sizes)} sizes "
            f"({', '.join(f'{s[3]}x{s[2]}' for s in sorted(sizes))}); give --resize"
        )
    return np.concatenate(images)


# ---- --input and --calibrate --------------------------------------------------------------------


def read_inputs(
    specs: Sequence[str],
    inputs: Sequence[Any],
    *,
    preprocess: str = "imagenet",
    resize: Resize | None = None,
) -> dict[str, np.ndarray]:
    """The feeds of ``--input`` arguments for the model's ``inputs`` (objects with ``name`` and
    ``shape``; ``-1`` marks a free dimension): ``x.npy``/``IMAGE`` for a single-input model,
    ``NAME=FILE``, or ``feeds.npz`` whose arrays are matched to the inputs by name.

    Example:
        >>> from compiler.model.program import TensorSpec
        >>> read_inputs(["nope.npy"], [TensorSpec("a", (1,), "float32"),
        ...                            TensorSpec("b", (1,), "float32")])
        Traceback (most recent call last):
        ...
        runtime.errors.FeedError: --input nope.npy: the model has 2 inputs (a, b): write NAME=FILE
    """
    by_name = {s.name: s for s in inputs}
    names = list(by_name)
    feeds: dict[str, np.ndarray] = {}

    def put(name: str, arr: np.ndarray, spec: str) -> None:
        if name in feeds:
            raise FeedError(f"--input {spec}: input {name!r} is given twice")
        feeds[name] = arr

    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or name not in names:
            if Path(spec).suffix.lower() == ".npz" and not sep:
                archive = load_archive(spec)
                extra = sorted(set(archive) - set(names))
                if extra:
                    raise FeedError(
                        f"--input {spec}: arrays {', '.join(map(repr, extra))} name no input "
                        f"(the model's inputs: {', '.join(names)})"
                    )
                for n, arr in archive.items():
                    put(n, arr, spec)
                missing = [n for n in names if n not in archive and n not in feeds]
                if missing and len(specs) == 1:
                    raise FeedError(
                        f"--input {spec}: no array for input(s) {', '.join(map(repr, missing))}"
                    )
                continue
            if len(names) != 1:
                raise FeedError(
                    f"--input {spec}: the model has {len(names)} inputs ({', '.join(names)}): "
                    "write NAME=FILE"
                )
            name, path = names[0], spec
        if is_image(path):
            dims = tuple(by_name[name].shape)
            arr = load_image(path, dims, preprocess=preprocess, resize=resize, what="--input")
        else:
            arr = load_array(path, "--input")
        put(name, arr, spec)
    return feeds


def load_calibration(
    path: str | os.PathLike,
    spec: Any,
    *,
    preprocess: str = "imagenet",
    resize: Resize | None = None,
) -> np.ndarray:
    """``--calibrate`` data for the single input ``spec``: an ``.npy`` array, an ``.npz``
    archive (the array named after the input, or its only array) or a folder of images."""
    where = f"--calibrate {os.fspath(path)}"
    if Path(path).is_dir():
        return load_image_folder(path, spec.shape, preprocess=preprocess, resize=resize)
    if Path(path).suffix.lower() == ".npz":
        archive = load_archive(path, "--calibrate")
        if spec.name in archive:
            return archive[spec.name]
        if len(archive) == 1:
            return next(iter(archive.values()))
        raise FeedError(f"{where}: no array named {spec.name!r} among {', '.join(sorted(archive))}")
    if is_image(path):
        raise FeedError(f"{where}: give a folder of images, an .npy or an .npz")
    return load_array(path, "--calibrate")


def feed_shapes(declared: Sequence[Any], feeds: Mapping[str, Any]) -> dict[str, tuple[int, ...]]:
    """The shape of every declared input's feed, for resolving free dimensions; an unknown,
    missing or non-array feed is refused naming the input."""
    if not isinstance(feeds, Mapping):
        raise FeedError(f"feeds must be a dict of input name to array, got {type(feeds).__name__}")
    names = [d.name for d in declared]
    for name in feeds:
        if name not in names:
            raise FeedError(f"unknown input {name!r} (the model's inputs: {', '.join(names)})")
    shapes = {}
    for d in declared:
        if d.name not in feeds:
            raise FeedError(f"input {d.name!r} is not fed (declared shape {d.text()})")
        arr = feeds[d.name]
        if not isinstance(arr, np.ndarray):
            raise FeedError(
                f"input {d.name!r} is a {type(arr).__name__}, expected a numpy array of shape "
                f"{d.text()}"
            )
        shapes[d.name] = tuple(arr.shape)
    return shapes


def free_dims(inputs: Sequence[Any]) -> list[str]:
    """``"input 'x' dimension 0"`` for every free (``-1``) dimension of ``inputs``."""
    return [
        f"input {s.name!r} dimension {k}" for s in inputs for k, d in enumerate(s.shape) if d < 0
    ]


__all__ = [
    "IMAGE_SUFFIXES",
    "PREPROCESS",
    "Resize",
    "add_image_options",
    "add_input_shape_option",
    "feed_shapes",
    "free_dims",
    "is_image",
    "load_array",
    "load_archive",
    "load_calibration",
    "load_image",
    "load_image_folder",
    "parse_input_shape",
    "parse_resize",
    "read_inputs",
]
