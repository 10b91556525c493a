"""`python -m hybridgluon.demo --plot`: the network drawn as a PNG by Graphviz and a Chrome trace
of the first hybridized epoch, both in --output."""
import json
import os
import shutil

import pytest

from hybridgluon import demo


def test_demo_plot_writes_the_graph_and_a_trace(tmp_path, capsys):
    pytest.importorskip('graphviz')
    out = str(tmp_path / 'out')
    assert demo.main(['--epochs', '1', '--plot', '--output', out, '--compare-batches', '2']) == 0
    printed = capsys.readouterr().out
    with open(os.path.join(out, 'profile.json')) as f:
        trace = json.load(f)
    ops = [e for e in trace['traceEvents'] if e.get('ph') == 'X']
    names = {e['name'] for e in ops}
    # The hybridized LeNet's kernels ran, each with a duration (fused steps keep the op's name).
    assert any('Convolution' in n for n in names), sorted(names)[:20]
    assert any('FullyConnected' in n for n in names), sorted(names)[:20]
    assert all(e['dur'] >= 0 for e in ops)
    if shutil.which('dot'):
        with open(os.path.join(out, 'lenet.png'), 'rb') as f:
            assert f.read(8) == b'\x89PNG\r\n\x1a\n'
        assert 'network drawn in' in printed
    else:
        assert os.path.exists(os.path.join(out, 'lenet.gv'))
