"""Data-parallel training over MPI (hybridgluon.distributed, the 'dist_sync' kvstore).

Each test starts tests/dist_worker.py under `mpirun -np 2`, `-np 3 --oversubscribe` or alone
(a job of one), and checks what the ranks wrote or how the job ended. The reference for
training is a single-process run here with the same global batches. Without Open MPI's mpirun
and mpi4py the tests skip, unless HG_REQUIRE_MPI=1 (CI) makes that a failure.
"""
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon import autograd, gluon
from hybridgluon.base import MXNetError

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import dist_worker  # noqa: E402

PKG_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(mx.__file__)))


def _have_mpi():
    if not shutil.which('mpirun'):
        return 'mpirun not found (apt-get install openmpi-bin libopenmpi-dev)'
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return 'mpi4py not installed'
    return None


_why = _have_mpi()
if _why and os.environ.get('HG_REQUIRE_MPI') == '1':
    raise RuntimeError('HG_REQUIRE_MPI=1 but ' + _why)
pytestmark = pytest.mark.skipif(_why is not None, reason=_why or '')


def _launch(np_, scenario, outdir, timeout=240, env=None):
    """Runs the worker on np_ ranks (np_=0: alone, no launcher); returns (rc, output, secs)."""
    full_env = dict(os.environ)
    full_env['PYTHONPATH'] = os.pathsep.join([PKG_PARENT, full_env.get('PYTHONPATH', '')])
    # Open MPI refuses root without these; vader's single-copy needs ptrace rights containers
    # often lack.
    full_env.update({'OMPI_ALLOW_RUN_AS_ROOT': '1', 'OMPI_ALLOW_RUN_AS_ROOT_CONFIRM': '1',
                     'OMPI_MCA_btl_vader_single_copy_mechanism': 'none',
                     'OMPI_MCA_rmaps_base_oversubscribe': '1', 'HG_NUM_THREADS': '1'})
    full_env.update(env or {})
    cmd = [sys.executable, os.path.join(HERE, 'dist_worker.py'), scenario, str(outdir)]
    if not np_ and 'libtsan' in full_env.get('LD_PRELOAD', ''):
        pytest.skip('a job of one starts its own MPI daemon, which does not run under '
                    'ThreadSanitizer')
    if np_:
        launcher = ['mpirun', '-np', str(np_), '--oversubscribe']
        if 'libtsan' in full_env.get('LD_PRELOAD', ''):
            # ThreadSanitizer (CI): the ranks run under it, mpirun (not instrumented, and
            # noisy under it) does not
            for var in ('LD_PRELOAD', 'TSAN_OPTIONS'):
                launcher += ['-x', '%s=%s' % (var, full_env.get(var, ''))]
            del full_env['LD_PRELOAD']
        cmd = launcher + cmd
    start = time.monotonic()
    proc = subprocess.run(cmd, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          timeout=timeout)
    return proc.returncode, proc.stdout.decode(errors='replace'), time.monotonic() - start


@pytest.mark.parametrize('np_', [0, 2, 3])
def test_collectives_match_numpy(tmp_path, np_):
    # a 1 MiB bucket: the grouped allreduce sends several buckets and reduces in place the
    # arrays larger than one
    rc, out, _ = _launch(np_, 'collectives', tmp_path, env={'HG_DIST_BUCKET_MB': '1'})
    assert rc == 0, out
    assert sorted(os.listdir(tmp_path)) == ['collectives-done-%d' % r
                                            for r in range(max(np_, 1))]


def _reference(api, opt, hybridize, x, y):
    """The single-process run the distributed one must equal: rank 0's initial weights, the
    whole global batch each step."""
    net = dist_worker.make_net(100, hybridize)
    net(mx.nd.array(x[:1]))
    name, kwargs = dist_worker.OPTIMIZERS[opt]
    trainer = gluon.Trainer(net.collect_params(), name, dict(kwargs), kvstore=None)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    g = dist_worker.GLOBAL_BATCH
    for step in range(dist_worker.STEPS):
        part = slice(step * g, (step + 1) * g)
        data, label = mx.nd.array(x[part]), mx.nd.array(y[part])
        with autograd.record():
            loss = loss_fn(net(data), label)
        loss.backward()
        trainer.step(g)
    return {k: v.data().asnumpy() for k, v in net._collect_params_with_prefix().items()}


@pytest.mark.parametrize('np_', [2, 3])
def test_training_equals_single_process(tmp_path, np_):
    rc, out, _ = _launch(np_, 'train', tmp_path)
    assert rc == 0, out
    ranks = [dict(np.load(tmp_path / ('train-%d.npz' % r))) for r in range(np_)]
    x, y = dist_worker._data()
    for api, opt, hyb in dist_worker.VARIANTS:
        want = _reference(api, opt, hyb, x, y)
        start = dist_worker.make_net(100, False)
        start(mx.nd.array(x[:1]))
        start = start._collect_params_with_prefix()
        for pname, ref in want.items():
            key = '%s/%s/%d/%s' % (api, opt, hyb, pname)
            got = ranks[0][key]
            for r in range(1, np_):  # every rank ends with the same parameters, bit for bit
                np.testing.assert_array_equal(ranks[r][key], got, err_msg=key)
            # the same as one process with the whole global batch, to float32 rounding
            # (float16 gradients: to float16 rounding)
            tol = 2e-3 if api == 'hvd_fp16' else 2e-5
            np.testing.assert_allclose(got, ref, rtol=tol, atol=tol, err_msg=key)
            moved = np.abs(ref - start[pname].data().asnumpy())
            assert moved.max() > 1e-3, key  # training changed it: the check is not vacuous
    # checkpoints: every rank asked to save, only rank 0 wrote
    files = sorted(os.listdir(tmp_path))
    assert [f for f in files if f.startswith(('ckpt', 'model'))] == \
        ['ckpt-0.params', 'ckpt-0.states', 'model-0-0000.params', 'model-0-symbol.json']
    assert not [f for f in files if '.tmp' in f]
    loaded = gluon.SymbolBlock.imports(str(tmp_path / 'model-0-symbol.json'), ['data'],
                                       str(tmp_path / 'model-0-0000.params'))
    assert loaded(mx.nd.array(x[:2])).shape == (2, 4)


def test_dist_sync_matches_mxnet(tmp_path):
    # the same calls under real MXNet 1.9.1's dist_sync (2 workers, a ps-lite server):
    # tests/mxnet_ref/gen_dist_ref.py wrote what each worker saw
    import json
    with open(os.path.join(HERE, 'mxnet_ref', 'dist_ref.json')) as f:
        ref = json.load(f)['ranks']
    rc, out, _ = _launch(2, 'mxnet_ref', tmp_path)
    assert rc == 0, out
    for r in range(2):
        with open(tmp_path / ('mxnet_ref-%d.json' % r)) as f:
            got = json.load(f)
        want = ref[str(r)]
        assert (got['rank'], got['num_workers']) == (want['rank'], want['num_workers'])
        for key in ('init', 'push', 'pushpull', 'sgd'):
            np.testing.assert_allclose(got[key], want[key], rtol=1e-6, atol=1e-6, err_msg=key)
        for key in ('weight', 'bias'):
            np.testing.assert_allclose(got['trainer'][key], want['trainer'][key], rtol=1e-5,
                                       atol=1e-6, err_msg=key)


@pytest.mark.parametrize('kind', ['raise', 'exit', 'hang'])
def test_a_failing_rank_ends_the_job(tmp_path, kind):
    rc, out, secs = _launch(2, kind, tmp_path, timeout=120, env={'HG_DIST_TIMEOUT': '5'})
    assert rc != 0, out
    assert secs < 60, (secs, out)  # bounded: nobody waits for the dead rank
    assert not [f for f in os.listdir(tmp_path) if 'done' in f], out
    if kind == 'raise':
        assert 'rank 1 fails on purpose' in out and 'rank 1 of 2 failed' in out, out
    elif kind == 'hang':
        assert 'did not complete within 5 s' in out, out


def test_errors_without_init_and_for_bad_kvstore_types():
    import hybridgluon.distributed as dist
    if not dist.is_initialized():
        with pytest.raises(MXNetError, match='not initialised'):
            dist.rank()
        with pytest.raises(MXNetError, match='not initialised'):
            mx.nd.ones((1,)).asnumpy() and dist.allreduce(mx.nd.ones((1,)))
    with pytest.raises(MXNetError, match='parameter server'):
        mx.kv.create('dist_async')
    with pytest.raises(MXNetError, match='unknown kvstore type'):
        mx.kv.create('dist_sinc')


def _demo(np_, outdir):
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join([PKG_PARENT, env.get('PYTHONPATH', '')])
    env.update({'OMPI_ALLOW_RUN_AS_ROOT': '1', 'OMPI_ALLOW_RUN_AS_ROOT_CONFIRM': '1',
                'OMPI_MCA_btl_vader_single_copy_mechanism': 'none'})
    cmd = [sys.executable, '-m', 'hybridgluon.demo', '--epochs', '1', '--compare-batches', '2',
           '--output', str(outdir)]
    if np_ > 1:
        cmd = ['mpirun', '-np', str(np_), '--oversubscribe'] + cmd
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                          timeout=300, cwd=str(outdir))
    out = proc.stdout.decode(errors='replace')
    assert proc.returncode == 0, out
    acc = [float(line.split('test accuracy ')[1].split(',')[0]) for line in out.splitlines()
           if 'test accuracy' in line]
    assert len(acc) == 1, out
    return out, acc[0]


def test_demo_trains_data_parallel_under_mpirun(tmp_path):
    (tmp_path / 'one').mkdir()
    (tmp_path / 'two').mkdir()
    out2, acc2 = _demo(2, tmp_path / 'two')
    for r in range(2):
        assert 'epoch 1: rank %d of 2 trained' % r in out2, out2
    assert 'summary (2 processes)' in out2 and 'export reload check: ok' in out2, out2
    _, acc1 = _demo(1, tmp_path / 'one')
    # the same global batches: the same accuracy as one process, up to float32 rounding of the
    # summed gradients
    assert abs(acc2 - acc1) < 0.01, (acc1, acc2)
    assert acc1 > 0.5, acc1  # it learned (chance is 0.1)
