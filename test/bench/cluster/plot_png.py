#!/usr/bin/env python3
"""A line plot as PNG in pure Python (zlib + struct), for machines without gnuplot or matplotlib.

  plot_png.py CSV PNG [TITLE]
CSV: a header "x,name1,name2,..." then numeric rows (bench_summary.py's bound-over-time series).
Draws every column against the first, on axes from 0 to the largest values, with tick labels and
a legend in a built-in 3x5 pixel font (scaled 2x): kube-scheduler columns in reds, onequeue in
blues, anything else grey. bench_summary.py uses it only when gnuplot is missing.
"""
import struct
import sys
import zlib

# 3x5 glyphs, one string of 5 rows of 3 bits ('#' = ink) per character.
FONT = {
    "0": "###,#.#,#.#,#.#,###", "1": ".#.,##.,.#.,.#.,###", "2": "###,..#,###,#..,###",
    "3": "###,..#,###,..#,###", "4": "#.#,#.#,###,..#,..#", "5": "###,#..,###,..#,###",
    "6": "###,#..,###,#.#,###", "7": "###,..#,..#,.#.,.#.", "8": "###,#.#,###,#.#,###",
    "9": "###,#.#,###,..#,###", "-": "...,...,###,...,...", ".": "...,...,...,...,.#.",
    ",": "...,...,...,.#.,#..", ":": "...,.#.,...,.#.,...", "/": "..#,..#,.#.,#..,#..",
    "(": ".#.,#..,#..,#..,.#.", ")": ".#.,..#,..#,..#,.#.", " ": "...,...,...,...,...",
    "a": "###,..#,###,#.#,###", "b": "#..,#..,###,#.#,###", "c": "...,###,#..,#..,###",
    "d": "..#,..#,###,#.#,###", "e": "###,#.#,###,#..,###", "f": ".##,#..,###,#..,#..",
    "g": "###,#.#,###,..#,##.", "h": "#..,#..,###,#.#,#.#", "i": ".#.,...,.#.,.#.,.#.",
    "j": "..#,...,..#,#.#,###", "k": "#..,#.#,##.,#.#,#.#", "l": "#..,#..,#..,#..,.##",
    "m": "...,###,###,#.#,#.#", "n": "...,##.,#.#,#.#,#.#", "o": "...,###,#.#,#.#,###",
    "p": "###,#.#,###,#..,#..", "q": "###,#.#,###,..#,..#", "r": "...,###,#..,#..,#..",
    "s": "###,#..,###,..#,###", "t": "#..,###,#..,#..,.##", "u": "...,#.#,#.#,#.#,###",
    "v": "...,#.#,#.#,#.#,.#.", "w": "...,#.#,###,###,#.#", "x": "...,#.#,.#.,#.#,#.#",
    "y": "#.#,#.#,###,..#,###", "z": "...,###,.#.,#..,###",
}
SCALE = 2
REDS = [(214, 39, 40), (255, 127, 14), (227, 119, 194)]
BLUES = [(31, 119, 180), (44, 160, 44), (23, 190, 207)]


class Canvas:
    def __init__(self, w, h):
        self.w, self.h = w, h
        self.px = bytearray(b"\xff" * (w * h * 3))

    def set(self, x, y, c):
        if 0 <= x < self.w and 0 <= y < self.h:
            i = (y * self.w + x) * 3
            self.px[i:i + 3] = bytes(c)

    def line(self, x0, y0, x1, y1, c, width=1):
        # Bresenham, thickened by a square brush.
        dx, dy = abs(x1 - x0), -abs(y1 - y0)
        sx, sy = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
        err = dx + dy
        while True:
            for ox in range(width):
                for oy in range(width):
                    self.set(x0 + ox - width // 2, y0 + oy - width // 2, c)
            if x0 == x1 and y0 == y1:
                return
            e2 = 2 * err
            if e2 >= dy:
                err += dy
                x0 += sx
            if e2 <= dx:
                err += dx
                y0 += sy

    def text(self, x, y, s, c=(0, 0, 0)):
        for ch in s.lower():
            rows = FONT.get(ch, FONT[" "]).split(",")
            for ry, row in enumerate(rows):
                for rx, bit in enumerate(row):
                    if bit == "#":
                        for a in range(SCALE):
                            for b in range(SCALE):
                                self.set(x + rx * SCALE + a, y + ry * SCALE + b, c)
            x += 4 * SCALE

    def png(self, path):
        raw = b"".join(b"\x00" + bytes(self.px[y * self.w * 3:(y + 1) * self.w * 3]) for y in range(self.h))

        def chunk(tag, data):
            return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

        with open(path, "wb") as f:
            f.write(b"\x89PNG\r\n\x1a\n")
            f.write(chunk(b"IHDR", struct.pack(">IIBBBBB", self.w, self.h, 8, 2, 0, 0, 0)))
            f.write(chunk(b"IDAT", zlib.compress(raw, 9)))
            f.write(chunk(b"IEND", b""))


def nice_step(span, ticks=6):
    raw = span / ticks if span > 0 else 1
    mag = 10 ** len(str(int(raw))) / 10 if raw >= 1 else 1
    for m in (1, 2, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


def plot_csv(csv_path, png_path, title=""):
    lines = [l.strip().split(",") for l in open(csv_path) if l.strip()]
    names, rows = lines[0][1:], [[float(v) for v in l] for l in lines[1:]]
    w, h, left, right, top, bottom = 960, 540, 70, 20, 40, 50
    cv = Canvas(w, h)
    xmax = max((r[0] for r in rows), default=1) or 1
    ymax = max((max(r[1:]) for r in rows if len(r) > 1), default=1) or 1
    pw, ph = w - left - right, h - top - bottom

    def X(v):
        return left + int(round(v / xmax * pw))

    def Y(v):
        return top + ph - int(round(v / ymax * ph))

    black, grid = (0, 0, 0), (225, 225, 225)
    for step, maxv, vertical in ((nice_step(xmax), xmax, True), (nice_step(ymax), ymax, False)):
        v = 0.0
        while v <= maxv + 1e-9:
            label = f"{v:g}"
            if vertical:
                cv.line(X(v), top, X(v), top + ph, grid)
                cv.text(X(v) - len(label) * 4, top + ph + 8, label)
            else:
                cv.line(left, Y(v), left + pw, Y(v), grid)
                cv.text(left - 8 - len(label) * 8, Y(v) - 5, label)
            v += step
    cv.line(left, top + ph, left + pw, top + ph, black)
    cv.line(left, top, left, top + ph, black)
    cv.text(left, 6, title[:110])
    cv.text(left + pw // 2 - 60, h - 18, "seconds")
    cv.text(8, top - 14, "pods bound")
    used = {}
    for j, name in enumerate(names, start=1):
        palette = REDS if name.startswith("kube-scheduler") else BLUES if name.startswith("onequeue") else [(127, 127, 127)]
        key = id(palette)
        c = palette[used.get(key, 0) % len(palette)]
        used[key] = used.get(key, 0) + 1
        pts = [(X(r[0]), Y(r[j])) for r in rows if len(r) > j]
        for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
            cv.line(x0, y0, x1, y1, c, width=2)
        ly = top + 10 + (j - 1) * 16
        cv.line(left + 12, ly + 5, left + 40, ly + 5, c, width=3)
        cv.text(left + 48, ly, name)
    cv.png(png_path)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    plot_csv(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "")
