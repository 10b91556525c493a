"""Writes the RecordIO fixtures of tests/test_recordio.py and tests/test_image_record_iter.py
with real MXNet 1.9.1 (run with its interpreter; needs Pillow there for the JPEGs):

    PYTHONPATH=<a folder holding cv2> /work/mxnet-venv/bin/python tests/mxnet_ref/gen_recordio.py

(OpenCV is needed there only by MXNet's im2rec tool, which the last fixtures run.)

Outputs in tests/mxnet_ref/recordio/:
  payloads.rec/.idx  raw records chosen to hit every chunk case of the format (empty, unaligned
                     lengths, the magic word at aligned and unaligned offsets, back to back);
  images.rec/.idx    12 JPEGs (Pillow-encoded, 37..70 pixels a side, smooth random content),
                     label i;
  labels3.rec/.idx   the first 7 of them with the label array [i, i + 0.5, -i];
  images.lst         an im2rec list for images.rec with two labels a line (path_imglist);
  mean_given.nd      a mean image in nd.save format (mean_img);
  expected.npz       the payloads (concatenated, and their lengths) and what MXNet's
                     ImageRecordIter family returns for a few parameter sets (see CASES);
  im2rec/            a small image tree (src/: PNGs in two folders and a .txt that must be
                     skipped) and what MXNet's im2rec makes of it (see IM2REC).
"""
import io
import os
import shutil
import struct
import subprocess
import sys

import mxnet as mx
import numpy as np
from PIL import Image, ImageFilter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from recordio_cases import CASES, iterator_kwargs  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'recordio')
MAGIC = struct.pack('<I', 0xced7230a)

PAYLOADS = [b'', b'a', b'abc', b'abcd', b'abcde', MAGIC, b'x' + MAGIC, b'xy' + MAGIC + b'zz',
            b'abcd' + MAGIC + b'q', MAGIC * 3 + b'e', b'ab' + MAGIC + MAGIC, b'abcd' + MAGIC,
            bytes(range(256)) * 3, MAGIC + b'\0\0\0', b'1234' + MAGIC + b'5678' + MAGIC + b'9']



def make_images(name, count, label_of):
    rng = np.random.RandomState(17)
    recs = mx.recordio.MXIndexedRecordIO(os.path.join(OUT, name + '.idx'),
                                         os.path.join(OUT, name + '.rec'), 'w')
    for i in range(count):
        h, w = rng.randint(37, 71, size=2)
        img = Image.fromarray(rng.randint(0, 256, (h, w, 3)).astype(np.uint8))
        img = img.filter(ImageFilter.GaussianBlur(2))
        buf = io.BytesIO()
        img.save(buf, format='JPEG', quality=90)
        recs.write_idx(i, mx.recordio.pack(mx.recordio.IRHeader(0, label_of(i), i, 0),
                                           buf.getvalue()))
    recs.close()


# name -> (list options, pack options); every run lists src/ recursively into <name>*.lst and
# packs them into <name>*.rec/.idx.
IM2REC = {
    'passthrough': (['--no-shuffle'], ['--pass-through']),
    'png_crop': ([], ['--resize', '6', '--center-crop', '--encoding', '.png']),
    'jpg_gray': (['--no-shuffle'], ['--quality', '90', '--color', '0', '--num-thread', '2']),
    'split': (['--train-ratio', '0.5', '--test-ratio', '0.25'], ['--pass-through']),
    'multi': (None, ['--pass-through', '--pack-label']),  # list written here, two labels
}
MULTI_LST = '3\t1.5\t-2.000000\tdogs/dogs0.png\n0\t0.25\t7\tcats/cats0.png\nbad line\n'


def make_im2rec():
    root = os.path.join(OUT, 'im2rec')
    shutil.rmtree(root, ignore_errors=True)
    rng = np.random.RandomState(3)
    for folder, n in (('cats', 3), ('dogs', 4)):
        os.makedirs(os.path.join(root, 'src', folder))
        for i in range(n):
            h, w = rng.randint(7, 12, size=2)
            img = Image.fromarray(rng.randint(0, 256, (h, w, 3)).astype(np.uint8))
            img.save(os.path.join(root, 'src', folder, '%s%d.png' % (folder, i)))
    with open(os.path.join(root, 'src', 'cats', 'notes.txt'), 'w') as f:
        f.write('not an image')
    tool = os.path.join(os.path.dirname(mx.__file__), 'tools', 'im2rec.py')
    for name, (list_opts, pack_opts) in IM2REC.items():
        prefix = os.path.join(root, name)
        runs = [pack_opts]
        if list_opts is None:
            with open(prefix + '.lst', 'w') as f:
                f.write(MULTI_LST)
        else:
            runs.insert(0, ['--list', '--recursive'] + list_opts)
        for opts in runs:
            subprocess.run([sys.executable, tool] + opts + [prefix, os.path.join(root, 'src')],
                           check=True, stdout=subprocess.DEVNULL)


def main():
    os.makedirs(OUT, exist_ok=True)
    w = mx.recordio.MXIndexedRecordIO(os.path.join(OUT, 'payloads.idx'),
                                      os.path.join(OUT, 'payloads.rec'), 'w')
    for i, p in enumerate(PAYLOADS):
        w.write_idx(i, p)
    w.close()
    make_images('images', 12, float)
    make_images('labels3', 7, lambda i: [float(i), i + 0.5, -i])
    with open(os.path.join(OUT, 'images.lst'), 'w') as f:
        for i in (3, 1, 0, 2, 11, 4, 5, 6, 7, 8, 9, 10):
            f.write('%d\t%f\t%f\timg%d.jpg\n' % (i, i * 10 + 0.5, -i, i))
    out = {'payloads_blob': np.frombuffer(b''.join(PAYLOADS), np.uint8),
           'payloads_len': np.array([len(p) for p in PAYLOADS])}
    for name, (cls, kw) in CASES.items():
        it = getattr(mx.io, cls)(**iterator_kwargs(kw, OUT))
        batches = list(it)
        out[name + '_data'] = np.stack([b.data[0].asnumpy() for b in batches])
        out[name + '_label'] = np.stack([b.label[0].asnumpy() for b in batches])
        out[name + '_pad'] = np.array([b.pad for b in batches])
    # mean_img: a given file (MXNet's nd.save format), and one MXNet computes itself
    given = (np.arange(3 * 16 * 16).reshape(3, 16, 16) % 97).astype(np.float32)
    mx.nd.save(os.path.join(OUT, 'mean_given.nd'), {'mean_img': mx.nd.array(given)})
    it = mx.io.ImageRecordIter(path_imgrec=os.path.join(OUT, 'images.rec'), data_shape=(3, 16, 16),
                               batch_size=12, mean_img=os.path.join(OUT, 'mean_given.nd'),
                               std_r=2, std_g=3, scale=0.5, mean_r=50)
    out['mean_given_data'] = next(it).data[0].asnumpy()
    computed = os.path.join(OUT, 'mean_computed.nd')
    it = mx.io.ImageRecordIter(path_imgrec=os.path.join(OUT, 'images.rec'), data_shape=(3, 16, 16),
                               batch_size=12, mean_img=computed)
    out['mean_computed_data'] = next(it).data[0].asnumpy()
    out['mean_computed_mean'] = mx.nd.load(computed)['mean_img'].asnumpy()
    os.remove(computed)
    np.savez_compressed(os.path.join(OUT, 'expected.npz'), **out)
    make_im2rec()


if __name__ == '__main__':
    main()
