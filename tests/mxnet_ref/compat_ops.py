"""Prints the op part of docs/compat.md: hybridgluon's registry against MXNet 1.9.1's op list
(mxnet_ops.txt, written by gen_fixtures.py --ops). Run from the repository root:

    python tests/mxnet_ref/compat_ops.py > /tmp/ops.md     # then paste into docs/compat.md
"""
import collections
import os
import sys

import hybridgluon as mx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import refs  # noqa: E402

# Families of MXNet names that are listed by count rather than one by one.
GROUPS = [
    ('_backward_', 'internal gradient ops (ours are separate `_backward_*` ops or rewrites)'),
    ('_np', 'NumPy-interface ops (`mx.np` / `mx.npx`, `_np*`, `_npi*`, `_npx*`)'),
    ('_contrib_', '`contrib` ops (detection, quantization, transformer helpers, ...)'),
    ('_sparse_', 'sparse-storage ops (row_sparse / csr)'),
    ('_linalg_', '`linalg` ops'),
    ('linalg_', '`linalg` ops'),
    ('_random_', 'random samplers beyond uniform/normal/randint'),
    ('random_', 'random samplers beyond uniform/normal/randint'),
    ('_sample_', 'per-element-parameter samplers'),
    ('sample_', 'per-element-parameter samplers'),
    ('_image_', '`mx.image` ops'),
    ('_cv', 'OpenCV image I/O'),
    ('_sg_', 'subgraph backends (oneDNN, TensorRT)'),
    ('_mp_', 'multi-precision fused updates'),
    ('multi_', 'multi-tensor fused optimizer updates'),
    ('_multi_', 'multi-tensor fused optimizer updates'),
    ('preloaded_multi_', 'multi-tensor fused optimizer updates'),
]


def main():
    mx_names = [line.strip() for line in open(os.path.join(HERE, 'mxnet_ops.txt'))
                if line.strip()]
    mx_set = set(mx_names)
    ours, known = [], set()
    for op in mx._core.list_ops():
        info = mx._core.op_info(op)
        names = [op] + info['aliases']
        known.update(names)
        if not op.startswith('_backward_'):
            ours.append((op, info['aliases'], any(n in mx_set for n in names)))
    fixtures = set(refs.fixture_ops())
    counts = {}
    for op in fixtures:
        counts[op] = len(refs.load_op_fixture(op)[0]['cases'])

    print('### Ops of the registry (%d, gradient ops not counted)\n' % len(ours))
    print('`name (aliases) [conformance cases against MXNet]`; **bold**: not an MXNet 1.9.1 op.\n')
    items = []
    for op, aliases, in_mx in sorted(ours, key=lambda t: t[0].lstrip('_').lower()):
        s = op if in_mx else '**%s**' % op
        if aliases:
            s += ' (%s)' % ', '.join(aliases)
        if op in counts:
            s += ' [%d]' % counts[op]
        items.append(s)
    print(', '.join(items) + '.\n')

    missing, grouped = [], collections.OrderedDict()
    for name in mx_names:
        if name in known:
            continue
        for prefix, label in GROUPS:
            if name.startswith(prefix):
                grouped[label] = grouped.get(label, 0) + 1
                break
        else:
            missing.append(name)
    print('### MXNet 1.9.1 ops not provided\n')
    print('Legacy (`mx.nd` / `mx.sym`) ops and aliases, one by one (%d):\n' % len(missing))
    print(', '.join('`%s`' % n for n in missing) + '.\n')
    print('Whole families (number of MXNet names):\n')
    for label, n in grouped.items():
        print('- %s: %d' % (label, n))


if __name__ == '__main__':
    main()
