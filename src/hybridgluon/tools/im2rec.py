"""im2rec: make image lists and RecordIO image databases, with MXNet's im2rec.py command line.

    python -m hybridgluon.tools.im2rec --list [--recursive] [--train-ratio R] PREFIX ROOT
        writes PREFIX.lst (or PREFIX_train.lst / _val.lst / _test.lst, per chunk) from the
        images under ROOT: `index \\t label(s) \\t relative path` a line;
    python -m hybridgluon.tools.im2rec [--resize N] [--quality Q] ... PREFIX ROOT
        packs every list file PREFIX*.lst into a .rec/.idx pair beside it.

The lists and records are the ones MXNet's tool makes from the same folder (the same order, the
same shuffle with seed 100, the same labels, headers and image processing), so either tool's
files serve the other's readers. Images are read, cropped, resized and encoded with OpenCV on a
pool of --num-thread threads (OpenCV releases the GIL) and written in list order.
"""
import argparse
import concurrent.futures
import os
import random
import sys

from .. import recordio
from ..base import MXNetError


def list_images(root, recursive, exts):
    """Yields (index, path relative to root, label) for the images under root, sorted by
    name; with recursive, each folder holding images gets its own label, in walk order."""
    exts = {e.lower() for e in exts}
    index = 0
    if not recursive:
        for name in sorted(os.listdir(root)):
            path = os.path.join(root, name)
            if os.path.isfile(path) and os.path.splitext(name)[1].lower() in exts:
                yield index, os.path.relpath(path, root), 0
                index += 1
        return
    labels = {}
    for folder, dirs, files in os.walk(root, followlinks=True):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(folder, name)
            if not (os.path.isfile(path) and os.path.splitext(name)[1].lower() in exts):
                continue
            label = labels.setdefault(folder, len(labels))
            yield index, os.path.relpath(path, root), label
            index += 1
    for folder, label in sorted(labels.items(), key=lambda kv: kv[1]):
        print(os.path.relpath(folder, root), label)


def write_list(path, items):
    """Writes (index, path, label, ...) items as a .lst file."""
    with open(path, 'w') as f:
        for item in items:
            labels = ''.join('%f\t' % x for x in item[2:])
            f.write('%d\t%s%s\n' % (item[0], labels, item[1]))


def read_list(path):
    """Yields [index, path, label, ...] for each well-formed line of a .lst file (a malformed
    line is reported and skipped)."""
    with open(path) as f:
        for line in f:
            fields = [x.strip() for x in line.strip().split('\t')]
            if len(fields) < 3:
                print('lst should have at least has three parts, but only has %d parts for %s'
                      % (len(fields), fields))
                continue
            try:
                yield [int(fields[0]), fields[-1]] + [float(x) for x in fields[1:-1]]
            except ValueError as e:
                print('Parsing lst met error for %s, detail: %s' % (fields, e))


def make_list(args):
    items = list(list_images(args.root, args.recursive, args.exts))
    if args.shuffle:
        random.Random(100).shuffle(items)
    per_chunk = (len(items) + args.chunks - 1) // args.chunks
    for c in range(args.chunks):
        chunk = items[c * per_chunk:(c + 1) * per_chunk]
        base = args.prefix + ('_%d' % c if args.chunks > 1 else '')
        if args.train_ratio == 1.0:
            write_list(base + '.lst', chunk)
            continue
        n_train = int(per_chunk * args.train_ratio)
        n_test = int(per_chunk * args.test_ratio)
        if args.test_ratio:
            write_list(base + '_test.lst', chunk[:n_test])
        if args.train_ratio + args.test_ratio < 1.0:
            write_list(base + '_val.lst', chunk[n_test + n_train:])
        write_list(base + '_train.lst', chunk[n_test:n_test + n_train])


def encode(args, item):
    """The record bytes for one list item, or None (with a message) when it cannot be read."""
    path = os.path.join(args.root, item[1])
    label = item[2:] if args.pack_label and len(item) > 3 else item[2]
    header = recordio.IRHeader(0, label, item[0], 0)
    if args.pass_through:
        try:
            with open(path, 'rb') as f:
                return recordio.pack(header, f.read())
        except OSError as e:
            print('pack_img error:', item[1], e)
            return None
    cv2 = recordio._cv2()
    img = cv2.imread(path, args.color)
    if img is None:
        print('imread read blank (None) image for file: %s' % path)
        return None
    if args.center_crop:
        h, w = img.shape[:2]
        side = min(h, w)
        y, x = (h - side) // 2, (w - side) // 2
        img = img[y:y + side, x:x + side]
    if args.resize:
        h, w = img.shape[:2]
        size = (args.resize, h * args.resize // w) if h > w else (w * args.resize // h,
                                                                  args.resize)
        img = cv2.resize(img, size)
    try:
        return recordio.pack_img(header, img, quality=args.quality, img_fmt=args.encoding)
    except MXNetError as e:
        print('pack_img error on file: %s' % path, e)
        return None


def write_record(args, lst):
    """Packs the images of list file lst into the .rec/.idx pair beside it."""
    stem = os.path.splitext(lst)[0]
    items = list(read_list(lst))
    out = recordio.MXIndexedRecordIO(stem + '.idx', stem + '.rec', 'w')
    try:
        with concurrent.futures.ThreadPoolExecutor(max(1, args.num_thread)) as pool:
            # A bounded window of pending images keeps memory flat on huge lists.
            window = max(4, 4 * args.num_thread)
            pending = []
            for item in items:
                pending.append((item, pool.submit(encode, args, item)))
                if len(pending) >= window:
                    _write_done(out, pending.pop(0))
            for p in pending:
                _write_done(out, p)
    finally:
        out.close()
    return len(items)


def _write_done(out, pending):
    item, future = pending
    s = future.result()
    if s is not None:
        out.write_idx(item[0], s)


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        prog='python -m hybridgluon.tools.im2rec',
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description='Create an image list, or pack the images of a list into a RecordIO file')
    p.add_argument('prefix', help='prefix of the input/output .lst and .rec files')
    p.add_argument('root', help='folder that holds the images')
    g = p.add_argument_group('Options for creating image lists')
    g.add_argument('--list', action='store_true',
                   help='make <prefix>.lst from the images under root instead of packing')
    g.add_argument('--exts', nargs='+', default=['.jpeg', '.jpg', '.png'],
                   help='image file extensions to list')
    g.add_argument('--chunks', type=int, default=1, help='number of chunks')
    g.add_argument('--train-ratio', type=float, default=1.0,
                   help='fraction of the images for training')
    g.add_argument('--test-ratio', type=float, default=0, help='fraction for testing')
    g.add_argument('--recursive', action='store_true',
                   help='walk subfolders, one label per folder (else: root only, label 0)')
    g.add_argument('--no-shuffle', dest='shuffle', action='store_false',
                   help='keep the listing order instead of shuffling it')
    g = p.add_argument_group('Options for creating the database')
    g.add_argument('--pass-through', action='store_true',
                   help='store the image files as they are, without decoding')
    g.add_argument('--resize', type=int, default=0,
                   help='resize the shorter edge to this size (0: keep)')
    g.add_argument('--center-crop', action='store_true',
                   help='crop the central square of each image')
    g.add_argument('--quality', type=int, default=95,
                   help='JPEG quality 1-100, or PNG compression 1-9')
    g.add_argument('--num-thread', type=int, default=1, help='threads that encode images')
    g.add_argument('--color', type=int, default=1, choices=[-1, 0, 1],
                   help='1: colour, 0: grey, -1: as stored (alpha kept)')
    g.add_argument('--encoding', type=str, default='.jpg', choices=['.jpg', '.png'],
                   help='image encoding in the records')
    g.add_argument('--pack-label', action='store_true',
                   help='store every label of a multi-label list line')
    args = p.parse_args(argv)
    args.prefix = os.path.abspath(args.prefix)
    args.root = os.path.abspath(args.root)
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.list:
        make_list(args)
        return 0
    folder = args.prefix if os.path.isdir(args.prefix) else os.path.dirname(args.prefix)
    lists = sorted(os.path.join(folder, f) for f in os.listdir(folder)
                   if f.endswith('.lst') and os.path.join(folder, f).startswith(args.prefix))
    if not lists:
        print('Did not find and list file with prefix %s' % args.prefix)
        return 1
    for lst in lists:
        print('Creating .rec file from', lst, 'in', folder)
        write_record(args, lst)
    return 0


if __name__ == '__main__':
    sys.exit(main())
