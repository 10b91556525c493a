"""Tracing a HybridBlock: nodes remember the block path and the user's source line, errors name
them, and NDArray-only uses of a Symbol inside hybrid_forward explain themselves."""
import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon.gluon import nn


class _BadDot(nn.HybridBlock):
    def hybrid_forward(self, F, x):
        return F.dot(x, F.ones((7, 3)))   # the inner sizes cannot match


def test_shape_error_names_block_path_file_and_line():
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(5, in_units=4), _BadDot())
    net.initialize()
    net.hybridize()
    with pytest.raises(mx.MXNetError) as e:
        net(mx.nd.ones((2, 4)))
    msg = str(e.value)
    assert 'net.1' in msg and 'test_tracing.py:12' in msg, msg
    assert 'dot' in msg and '[2,5]' in msg and '[7,3]' in msg, msg


class _Branchy(nn.HybridBlock):
    def hybrid_forward(self, F, x):
        if x.sum():
            return x
        return -x


class _Shapey(nn.HybridBlock):
    def hybrid_forward(self, F, x):
        return x.reshape((x.shape[0], -1))


class _Loopy(nn.HybridBlock):
    def hybrid_forward(self, F, x):
        return F.stack(*[r * 2 for r in x])


class _Numpy(nn.HybridBlock):
    def hybrid_forward(self, F, x):
        return x * float(x.asnumpy().sum())


class _InPlace(nn.HybridBlock):
    def hybrid_forward(self, F, x):
        x += 1
        return x


@pytest.mark.parametrize('cls,what,line', [(_Branchy, 'bool', 30), (_Shapey, '.shape', 37),
                                           (_Loopy, 'Iterating', 42), (_Numpy, 'asnumpy', 47),
                                           (_InPlace, 'In-place', 52)])
def test_ndarray_only_use_of_a_symbol_is_explained(cls, what, line):
    blk = cls()
    x = mx.nd.ones((2, 3))
    blk(x)  # imperatively these all work
    blk.hybridize()
    with pytest.raises(mx.base.NotImplementedForSymbol) as e:
        blk(x)
    msg = str(e.value)
    assert what in msg and 'test_tracing.py:%d' % line in msg and 'hybrid_forward' in msg, msg


def test_group_outputs_iterate_while_tracing():
    class Split(nn.HybridBlock):
        def hybrid_forward(self, F, x):
            return F.concat(*[p * 2 for p in F.split(x, num_outputs=3, axis=1)], dim=1)
    blk = Split()
    x = mx.nd.array(np.arange(6.).reshape(2, 3))
    ref = blk(x).asnumpy()
    blk.hybridize()
    np.testing.assert_array_equal(blk(x).asnumpy(), ref)


def test_package_frames_are_told_apart_relative_names_by_the_current_directory(
        tmp_path, monkeypatch):
    # _user_location remembers per file name whether a frame belongs to the package; a
    # relative name (a script run as `python net.py`) must be judged anew after a chdir.
    import os
    from hybridgluon.symbol import symbol as s
    pkg_dir = os.path.dirname(os.path.abspath(s.__file__))
    monkeypatch.chdir(pkg_dir)
    assert s._in_package('symbol.py')
    monkeypatch.chdir(tmp_path)
    assert not s._in_package('symbol.py')
    assert s._in_package(os.path.join(pkg_dir, 'symbol.py'))
    assert s._in_package(os.path.join(pkg_dir, 'symbol.py'))      # remembered
    assert not s._in_package(__file__)
