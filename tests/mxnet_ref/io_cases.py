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


# (name, CSVIter keyword arguments; file names are filled in by run_csv)
CSV_CASES = [
    ('floats', dict(data='floats.csv', data_shape=(2, 3), batch_size=4)),
    ('special', dict(data='special.csv', data_shape=(6,), batch_size=2)),
    ('crlf_dir', dict(data='dir', data_shape=(6,), label='floats.csv', label_shape=(3, 2),
                      batch_size=5)),
    ('int32_wrap', dict(data='ints.csv', data_shape=(3,), batch_size=3, dtype='int32')),
    ('int64', dict(data='ints.csv', data_shape=(3,), batch_size=2, dtype='int64',
                   round_batch=False)),
    ('null_label', dict(data='floats.csv', data_shape=(6,), label='NULL', batch_size=4)),
]


def write_csv(folder):
    """Writes the CSV files of CSV_CASES into folder: floats of many magnitudes printed with 6
    to 12 digits, numbers MXNet's parser reads in its own way (long fractions, exponents past
    float's range, inf, signs, trailing text), a directory of two files with CRLF line ends, and
    integers beyond int32."""
    rs = np.random.RandomState(11)
    rows = []
    for _ in range(13):
        digits = rs.randint(6, 13)
        vals = rs.randn(6) * 10.0 ** rs.randint(-8, 9, size=6)
        rows.append(','.join('%.*g' % (digits, v) for v in vals))
    with open(os.path.join(folder, 'floats.csv'), 'w') as f:
        f.write('\n'.join(rows) + '\n')
    special = ['0.12345678901234567890123,123456789.123456789,1e39,-1e-39,+.5,-0',
               'inf,-Infinity,3.4028235e38,1.17549435e-38,12abc,7.',
               '0.1,0.2,0.3,1e-7,99999999999,2.5e+3',
               '  4.5 , 6 ,1.5E-2,1.0e10,-7.25e-5,3']
    with open(os.path.join(folder, 'special.csv'), 'w') as f:
        f.write('\n'.join(special))  # no newline at the end
    os.makedirs(os.path.join(folder, 'dir'), exist_ok=True)
    for name, part in (('a.csv', rows[:6]), ('b.csv', rows[6:])):
        with open(os.path.join(folder, 'dir', name), 'wb') as f:
            f.write(('\r\n'.join(part) + '\r\n').encode())
    ints = [','.join(str(int(v)) for v in rs.randint(-2 ** 40, 2 ** 40, size=3))
            for _ in range(7)]
    ints.append('2147483647,-2147483648,1.9')
    with open(os.path.join(folder, 'ints.csv'), 'w') as f:
        f.write('\n'.join(ints) + '\n')


def run_csv(mx, folder, kwargs):
    """(data batches, label batches, pads) over two epochs of CSVIter."""
    write_csv(folder)
    kwargs = dict(kwargs)
    kwargs['data_csv'] = os.path.join(folder, kwargs.pop('data'))
    label = kwargs.pop('label', None)
    if label is not None:
        kwargs['label_csv'] = label if label == 'NULL' else os.path.join(folder, label)
    it = mx.io.CSVIter(**kwargs)
    data, labels, pads = [], [], []
    for _ in range(2):
        for batch in it:
            data.append(batch.data[0].asnumpy())
            labels.append(batch.label[0].asnumpy())
            pads.append(batch.pad)
        it.reset()
    return np.stack(data), np.stack(labels), np.array(pads)


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
