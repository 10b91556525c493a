"""Image-record pipeline throughput (issue 17): images per second through
  (a) hybridgluon's mx.io.ImageRecordIter,
  (b) a Gluon DataLoader over gluon.data.vision.ImageRecordDataset with transforms,
  (c) real MXNet 1.9.1's mx.io.ImageRecordIter (in its own process, its Python from
      benchmarks/peers.py),
all on the same .rec: N random-content JPEGs of about 256x256 to 320x256, packed with
hybridgluon.recordio.pack_img. The pipeline is ImageNet's evaluation one plus a random mirror:
shorter side to 224, center crop 224x224, random mirror, mean/std, batch 32, 2 decoding threads
(2 DataLoader workers for (b)). Each round times construction + one full epoch, rounds
interleaved between the three; medians. Target: (a) and (b) no slower than (c).

    python benchmarks/bench_imagerec.py [--quick]
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import peers  # noqa: E402

import hybridgluon as mx  # noqa: E402

import cv2  # noqa: E402  (the image extra; run.py skips this benchmark without it)
import numpy as np  # noqa: E402

BATCH, THREADS, SIDE = 32, 2, 224
MEAN = (123.68, 116.28, 103.53)
STD = (58.395, 57.12, 57.375)

# Runs in MXNet's interpreter: prints the seconds of construction + one epoch.
_MXNET_SCRIPT = r'''
import sys, time
import mxnet as mx
rec, batch, threads, side = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
t0 = time.perf_counter()
it = mx.io.ImageRecordIter(path_imgrec=rec, data_shape=(3, side, side), batch_size=batch,
                           resize=side, rand_mirror=True, preprocess_threads=threads,
                           mean_r=123.68, mean_g=116.28, mean_b=103.53, std_r=58.395,
                           std_g=57.12, std_b=57.375)
n = 0
for b in it:
    b.data[0].wait_to_read()
    n += b.data[0].shape[0] - b.pad
print(time.perf_counter() - t0, n)
'''


def make_rec(folder, n, seed=0):
    """n smooth random-content JPEGs (upsampled noise: compresses like a photo, not like
    static) packed into folder/bench.rec/.idx; returns the .rec path."""
    rng = np.random.RandomState(seed)
    rec = mx.recordio.MXIndexedRecordIO(os.path.join(folder, 'bench.idx'),
                                        os.path.join(folder, 'bench.rec'), 'w')
    for i in range(n):
        w = int(rng.randint(256, 321))
        small = rng.randint(0, 256, (32, w // 8, 3)).astype(np.uint8)
        img = cv2.resize(small, (w, 256), interpolation=cv2.INTER_CUBIC)
        img = cv2.add(img, rng.randint(0, 24, img.shape).astype(np.uint8))
        rec.write_idx(i, mx.recordio.pack_img((0, float(i % 1000), i, 0), img, quality=90))
    rec.close()
    return os.path.join(folder, 'bench.rec')


def ours_iter(rec):
    t0 = time.perf_counter()
    it = mx.io.ImageRecordIter(path_imgrec=rec, data_shape=(3, SIDE, SIDE), batch_size=BATCH,
                               resize=SIDE, rand_mirror=True, preprocess_threads=THREADS,
                               mean_r=MEAN[0], mean_g=MEAN[1], mean_b=MEAN[2], std_r=STD[0],
                               std_g=STD[1], std_b=STD[2])
    n = 0
    for b in it:
        n += b.data[0].shape[0] - b.pad
    it.close()
    return time.perf_counter() - t0, n


def ours_loader(rec):
    from hybridgluon.gluon.data.vision import transforms as T
    t0 = time.perf_counter()
    tf = T.Compose([T.Resize(SIDE, keep_ratio=True), T.CenterCrop(SIDE),
                    T.RandomFlipLeftRight(), T.ToTensor(),
                    T.Normalize([m / 255 for m in MEAN], [s / 255 for s in STD])])
    ds = mx.gluon.data.vision.ImageRecordDataset(rec).transform_first(tf)
    loader = mx.gluon.data.DataLoader(ds, BATCH, num_workers=THREADS)
    n = 0
    for x, _ in loader:
        n += x.shape[0]
    return time.perf_counter() - t0, n


def mxnet_iter(python, rec):
    env = dict(os.environ)
    env.pop('PYTHONPATH', None)
    out = subprocess.run([python, '-c', _MXNET_SCRIPT, rec, str(BATCH), str(THREADS),
                          str(SIDE)], capture_output=True, text=True, env=env, check=True)
    secs, n = out.stdout.split()
    return float(secs), int(n)


def run(quick=False):
    n_img, rounds = (160, 2) if quick else (500, 3)
    tmp = tempfile.mkdtemp(prefix='bench_imagerec_')
    try:
        rec = make_rec(tmp, n_img)
        mxpy = peers.mxnet_python()
        cases = {'hybridgluon': lambda: ours_iter(rec),
                 'hybridgluon DataLoader': lambda: ours_loader(rec)}
        if mxpy:
            cases['mxnet'] = lambda: mxnet_iter(mxpy, rec)
        samples = {k: [] for k in cases}
        for _ in range(rounds):
            for k, fn in cases.items():
                time.sleep(0.2)
                secs, n = fn()
                assert n == n_img, (k, n)
                samples[k].append(secs / n)
        per_img = {k: statistics.median(v) for k, v in samples.items()}
        rows = []
        for label, ours in (('ImageRecordIter', 'hybridgluon'),
                            ('DataLoader(ImageRecordDataset) vs ImageRecordIter',
                             'hybridgluon DataLoader')):
            res = {'hybridgluon': per_img[ours]}
            if 'mxnet' in per_img:
                res['mxnet'] = per_img['mxnet']
            note = '%.0f images/s here' % (1 / per_img[ours])
            if 'mxnet' in per_img:
                note += ', %.0f in MXNet' % (1 / per_img['mxnet'])
            rows.append(('%s, %d JPEGs ~256x288 -> 224 crop, batch %d, %d threads'
                         % (label, n_img, BATCH, THREADS), res, note))
        return common.table('Image-record pipeline (time per image, construction + 1 epoch, '
                            'median of %d rounds)' % rounds, rows,
                            ['hybridgluon', 'mxnet'])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
    print(run(quick='--quick' in sys.argv))
