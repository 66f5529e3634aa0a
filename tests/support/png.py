"""A small PNG reader (8-bit RGB or RGBA, not interlaced: what Chromium's screenshots are), and colour bands.

Pure Python on `zlib` and `struct`, so the browser test needs no imaging library.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_CHANNELS = {2: 3, 6: 4}


@dataclass(frozen=True)
class Image:
    width: int
    height: int
    channels: int
    rows: list[bytes]

    def pixel(self, x: int, y: int) -> tuple[int, int, int]:
        at = x * self.channels
        r, g, b = self.rows[y][at : at + 3]
        return r, g, b


def read_png(data: bytes) -> Image:
    if not data.startswith(_SIGNATURE):
        raise ValueError("not a PNG file")
    at, header, compressed = len(_SIGNATURE), None, bytearray()
    while at < len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        kind, body = data[at + 4 : at + 8], data[at + 8 : at + 8 + length]
        at += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            compressed += body
        elif kind == b"IEND":
            break
    if header is None:
        raise ValueError("PNG without IHDR")
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or colour not in _CHANNELS or interlace:
        raise ValueError(f"unsupported PNG: depth {depth}, colour type {colour}, interlace {interlace}")
    channels = _CHANNELS[colour]
    return Image(width, height, channels, _unfilter(zlib.decompress(bytes(compressed)), width * channels, channels))


def _unfilter(raw: bytes, stride: int, bpp: int) -> list[bytes]:
    rows: list[bytes] = []
    previous = bytes(stride)
    for y in range(len(raw) // (stride + 1)):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        if kind == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 0xFF
        elif kind == 2:
            line = bytearray((a + b) & 0xFF for a, b in zip(line, previous))
        elif kind == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + previous[i]) >> 1)) & 0xFF
        elif kind == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b = previous[i]
                c = previous[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        previous = bytes(line)
        rows.append(previous)
    return rows


@dataclass(frozen=True)
class Band:
    """Consecutive pixel rows holding a colour: where it is on the screenshot."""

    top: int
    bottom: int
    left: int
    right: int


def colour_bands(image: Image, colour: str, min_run: int = 6, min_height: int = 15) -> list[Band]:
    """Horizontal bands of rows with at least `min_run` pixels of exactly `colour` (#rrggbb), top to bottom,
    at least `min_height` rows tall (smaller marks, such as a legend's swatches, are left out)."""
    wanted = bytes.fromhex(colour.lstrip("#"))
    bands: list[Band] = []
    current: list[int] | None = None
    for y, row in enumerate(image.rows):
        xs = [x for x in range(image.width) if row[x * image.channels : x * image.channels + 3] == wanted]
        if len(xs) >= min_run:
            if current is None:
                current = [y, y, min(xs), max(xs)]
            else:
                current[1], current[2], current[3] = y, min(current[2], min(xs)), max(current[3], max(xs))
        elif current is not None:
            bands.append(Band(*current))
            current = None
    if current is not None:
        bands.append(Band(*current))
    return [band for band in bands if band.bottom - band.top + 1 >= min_height]
