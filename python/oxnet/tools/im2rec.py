"""Make image lists (.lst) and RecordIO databases (.rec + .idx) from a folder
of images, like MXNet's ``tools/im2rec.py``.

    python -m oxnet.tools.im2rec --list --recursive data/train images/
    python -m oxnet.tools.im2rec --resize 256 --num-thread 2 data/train images/

Decoding and resizing run in Rust (GIL released) on ``--num-thread``
threads; records are written in list order. ``--encoding .jpg`` (the
default, unless --pass-through) needs Pillow for JPEG encoding;
``--encoding .png`` and ``--pass-through`` need nothing else.
"""

from __future__ import print_function

import argparse
import os
import random
import sys
import time
import traceback
from concurrent.futures import ThreadPoolExecutor

import numpy as np


def list_image(root, recursive, exts):
    """Yield (index, relative path, label) for the images under ``root``;
    with ``recursive`` every sub-folder gets its own label (printed)."""
    i = 0
    if recursive:
        cat = {}
        for path, dirs, files in os.walk(root, followlinks=True):
            dirs.sort()
            files.sort()
            for fname in files:
                fpath = os.path.join(path, fname)
                suffix = os.path.splitext(fname)[1].lower()
                if os.path.isfile(fpath) and (suffix in exts):
                    if path not in cat:
                        cat[path] = len(cat)
                    yield (i, os.path.relpath(fpath, root), cat[path])
                    i += 1
        for k, v in sorted(cat.items(), key=lambda x: x[1]):
            print(os.path.relpath(k, root), v)
    else:
        for fname in sorted(os.listdir(root)):
            fpath = os.path.join(root, fname)
            suffix = os.path.splitext(fname)[1].lower()
            if os.path.isfile(fpath) and (suffix in exts):
                yield (i, os.path.relpath(fpath, root), 0)
                i += 1


def write_list(path_out, image_list):
    """Write items (index, path, label...) as ``index\\tlabel...\\tpath`` lines."""
    with open(path_out, "w") as fout:
        for item in image_list:
            line = "%d\t" % item[0]
            for j in item[2:]:
                line += "%f\t" % j
            line += "%s\n" % item[1]
            fout.write(line)


def make_list(args):
    """Write <prefix>.lst (or _train/_val/_test lists, per chunk)."""
    image_list = list(list_image(args.root, args.recursive, args.exts))
    if args.shuffle is True:
        random.seed(100)
        random.shuffle(image_list)
    N = len(image_list)
    chunk_size = (N + args.chunks - 1) // args.chunks
    for i in range(args.chunks):
        chunk = image_list[i * chunk_size : (i + 1) * chunk_size]
        str_chunk = "_%d" % i if args.chunks > 1 else ""
        sep = int(chunk_size * args.train_ratio)
        sep_test = int(chunk_size * args.test_ratio)
        if args.train_ratio == 1.0:
            write_list(args.prefix + str_chunk + ".lst", chunk)
        else:
            if args.test_ratio:
                write_list(args.prefix + str_chunk + "_test.lst", chunk[:sep_test])
            if args.train_ratio + args.test_ratio < 1.0:
                write_list(args.prefix + str_chunk + "_val.lst", chunk[sep_test + sep :])
            write_list(args.prefix + str_chunk + "_train.lst", chunk[sep_test : sep_test + sep])


def read_list(path_in):
    """Yield [index, path, label...] from a .lst file (bad lines are reported
    and skipped)."""
    with open(path_in) as fin:
        while True:
            line = fin.readline()
            if not line:
                break
            line = [i.strip() for i in line.strip().split("\t")]
            line_len = len(line)
            if line_len < 3:
                print("lst should have at least has three parts, but only has %s parts for %s" % (line_len, line))
                continue
            try:
                item = [int(line[0])] + [line[-1]] + [float(i) for i in line[1:-1]]
            except Exception as e:  # noqa: BLE001
                print("Parsing lst met error for %s, detail: %s" % (line, e))
                continue
            yield item


def image_encode(args, item):
    """The packed record (bytes) of one list item, or None on error
    (reported)."""
    import oxnet as mx

    fullpath = os.path.join(args.root, item[1])
    if len(item) > 3 and args.pack_label:
        header = mx.recordio.IRHeader(0, item[2:], item[0], 0)
    else:
        header = mx.recordio.IRHeader(0, item[2], item[0], 0)
    if args.pass_through:
        try:
            with open(fullpath, "rb") as fin:
                img = fin.read()
            return mx.recordio.pack(header, img)
        except Exception as e:  # noqa: BLE001
            traceback.print_exc()
            print("pack_img error:", item[1], e)
            return None
    try:
        with open(fullpath, "rb") as fin:
            buf = fin.read()
        img = mx.image.imdecode(buf, flag=0 if args.color == 0 else 1, to_rgb=False)
        h, w = img.shape[0], img.shape[1]
        if args.center_crop:
            if h > w:
                img = mx.image.fixed_crop(img, 0, (h - w) // 2, w, w)
            else:
                img = mx.image.fixed_crop(img, (w - h) // 2, 0, h, h)
            h, w = img.shape[0], img.shape[1]
        if args.resize:
            if h > w:
                newsize = (args.resize, h * args.resize // w)
            else:
                newsize = (w * args.resize // h, args.resize)
            img = mx.image.imresize(img, newsize[0], newsize[1], interp=1)
        arr = img.asnumpy()
    except Exception as e:  # noqa: BLE001
        print("imread error trying to load file: %s (%s)" % (fullpath, e))
        return None
    if args.color == 0:
        arr = arr[:, :, 0]
    try:
        return mx.recordio.pack_img(header, np.ascontiguousarray(arr), quality=args.quality, img_fmt=args.encoding)
    except ImportError:
        raise
    except Exception as e:  # noqa: BLE001
        traceback.print_exc()
        print("pack_img error on file: %s" % fullpath, e)
        return None


def write_records(args, fname, working_dir):
    """Encode the images of list ``fname`` and write <list>.rec/.idx in list
    order, printing progress every 1000 images."""
    import oxnet as mx

    base = os.path.splitext(os.path.basename(fname))[0]
    record = mx.recordio.MXIndexedRecordIO(
        os.path.join(working_dir, base + ".idx"), os.path.join(working_dir, base + ".rec"), "w"
    )
    items = list(read_list(fname))
    pre_time = time.time()
    count = 0
    nthread = max(1, args.num_thread)
    window = 4 * nthread
    with ThreadPoolExecutor(max_workers=nthread) as pool:
        pending = []
        it = iter(items)
        done = False
        while True:
            while not done and len(pending) < window:
                try:
                    item = next(it)
                except StopIteration:
                    done = True
                    break
                pending.append((item, pool.submit(image_encode, args, item)))
            if not pending:
                break
            item, fut = pending.pop(0)
            s = fut.result()
            if s is not None:
                record.write_idx(item[0], s)
            if count % 1000 == 0:
                cur_time = time.time()
                print("time:", cur_time - pre_time, " count:", count)
                sys.stdout.flush()
                pre_time = cur_time
            count += 1
    record.close()
    print("wrote %d record(s) to %s" % (len(record.keys), os.path.join(working_dir, base + ".rec")))


def parse_args(argv=None):
    """Command-line arguments (MXNet im2rec's)."""
    parser = argparse.ArgumentParser(
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description="Create an image list or make a record database by reading from an image list",
    )
    parser.add_argument("prefix", help="prefix of input/output lst and rec files.")
    parser.add_argument("root", help="path to folder containing images.")
    cgroup = parser.add_argument_group("Options for creating image lists")
    cgroup.add_argument(
        "--list",
        action="store_true",
        help="create image list(s) by traversing root folder and output to <prefix>.lst; "
        "otherwise read <prefix>.lst and create a database at <prefix>.rec",
    )
    cgroup.add_argument(
        "--exts", nargs="+", default=[".jpeg", ".jpg", ".png"], help="list of acceptable image extensions."
    )
    cgroup.add_argument("--chunks", type=int, default=1, help="number of chunks.")
    cgroup.add_argument("--train-ratio", type=float, default=1.0, help="Ratio of images to use for training.")
    cgroup.add_argument("--test-ratio", type=float, default=0, help="Ratio of images to use for testing.")
    cgroup.add_argument(
        "--recursive",
        action="store_true",
        help="recursively walk through subdirs and assign a unique label to images in each folder",
    )
    cgroup.add_argument(
        "--no-shuffle", dest="shuffle", action="store_false", help="do not randomize the image order in <prefix>.lst"
    )
    rgroup = parser.add_argument_group("Options for creating database")
    rgroup.add_argument(
        "--pass-through", action="store_true", help="whether to skip transformation and save image as is"
    )
    rgroup.add_argument("--resize", type=int, default=0, help="resize the shorter edge of image to the newsize")
    rgroup.add_argument(
        "--center-crop", action="store_true", help="specify whether to crop the center image to make it rectangular."
    )
    rgroup.add_argument(
        "--quality", type=int, default=95, help="JPEG quality for encoding, 1-100; or PNG compression for encoding, 1-9"
    )
    rgroup.add_argument("--num-thread", type=int, default=1, help="number of threads to use for encoding")
    rgroup.add_argument(
        "--color",
        type=int,
        default=1,
        choices=[-1, 0, 1],
        help="1: colour (default); 0: grayscale; -1: as 1 (alpha is dropped)",
    )
    rgroup.add_argument(
        "--encoding", type=str, default=".jpg", choices=[".jpg", ".png"], help="specify the encoding of the images."
    )
    rgroup.add_argument(
        "--pack-label", action="store_true", help="Whether to also pack multi dimensional label in the record file"
    )
    args = parser.parse_args(argv)
    args.prefix = os.path.abspath(args.prefix)
    args.root = os.path.abspath(args.root)
    return args


def main(argv=None):
    """Entry point: make lists (--list) or records."""
    args = parse_args(argv)
    if args.list:
        make_list(args)
        return 0
    if not args.pass_through and args.encoding == ".jpg":
        try:
            import PIL  # noqa: F401
        except ImportError:
            print(
                "im2rec: --encoding .jpg needs Pillow (pip install pillow); "
                "use --encoding .png or --pass-through without it",
                file=sys.stderr,
            )
            return 2
    if os.path.isdir(args.prefix):
        working_dir = args.prefix
    else:
        working_dir = os.path.dirname(args.prefix)
    files = sorted(
        os.path.join(working_dir, f) for f in os.listdir(working_dir) if os.path.isfile(os.path.join(working_dir, f))
    )
    count = 0
    for fname in files:
        if fname.startswith(args.prefix) and fname.endswith(".lst"):
            print("Creating .rec file from", fname, "in", working_dir)
            count += 1
            write_records(args, fname, working_dir)
    if not count:
        print("Did not find and list file with prefix %s" % args.prefix)
    return 0


if __name__ == "__main__":
    sys.exit(main())
