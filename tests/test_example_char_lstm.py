"""examples/char_lstm/train.py, run as a user runs it (a few steps of a small model): it trains
on real text (the licence texts of Debian's base-files, or a file given with --text), the loss
falls, it generates the requested number of characters, and the exported model reloads and
gives the trained network's output."""
import os
import re
import subprocess
import sys

import numpy as np

import hybridgluon as mx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, 'examples', 'char_lstm', 'train.py')


def test_char_lstm_trains_samples_and_exports(tmp_path):
    text = tmp_path / 'text.txt'
    # Real prose with a small alphabet, repeated so that a few steps can learn something.
    text.write_text(('the quick brown fox jumps over the lazy dog. ' * 200).strip())
    prefix = str(tmp_path / 'charlm')
    # The script imports the hybridgluon this test imported (installed, or the in-place build).
    pkg_parent = os.path.dirname(os.path.dirname(os.path.abspath(mx.__file__)))
    env = dict(os.environ, PYTHONPATH=pkg_parent + os.pathsep + os.environ.get('PYTHONPATH', ''))
    args = ['--text', str(text), '--steps', '100', '--lr', '0.03', '--batch', '8', '--seq', '16',
            '--embed', '16', '--hidden', '32', '--layers', '1', '--dropout', '0',
            '--sample', '40', '--prime', 'The fox', '--save', prefix]
    r = subprocess.run([sys.executable, SCRIPT] + args,
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    bits = [float(b) for b in re.findall(r'step +\d+ +([\d.]+) bits/char', r.stdout)]
    assert len(bits) >= 2
    assert bits[0] > 4.0 and bits[-1] < 1.5, r.stdout  # from log2(28) = 4.8: it learned
    sample = r.stdout.split('--- sample (temperature 0.70) ---\n', 1)[1].split('\n\nexported')[0]
    assert sample.startswith('he fox') and len(sample) == 6 + 40  # 'T' is not in the text
    words = sample.replace('.', ' ').split()
    known = set(text.read_text().replace('.', ' ').split())
    assert sum(w in known for w in words) >= len(words) // 2, sample
    sb = mx.gluon.SymbolBlock.imports(prefix + '-symbol.json', ['data0', 'data1', 'data2'],
                                      prefix + '-0000.params')
    x = mx.nd.array(np.arange(5, dtype=np.float32).reshape(5, 1) % 20)
    h = mx.nd.zeros((1, 1, 32))
    out, h2, c2 = sb(x, h, h)
    assert out.shape == (5, 1, len(set(text.read_text())))
    assert np.isfinite(out.asnumpy()).all() and h2.shape == (1, 1, 32)
