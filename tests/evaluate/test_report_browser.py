"""The HTML report renders in headless Chromium with its plots visible (tier `browser`)."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from services.evaluate.columns import ColumnMap
from services.evaluate.passk import Aggregate
from services.evaluate.report import render
from tests.evaluate.test_metrics import _record

pytestmark = pytest.mark.browser
PLOT_BLUE = (0x3B, 0x6F, 0xD8)


def decode_png(data: bytes) -> tuple[int, int, list[bytes]]:
    """Width, height and raw RGB(A) rows of an 8-bit truecolour PNG (what Chromium writes)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width, height, channels = 8, b"", 0, 0, 3
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and colour in (2, 6)
            channels = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw, stride, rows, prev = zlib.decompress(idat), width * channels, [], bytearray(width * channels)
    for y in range(height):
        filter_type, line = (
            raw[y * (stride + 1)],
            bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)]),
        )
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b, c = prev[i], prev[i - channels] if i >= channels else 0
            if filter_type == 1:
                line[i] = (line[i] + a) & 255
            elif filter_type == 2:
                line[i] = (line[i] + b) & 255
            elif filter_type == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif filter_type == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, [bytes(r[i] for i in range(len(r)) if i % channels < 3) for r in rows]


def test_report_renders_with_visible_plots(tmp_path: Path) -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("Debian chromium is not installed (apt-get install -y chromium)")
    agg = Aggregate(ColumnMap())
    for i in range(300):
        agg.add({**_record(f"p{i // 4}", i % 3 == 0, "aime" if i % 2 else "math"), "reward": (i % 7) / 6})
    summary = {"grader": {"name": "math", "version": "1", "config_hash": "abc"}, **agg.summary()}
    page = tmp_path / "report.html"
    page.write_text(render(summary, agg))
    text = page.read_text()
    assert "<script" not in text and re.search(r"(src|href)=[\"']?https?:", text) is None  # self-contained
    shot = tmp_path / "shot.png"
    done = subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--no-first-run",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--hide-scrollbars",
            "--window-size=1280,1400",
            f"--screenshot={shot}",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert shot.exists(), done.stderr[-2000:]
    width, height, rows = decode_png(shot.read_bytes())
    assert (width, height) == (1280, 1400)
    blue = sum(
        1
        for row in rows
        for x in range(0, len(row), 3)
        if all(abs(row[x + i] - PLOT_BLUE[i]) < 40 for i in range(3))
    )
    assert blue > 5000, f"only {blue} plot-coloured pixels: the plots did not render"
