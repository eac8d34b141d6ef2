"""Silero VAD's inputs: 16 kHz audio cut into chunks as ``faster-whisper`` feeds the model.

The model takes a batch of chunks, each 512 new samples after the 64 that end the chunk before
(zeros before the first), and carries its LSTM state ``h``, ``c`` (1 x 1 x 128 each) through
the batch in order; its output is one speech probability per chunk.

No recorded speech ships in any wheel this project reads, so the signal here is made: silence
with a little noise around a voiced stretch (a 120 to 180 Hz fundamental with vibrato and harmonics
falling as 1/k, its loudness rising and falling four times a second like syllables). It serves
to compare float implementations of the model, not to judge how well the model hears speech.

Example:
    >>> audio = signal(0.064)
    >>> chunks(audio).shape
    (2, 576)
"""

from __future__ import annotations

import numpy as np

RATE = 16_000
SAMPLES = 512
CONTEXT = 64
STATE = (1, 1, 128)


def signal(seconds: float, seed: int = 0) -> np.ndarray:
    """``seconds`` of the made signal (float32 in [-1, 1]): noise, then a voiced stretch from
    30% to 80% of the time, then noise; ``seed`` draws the noise and moves the fundamental
    (120 to 180 Hz)."""
    n = int(round(seconds * RATE)) // SAMPLES * SAMPLES
    t = np.arange(n) / RATE
    rng = np.random.default_rng(seed)
    audio = 0.003 * rng.standard_normal(n)
    voiced = (t >= 0.3 * seconds) & (t < 0.8 * seconds)
    f0 = 120.0 + 15.0 * (seed % 5)
    phase = 2 * np.pi * np.cumsum(f0 * (1 + 0.03 * np.sin(2 * np.pi * 5 * t))) / RATE
    tone = sum(np.sin(k * phase) / k for k in range(1, 12))
    loud = 0.5 * (1 - np.cos(2 * np.pi * 4 * t))
    audio += voiced * 0.2 * loud * tone
    return np.clip(audio, -1, 1).astype(np.float32)


def chunks(audio: np.ndarray) -> np.ndarray:
    """``audio`` (a multiple of 512 samples) as the model's ``(chunks, 576)`` input."""
    if audio.ndim != 1 or audio.size % SAMPLES:
        raise ValueError(f"audio of shape {audio.shape}: one axis, a multiple of {SAMPLES}")
    rows = audio.reshape(-1, SAMPLES)
    context = np.zeros((rows.shape[0], CONTEXT), np.float32)
    context[1:] = rows[:-1, -CONTEXT:]
    return np.ascontiguousarray(np.concatenate([context, rows], axis=1), np.float32)


def first_feeds(names: list[str], seconds: float = 1.024, seed: int = 0) -> dict[str, np.ndarray]:
    """The model's feeds for ``seconds`` of the signal from a zero state (input names in the
    model's order: the chunks, ``h``, ``c``)."""
    zero = np.zeros(STATE, np.float32)
    return {names[0]: chunks(signal(seconds, seed)), names[1]: zero, names[2]: zero.copy()}
