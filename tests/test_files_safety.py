"""Model-file writers (B4-B6): Symbol.save, HybridBlock.export, nd.save and save_parameters all
write through one helper (ndarray.utils._replace_files): a unique temporary file beside the
target, flushed, then renamed, so concurrent saves never collide and a reader never sees part
of a file; export renames its parameters before its symbol; symlinks are written through and
an existing file keeps its mode."""
import glob
import os
import stat
import threading

import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon import nd, sym
from hybridgluon.gluon import nn


def _chain(k, length=60):
    """A symbol whose JSON is a few KB and differs with k."""
    s = sym.var('x')
    for i in range(length):
        s = sym.relu(s, name='n%d_%d' % (k, i))
    return s


def _leftovers(*dirs):
    return [f for d in dirs for f in glob.glob(os.path.join(str(d), '*.tmp.*'))]


def _writers_and_reader(write, read, nwriters, rounds):
    """Runs `write(k)` `rounds` times in each of `nwriters` threads while one thread calls
    `read()` until they are done; returns (errors, number of reads)."""
    errors, loads, done = [], [0], threading.Event()

    def writer(k):
        try:
            for _ in range(rounds):
                write(k)
        except Exception as e:  # noqa: BLE001 - every failure is reported to the test
            errors.append(('writer', k, repr(e)))

    def reader():
        while not done.is_set():
            try:
                read()
                loads[0] += 1
            except Exception as e:  # noqa: BLE001
                errors.append(('reader', repr(e)))

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(nwriters)]
    r = threading.Thread(target=reader)
    r.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    done.set()
    r.join(60)
    return errors, loads[0]


# ----------------------------------------------------------------------------------------------
# B4: concurrent saves in one process

def test_concurrent_symbol_saves_same_and_different_paths_with_a_reader(tmp_path):
    shared = str(tmp_path / 'shared-symbol.json')
    symbols = [_chain(k) for k in range(8)]
    texts = {s.tojson() for s in symbols}
    symbols[0].save(shared)

    def write(k):
        symbols[k].save(shared)
        symbols[k].save(str(tmp_path / ('own%d-symbol.json' % k)))

    def read():
        got = sym.load(shared).tojson()
        assert got in texts, 'unknown content of %d bytes' % len(got)

    errors, loads = _writers_and_reader(write, read, 8, 25)
    assert errors == []
    assert loads > 0
    assert sym.load(shared).tojson() in texts
    for k in range(8):
        assert sym.load(str(tmp_path / ('own%d-symbol.json' % k))).tojson() == \
            symbols[k].tojson()
    assert _leftovers(tmp_path) == []


def test_concurrent_nd_saves_with_a_reader(tmp_path):
    path = str(tmp_path / 'a.params')
    datas = [{'w': nd.full((256,), k), 'b': nd.full((3,), -k)} for k in range(6)]
    nd.save(path, datas[0])

    def read():
        got = nd.load(path)
        k = got['w'][0].asscalar()
        assert (got['w'].asnumpy() == k).all() and (got['b'].asnumpy() == -k).all()

    errors, _ = _writers_and_reader(lambda k: nd.save(path, datas[k]), read, 6, 20)
    assert errors == []
    assert _leftovers(tmp_path) == []


def test_failed_symbol_save_leaves_the_old_file_and_no_temporary(tmp_path):
    s = _chain(1, 3)
    with pytest.raises(mx.MXNetError, match="Cannot save symbol file '.*no_dir.*No such file"):
        s.save(str(tmp_path / 'no_dir' / 'x-symbol.json'))
    adir = tmp_path / 'adir'
    adir.mkdir()
    with pytest.raises(mx.MXNetError, match="Cannot save symbol file '%s'" % adir):
        s.save(str(adir))  # written in full, then the rename over a directory fails
    assert sorted(os.listdir(tmp_path)) == ['adir']
    f = tmp_path / 'ok-symbol.json'
    s.save(str(f))
    before = f.read_text()
    with pytest.raises(TypeError):
        s.save(123)
    assert f.read_text() == before and _leftovers(tmp_path) == []


# ----------------------------------------------------------------------------------------------
# B5: export writes the parameters first and the symbol last

def _net(units, seed):
    mx.random.seed(seed)
    net = nn.HybridSequential()
    net.add(nn.Dense(units, in_units=3, activation='relu'), nn.Dense(2, in_units=units))
    net.initialize()
    net.hybridize()
    return net


def _imports(prefix, epoch=0):
    return mx.gluon.SymbolBlock.imports(prefix + '-symbol.json', ['data'],
                                        prefix + '-%04d.params' % epoch)


def test_failed_params_write_keeps_the_old_pair(tmp_path):
    x = nd.array(np.random.RandomState(0).rand(2, 3))
    prefix = str(tmp_path / 'm')
    old = _net(4, 1)
    want = old(x).asnumpy()
    old.export(prefix, epoch=1)
    old_json = (tmp_path / 'm-symbol.json').read_bytes()
    new = _net(7, 2)  # another architecture: its graph with the old parameters cannot load
    new(x)
    os.remove(prefix + '-0001.params')
    os.mkdir(prefix + '-0001.params')  # the parameters cannot be replaced
    os.rename(str(tmp_path / 'm-symbol.json'), str(tmp_path / 'keep'))
    old.export(prefix, epoch=0)  # the old pair at epoch 0
    os.rename(str(tmp_path / 'keep'), str(tmp_path / 'm-symbol.json'))
    with pytest.raises(mx.MXNetError, match="Cannot save NDArray file '.*m-0001.params'"):
        new.export(prefix, epoch=1)
    assert (tmp_path / 'm-symbol.json').read_bytes() == old_json  # not the new graph
    np.testing.assert_allclose(_imports(prefix)(x).asnumpy(), want, rtol=1e-6)
    assert _leftovers(tmp_path) == []


def test_export_into_a_missing_directory_writes_nothing(tmp_path):
    net = _net(4, 1)
    net(nd.ones((1, 3)))
    with pytest.raises(mx.MXNetError, match='No such file'):
        net.export(str(tmp_path / 'missing' / 'm'))
    assert os.listdir(tmp_path) == []


_FSIZE_EXPORT = """
import resource, signal, sys
sys.path.insert(0, sys.argv[2])
import hybridgluon as mx
from hybridgluon.gluon import nn
net = nn.HybridSequential()
net.add(nn.Dense(512, in_units=512), nn.Dense(2, in_units=512))
net.initialize()
net.hybridize()
net(mx.nd.ones((1, 512)))
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (65536, 65536))  # the params (1 MB) cannot be written
try:
    net.export(sys.argv[1])
except mx.MXNetError as e:
    print(e)
"""


def test_params_write_failing_half_way_keeps_the_old_pair(tmp_path):
    from conftest import run_python
    x = nd.array(np.random.RandomState(0).rand(2, 3))
    prefix = str(tmp_path / 'm')
    old = _net(4, 1)
    want = old(x).asnumpy()
    old.export(prefix)
    before = {f: (tmp_path / f).read_bytes() for f in os.listdir(tmp_path)}
    root = os.path.dirname(os.path.dirname(os.path.abspath(mx.__file__)))
    out = run_python(['-c', _FSIZE_EXPORT, prefix, root], timeout=120)
    assert "Cannot save NDArray file '%s-0000.params': File too large" % prefix in out.stdout, out
    assert {f: (tmp_path / f).read_bytes() for f in os.listdir(tmp_path)} == before
    np.testing.assert_allclose(_imports(prefix)(x).asnumpy(), want, rtol=1e-6)


# ----------------------------------------------------------------------------------------------
# B6: every writer writes through symlinks and keeps an existing file's mode

def _write_symbol(path, k):
    _chain(k, 2).save(path)


def _check_symbol(path, k):
    assert sym.load(path).tojson() == _chain(k, 2).tojson()


def _write_nd(path, k):
    nd.save(path, {'a': nd.full((2,), k)})


def _check_nd(path, k):
    assert nd.load(path)['a'].asnumpy().tolist() == [k, k]


def _block(k):
    net = nn.Dense(2, in_units=1)
    net.initialize(mx.init.Constant(k))
    return net


def _write_params(path, k):
    _block(k).save_parameters(path)


def _check_params(path, k):
    net = nn.Dense(2, in_units=1)
    net.load_parameters(path)
    assert net.weight.data().asnumpy().tolist() == [[k], [k]]


def _write_collect(path, k):
    _block(k).collect_params().save(path)


def _check_collect(path, k):
    assert [v.asnumpy().tolist() for v in nd.load(path).values()] == [[[k], [k]], [0, 0]]


WRITERS = {'Symbol.save': (_write_symbol, _check_symbol),
           'nd.save': (_write_nd, _check_nd),
           'save_parameters': (_write_params, _check_params),
           'ParameterDict.save': (_write_collect, _check_collect)}


@pytest.fixture
def umask_027():
    old = os.umask(0o027)
    yield
    os.umask(old)


@pytest.mark.parametrize('writer', sorted(WRITERS))
def test_writer_keeps_mode_and_new_files_follow_the_umask(writer, tmp_path, umask_027):
    write, check = WRITERS[writer]
    f = str(tmp_path / 'f')
    write(f, 1)
    assert stat.S_IMODE(os.stat(f).st_mode) == 0o640  # 0666 less the umask, like open()
    check(f, 1)
    for mode in (0o600, 0o644, 0o660):
        os.chmod(f, mode)
        write(f, 2)
        assert stat.S_IMODE(os.stat(f).st_mode) == mode
        check(f, 2)
    assert os.listdir(tmp_path) == ['f']


@pytest.mark.parametrize('writer', sorted(WRITERS))
def test_writer_writes_through_symlinks(writer, tmp_path):
    write, check = WRITERS[writer]
    real_dir, link_dir = tmp_path / 'real', tmp_path / 'links'
    real_dir.mkdir()
    link_dir.mkdir()
    target = str(real_dir / 'target')
    write(target, 1)
    os.chmod(target, 0o600)
    link = str(link_dir / 'link')
    os.symlink(os.path.relpath(target, str(link_dir)), link)
    write(link, 3)
    assert os.path.islink(link)
    check(target, 3)
    check(link, 3)
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o600
    # a link to a link resolves all the way
    link2 = str(tmp_path / 'link2')
    os.symlink(link, link2)
    write(link2, 4)
    assert os.path.islink(link2) and os.path.islink(link)
    check(target, 4)
    # a dangling link names the file to create, as open() does
    dangling = str(link_dir / 'dangling')
    os.symlink(str(real_dir / 'new'), dangling)
    write(dangling, 5)
    assert os.path.islink(dangling)
    check(str(real_dir / 'new'), 5)
    assert sorted(os.listdir(str(real_dir))) == ['new', 'target']
    assert sorted(os.listdir(str(link_dir))) == ['dangling', 'link']


def test_export_writes_both_files_through_symlinks_and_keeps_modes(tmp_path, umask_027):
    x = nd.array(np.random.RandomState(0).rand(2, 3))
    real = tmp_path / 'real'
    real.mkdir()
    prefix = str(tmp_path / 'm')
    net = _net(4, 1)
    net(x)
    net.export(str(real / 'm'))
    for f in os.listdir(str(real)):
        assert stat.S_IMODE(os.stat(str(real / f)).st_mode) == 0o640
        os.chmod(str(real / f), 0o600)
        os.symlink(os.path.join('real', f), str(tmp_path / f))
    net2 = _net(4, 2)
    want = net2(x).asnumpy()
    net2.export(prefix)
    for f in os.listdir(str(real)):
        assert os.path.islink(str(tmp_path / f))
        assert stat.S_IMODE(os.stat(str(real / f)).st_mode) == 0o600
    np.testing.assert_allclose(_imports(str(real / 'm'))(x).asnumpy(), want, rtol=1e-6)
    assert sorted(os.listdir(str(tmp_path))) == ['m-0000.params', 'm-symbol.json', 'real']
    assert _leftovers(tmp_path, real) == []


def test_replace_files_rejects_bad_jobs_without_touching_files(tmp_path):
    from hybridgluon.ndarray.utils import _replace_files
    f = tmp_path / 'a'
    f.write_bytes(b'old')
    with pytest.raises(TypeError):
        _replace_files([(str(f), 'file', 'not bytes')])
    with pytest.raises(mx.MXNetError, match='0-d'):
        _replace_files([(str(f), 'file', b'new'),
                        (str(tmp_path / 'b'), 'NDArray file', ([nd.empty(())], None))])
    assert f.read_bytes() == b'old' and os.listdir(tmp_path) == ['a']
    _replace_files([(str(f), 'file', b'new'), (str(tmp_path / 'b'), 'file', b'')])
    assert f.read_bytes() == b'new' and (tmp_path / 'b').read_bytes() == b''
