"""Input files and iterator settings for the mx.io tests, shared by gen_io_ref.py (which records
what MXNet 1.9.1's MNISTIter and LibSVMIter give into io_iters.npz) and test_io_iters.py."""
import os
import struct

import numpy as np

N_IMAGES = 130

# (name, MNISTIter keyword arguments)
MNIST_CASES = [
    ('plain', dict(batch_size=40, shuffle=False)),
    ('shuffle_seed7', dict(batch_size=25, shuffle=True, seed=7, flat=True)),
    ('shuffle_default_seed', dict(batch_size=32)),
    ('part1of3_shuffled', dict(batch_size=10, shuffle=True, seed=3, num_parts=3, part_index=1)),
    ('part3of4', dict(batch_size=16, shuffle=False, num_parts=4, part_index=3)),
]

# (name, LibSVMIter keyword arguments besides the file names)
LIBSVM_CASES = [
    ('bs5', dict(data_shape=(7,), batch_size=5)),
    ('bs4_labels', dict(data_shape=(7,), batch_size=4, label=True, label_shape=(5,))),
    ('part0of2', dict(data_shape=(7,), batch_size=2, num_parts=2, part_index=0)),
    ('part1of2', dict(data_shape=(7,), batch_size=2, num_parts=2, part_index=1)),
    ('part1of3', dict(data_shape=(7,), batch_size=3, num_parts=3, part_index=1)),
    ('part2of3', dict(data_shape=(7,), batch_size=3, num_parts=3, part_index=2)),
]


def write_mnist(folder):
    """Writes img-idx3-ubyte / lab-idx1-ubyte with N_IMAGES distinct random images; returns
    (image path, label path, images (N, 28, 28) uint8, labels uint8)."""
    rs = np.random.RandomState(17)
    images = rs.randint(0, 256, size=(N_IMAGES, 28, 28)).astype(np.uint8)
    labels = rs.randint(0, 10, size=N_IMAGES).astype(np.uint8)
    img, lab = os.path.join(folder, 'img-idx3-ubyte'), os.path.join(folder, 'lab-idx1-ubyte')
    with open(img, 'wb') as f:
        f.write(struct.pack('>iiii', 2051, N_IMAGES, 28, 28) + images.tobytes())
    with open(lab, 'wb') as f:
        f.write(struct.pack('>ii', 2049, N_IMAGES) + labels.tobytes())
    return img, lab, images, labels


def write_libsvm(folder):
    """Writes data.t (29 examples, label = row number, up to 4 features of 7, some lines empty
    of features, one blank line) and label.t (5 columns); returns their paths."""
    rs = np.random.RandomState(5)
    data, label = [], []
    for i in range(29):
        cols = sorted(rs.choice(7, rs.randint(0, 5), replace=False))
        data.append(' '.join(['%d' % i] + ['%d:%.4f' % (c, rs.randn()) for c in cols]))
        lcols = sorted(rs.choice(5, rs.randint(0, 3), replace=False))
        label.append(' '.join(['%d' % (i % 3)] + ['%d:%.2f' % (c, rs.rand()) for c in lcols]))
    data.insert(11, '')
    label.insert(11, '')
    paths = os.path.join(folder, 'data.t'), os.path.join(folder, 'label.t')
    for path, lines in zip(paths, (data, label)):
        with open(path, 'w') as f:
            f.write('\n'.join(lines) + '\n')
    return paths


def mnist_order(batches, images):
    """The source image index of every row of the batches (each image is distinct)."""
    flat = images.reshape(len(images), -1).astype(np.float32) / 256
    rows = np.concatenate([b.reshape(len(b), -1) for b in batches])
    return np.array([int(np.nonzero((flat == r).all(1))[0][0]) for r in rows])


def run_libsvm(mx, folder, kwargs):
    """(dense data batches, label batches, pads) over two epochs of LibSVMIter."""
    data_path, label_path = write_libsvm(folder)
    kwargs = dict(kwargs)
    if kwargs.pop('label', False):
        kwargs['label_libsvm'] = label_path
    it = mx.io.LibSVMIter(data_libsvm=data_path, **kwargs)
    data, label, pads = [], [], []
    for _ in range(2):
        for batch in it:
            data.append(batch.data[0].asnumpy())
            label.append(batch.label[0].asnumpy())
            pads.append(batch.pad)
        it.reset()
    return np.stack(data), np.stack(label), np.array(pads)


def run_mnist(mx, folder, kwargs):
    """(source image order, labels, number of batches) over two epochs of MNISTIter."""
    img, lab, images, _ = write_mnist(folder)
    it = mx.io.MNISTIter(image=img, label=lab, silent=True, **kwargs)
    data, labels = [], []
    for _ in range(2):
        for batch in it:
            data.append(batch.data[0].asnumpy())
            labels.append(batch.label[0].asnumpy())
        it.reset()
    return mnist_order(data, images), np.concatenate(labels), len(data)
