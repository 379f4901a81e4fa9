"""Regenerate tests/data/images/expected.json (reference pixels from Pillow).

Run from the repository root:  python3 tests/data/make_image_refs.py
Also (re)creates the two small derived test images, from the shared photos:
  chelsea_120x80.png        RGB PNG, from chelsea_451x300.png (CC0), Lanczos resize
  retina_160x120_444.jpg    4:4:4 JPEG q92, from retina_1280x960_444.jpg (CC0)
  rocket_45x31_420.jpg      4:2:0 JPEG q90 with odd sizes, from rocket_640x427.jpg (CC0)
  rocket_3x5_422.jpg        4:2:2 JPEG q90, two chroma columns (libjpeg's
                            plain, not "fancy", upsampling), same source
  *_prog_*.jpg              small progressive JPEGs: 4:2:0 with restart
                            markers, 4:2:2, 4:4:4 and gray (make_progressive)
Pillow decodes JPEG with libjpeg-turbo (islow IDCT, fancy upsampling), like
OpenCV inside MXNet, and ignores EXIF orientation unless asked.

The Rust test (io::image tests) recomputes the sample positions with the same
formula: for k in range(N): y = (k * 7919) % h, x = (k * 104729) % w.
"""
import json
import os
import sys

from PIL import Image

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "images")
# The project's shared photo set (see images/README.md); only needed to re-create the derived
# images: set OXNET_SHARED_IMAGES to its folder.
SHARED = os.environ.get("OXNET_SHARED_IMAGES")
N = 250


def make_derived():
    src = os.path.join(SHARED, "chelsea_451x300.png")
    if os.path.exists(src):
        Image.open(src).convert("RGB").resize((120, 80), Image.LANCZOS).save(
            os.path.join(HERE, "chelsea_120x80.png"), optimize=True)
    src = os.path.join(SHARED, "retina_1280x960_444.jpg")
    if os.path.exists(src):
        Image.open(src).resize((160, 120), Image.LANCZOS).save(
            os.path.join(HERE, "retina_160x120_444.jpg"), quality=92, subsampling=0)
    src = os.path.join(SHARED, "rocket_640x427.jpg")
    if os.path.exists(src):
        im = Image.open(src)
        im.resize((45, 31), Image.LANCZOS).save(
            os.path.join(HERE, "rocket_45x31_420.jpg"), quality=90, subsampling=2)
        im.resize((3, 5), Image.LANCZOS).save(
            os.path.join(HERE, "rocket_3x5_422.jpg"), quality=90, subsampling=1)
    make_progressive()


def make_progressive():
    """Small progressive JPEGs (libjpeg's scan script: DC and AC first
    scans, then refinement scans) in each layout oxnet decodes itself."""
    for src, size, name, kw in [
        ("rocket_640x427.jpg", (45, 31), "rocket_45x31_prog_420_rst.jpg", {"subsampling": 2, "restart_marker_blocks": 3}),
        ("coffee_640x480.jpg", (50, 40), "coffee_50x40_prog_422.jpg", {"subsampling": 1}),
        ("retina_1280x960_444.jpg", (48, 36), "retina_48x36_prog_444.jpg", {"subsampling": 0}),
        ("clock_gray_400x300.jpg", (40, 30), "clock_40x30_prog_gray.jpg", {}),
    ]:
        p = os.path.join(SHARED, src)
        if os.path.exists(p):
            Image.open(p).resize(size, Image.LANCZOS).save(
                os.path.join(HERE, name), quality=90, progressive=True, **kw)


def samples(arr_bytes, w, h, c):
    out = []
    for k in range(N):
        y = (k * 7919) % h
        x = (k * 104729) % w
        base = (y * w + x) * c
        out.extend(arr_bytes[base:base + c])
    return out


def means(arr_bytes, c):
    n = len(arr_bytes) // c
    return [sum(arr_bytes[i::c]) / n for i in range(c)]


def main():
    if "--derived" in sys.argv:
        if not SHARED or not os.path.isdir(SHARED):
            sys.exit("make_image_refs.py --derived: set OXNET_SHARED_IMAGES to the folder of the project's "
                     "shared photo set (see tests/data/images/README.md); got %r" % SHARED)
        make_derived()
    refs = {}
    for f in sorted(os.listdir(HERE)):
        if not f.endswith((".jpg", ".png")):
            continue
        p = os.path.join(HERE, f)
        im = Image.open(p)
        rgb = im.convert("RGB")
        w, h = rgb.size
        if f.endswith(".jpg"):
            g = Image.open(p)
            g.draft("L", g.size)  # libjpeg outputs the Y channel directly, like OpenCV
            gray = g.convert("L")
        else:
            gray = im.convert("L")
        rb = rgb.tobytes()
        gb = gray.tobytes()
        refs[f] = {
            "width": w,
            "height": h,
            "rgb_mean": means(rb, 3),
            "rgb_samples": samples(rb, w, h, 3),
            "gray_mean": means(gb, 1),
            "gray_samples": samples(gb, w, h, 1),
        }
    with open(os.path.join(HERE, "expected.json"), "w") as fh:
        json.dump({"n_samples": N, "images": refs}, fh, separators=(",", ":"))
        fh.write("\n")


if __name__ == "__main__":
    main()
