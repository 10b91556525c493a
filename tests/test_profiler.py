"""mx.profiler: per-op events from the executor and the imperative path, fused groups, user
events, the Chrome trace file, the aggregate table, threads, and nothing when off."""
import json
import threading
import time

import numpy as np
import pytest

import hybridgluon as mx
from hybridgluon import _core, autograd, gluon, nd, profiler
from hybridgluon.gluon import nn


@pytest.fixture(autouse=True)
def clean_profiler(tmp_path):
    """Each test starts stopped, with defaults, no events and no statistics, writing into its
    own directory; it leaves the profiler the same way."""
    def reset():
        profiler.set_state('stop')
        profiler.set_config(filename=str(tmp_path / 'profile.json'))
        _core._prof_dump(True)
        _core._prof_aggregate(True)
    reset()
    yield tmp_path
    reset()


@pytest.fixture
def fusion(monkeypatch):
    """Plans made in the test fuse (whatever the environment says): names of fused steps."""
    monkeypatch.delenv('HG_NO_FUSION', raising=False)


def _trace(tmp_path, finished=True):
    profiler.dump(finished)
    with open(str(tmp_path / 'profile.json')) as f:
        return json.load(f)


def _ops(doc, cat='operator'):
    return [e for e in doc['traceEvents'] if e['ph'] == 'X' and e['cat'] == cat]


def _mlp(units=(16, 8, 4), act='relu'):
    net = nn.HybridSequential()
    for u in units:
        net.add(nn.Dense(u, activation=act))
    net.initialize()
    return net


def _op_nodes(block, data_shape):
    """(name, op) of the op nodes of the block's graph."""
    sym = block(mx.sym.var('data'))
    return [(n['name'], n['op']) for n in json.loads(sym.tojson())['nodes'] if n['op'] != 'null']


def test_off_records_nothing(tmp_path):
    profiler.set_config(profile_all=True, aggregate_stats=True,
                        filename=str(tmp_path / 'profile.json'))
    net = _mlp()
    net.hybridize()
    x = nd.ones((4, 10))
    net(x)
    nd.sqrt(x) + 1
    profiler.Task(profiler.Domain('d'), 't').start()
    profiler.Counter(profiler.Domain('d'), 'c', 3)
    profiler.Marker(profiler.Domain('d'), 'm').mark()
    doc = _trace(tmp_path)
    assert [e['ph'] for e in doc['traceEvents']] == ['M']
    assert json.loads(profiler.dumps(format='json'))['Time'] == {}


def test_imperative_ops_counted(tmp_path):
    profiler.set_config(aggregate_stats=True, filename=str(tmp_path / 'profile.json'))
    profiler.set_state('run')
    x = nd.zeros((30, 30))
    nd.sqrt(x)
    x = x + 1
    x = x + 1
    profiler.set_state('stop')
    nd.sqrt(x)  # after stop: not recorded
    doc = _trace(tmp_path, finished=False)
    names = [e['name'] for e in _ops(doc)]
    assert names == ['_zeros', 'sqrt', '_plus_scalar', '_plus_scalar']
    stats = json.loads(profiler.dumps(format='json'))['Time']['operator']
    assert {k: v['Count'] for k, v in stats.items()} == {'_zeros': 1, 'sqrt': 1,
                                                          '_plus_scalar': 2}


def test_backward_ops_recorded(tmp_path):
    profiler.set_state('run')
    x = nd.array(np.arange(6.0).reshape(2, 3))
    x.attach_grad()
    with autograd.record():
        y = nd.exp(x)
    y.backward()
    profiler.set_state('stop')
    names = {e['name'] for e in _ops(_trace(tmp_path))}
    assert 'exp' in names
    # The backward pass runs ops of its own (exp's gradient multiplies by exp(x)).
    assert len(names - {'exp', '_array', '_zeros'}) >= 1
    np.testing.assert_allclose(x.grad.asnumpy(), np.exp(np.arange(6.0).reshape(2, 3)),
                               rtol=1e-5)


def test_every_plan_step_has_an_event(tmp_path, monkeypatch):
    monkeypatch.setenv('HG_NO_FUSION', '1')
    net = _mlp(act='tanh')
    net.hybridize()
    x = nd.ones((5, 10))
    nodes = _op_nodes(net, x.shape)
    profiler.set_config(profile_symbolic=True, profile_imperative=False, profile_memory=False,
                        filename=str(tmp_path / 'profile.json'))
    profiler.set_state('run')
    calls = 3
    for _ in range(calls):
        net(x)
    profiler.set_state('stop')
    events = _ops(_trace(tmp_path))
    # One event per op node and call, named by op, the node as its argument, in plan order.
    assert len(events) == calls * len(nodes)
    got = [(e['args']['node'], e['name']) for e in events]
    assert got == nodes * calls


def test_fused_group_is_one_event(tmp_path, fusion):
    class Chain(gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            return F.relu(F.exp(x) * 2 - 1)
    net = Chain()
    net.hybridize()
    x = nd.array(np.linspace(-1, 1, 40000).reshape(200, 200))
    ref = np.maximum(np.exp(x.asnumpy()) * 2 - 1, 0)
    nodes = [n for n, _ in _op_nodes(net, x.shape)]
    profiler.set_config(filename=str(tmp_path / 'profile.json'), aggregate_stats=True)
    profiler.set_state('run')
    np.testing.assert_allclose(net(x).asnumpy(), ref, rtol=1e-5, atol=1e-6)
    net(x)
    profiler.set_state('stop')
    events = _ops(_trace(tmp_path, finished=False))
    assert len(events) == 2
    for e in events:
        assert e['name'] == 'fused[exp _mul_scalar _minus_scalar relu]'
        assert e['args']['node'].split() == nodes
    stats = json.loads(profiler.dumps(format='json'))['Time']['operator']
    assert stats['fused[exp _mul_scalar _minus_scalar relu]']['Count'] == 2


def test_trace_is_chrome_format(tmp_path):
    profiler.set_config(profile_all=True, filename=str(tmp_path / 'profile.json'))
    profiler.set_state('run')
    net = _mlp()
    net.hybridize()
    net(nd.ones((2, 7)))
    d = profiler.Domain('dom')
    c = profiler.Counter(d, 'ctr', 5)
    c += 2
    c -= 4
    c.increment(10)
    c.decrement()
    profiler.Marker(d, 'mark"quoted\\').mark('global')
    profiler.Marker(d, 'm2').mark('thread')
    with profiler.Frame(d, 'frame1'):
        pass
    profiler.set_state('stop')
    doc = _trace(tmp_path)
    assert doc['displayTimeUnit'] == 'ms'
    evs = doc['traceEvents']
    assert evs[0] == {'name': 'process_name', 'ph': 'M', 'pid': evs[0]['pid'],
                      'args': {'name': 'hybridgluon'}}
    for e in evs:
        assert e['ph'] in ('M', 'X', 'C', 'i')
        assert isinstance(e['pid'], int)
        if e['ph'] == 'M':
            continue
        assert isinstance(e['tid'], int) and isinstance(e['ts'], (int, float))
        assert isinstance(e['name'], str) and isinstance(e['cat'], str)
        if e['ph'] == 'X':
            assert e['dur'] >= 0
        if e['ph'] == 'C':
            assert list(e['args']) == [e['name']]
    tids = {e['tid'] for e in evs if e['ph'] != 'M'}
    named = {e['tid'] for e in evs if e['ph'] == 'M' and e['name'] == 'thread_name'}
    assert tids <= named
    counter = [e['args']['ctr'] for e in evs if e['ph'] == 'C' and e['name'] == 'ctr']
    assert counter == [5, 7, 3, 13, 12]
    marks = {e['name']: e['s'] for e in evs if e['ph'] == 'i'}
    assert marks == {'mark"quoted\\': 'g', 'm2': 't'}
    assert {e['cat'] for e in evs if e['ph'] == 'i'} == {'dom,instant_marker'}
    assert [e['name'] for e in _ops(doc, 'dom,frame')] == ['frame1']
    memory = [e['args']['Memory: cpu/0'] for e in evs if e.get('cat') == 'Device Storage']
    assert memory and all(m > 0 for m in memory)
    # Time order within a thread, and ops that do not overlap (one thread runs them in turn).
    ops = _ops(doc)
    for a, b in zip(ops, ops[1:]):
        assert a['ts'] + a['dur'] <= b['ts'] + 1e-3


def test_op_time_accounts_for_the_forward(tmp_path, fusion):
    """The op events of a compute-bound hybridized forward lie inside the call (the trace's
    clock is CLOCK_MONOTONIC, Python's time.monotonic_ns) and add up to most of it."""
    net = _mlp(units=(512, 512, 512))
    net.hybridize()
    x = nd.array(np.random.RandomState(0).rand(256, 512))
    net(x)  # plan once
    profiler.set_config(profile_symbolic=True, profile_memory=False,
                        filename=str(tmp_path / 'profile.json'))
    profiler.set_state('run')
    spans = []
    for _ in range(5):
        t0 = time.monotonic_ns()
        net(x)
        spans.append((t0 / 1e3, time.monotonic_ns() / 1e3))
    profiler.set_state('stop')
    events = _ops(_trace(tmp_path))
    assert len(events) == 5 * 3
    best = 0.0
    for i, (t0, t1) in enumerate(spans):
        mine = events[3 * i:3 * i + 3]
        for e in mine:
            assert t0 <= e['ts'] and e['ts'] + e['dur'] <= t1 + 1e-3
        best = max(best, sum(e['dur'] for e in mine) / (t1 - t0))
    assert 0.5 < best <= 1.0


def test_aggregate_matches_trace(tmp_path):
    profiler.set_config(aggregate_stats=True, profile_memory=False,
                        filename=str(tmp_path / 'profile.json'))
    profiler.set_state('run')
    net = _mlp()
    net.hybridize()
    x = nd.ones((8, 5))
    for _ in range(4):
        net(x)
        nd.relu(x - 0.5)
    with profiler.Task(profiler.Domain('dom'), 'work'):
        nd.ones((3, 3))
    profiler.set_state('stop')
    doc = _trace(tmp_path, finished=False)
    stats = json.loads(profiler.dumps(format='json'))
    assert stats['Unit'] == {'Time': 'ms', 'Memory': 'kB'}
    seen = {}
    for e in doc['traceEvents']:
        if e['ph'] == 'X':
            seen.setdefault((e['cat'], e['name']), []).append(e['dur'] / 1e3)  # us -> ms
    assert set(seen) == {(c, n) for c, d in stats['Time'].items() for n in d}
    for (cat, name), durs in seen.items():
        s = stats['Time'][cat][name]
        assert s['Count'] == len(durs)
        assert s['Total'] == pytest.approx(sum(durs), abs=2e-4 * len(durs))
        assert s['Min'] == pytest.approx(min(durs), abs=1e-4)
        assert s['Max'] == pytest.approx(max(durs), abs=1e-4)
        assert s['Avg'] == pytest.approx(sum(durs) / len(durs), abs=2e-4)
    assert stats['Time']['operator']['relu']['Count'] == 4
    assert stats['Time']['dom']['work']['Count'] == 1
    # The table has the same rows.
    table = profiler.dumps()
    for cat, d in stats['Time'].items():
        assert '\n%s\n=================' % cat in table
        for name, s in d.items():
            row = [ln for ln in table.splitlines() if ln.startswith(name + ' ')]
            assert row and int(row[0][len(name):].split()[0]) == s['Count']
    # dump(finished=True) drops the events, not the statistics; reset drops those.
    profiler.dump(True)
    assert json.loads(profiler.dumps(format='json', reset=True))['Time'] == stats['Time']
    assert json.loads(profiler.dumps(format='json'))['Time'] == {}


@pytest.mark.parametrize('sort_by', ['total', 'avg', 'min', 'max', 'count'])
@pytest.mark.parametrize('ascending', [False, True])
def test_dumps_sorting(sort_by, ascending):
    profiler.set_config(aggregate_stats=True)
    profiler.set_state('run')
    x = nd.ones((50, 50))
    for k in range(1, 5):
        for _ in range(k):
            x = nd.exp(x * 0) if k == 1 else (nd.sqrt(x) if k == 2 else x + k)
    profiler.set_state('stop')
    key = {'total': 'Total', 'avg': 'Avg', 'min': 'Min', 'max': 'Max', 'count': 'Count'}[sort_by]
    doc = json.loads(profiler.dumps(format='json', sort_by=sort_by, ascending=ascending))
    values = [v[key] for v in doc['Time']['operator'].values()]
    assert len(values) >= 3
    assert values == sorted(values, reverse=not ascending)


def test_dumps_needs_aggregate_stats():
    profiler.set_state('run')
    nd.ones((2, 2))
    profiler.set_state('stop')
    assert profiler.dumps() == ''


def test_kinds_of_ops(tmp_path, fusion):
    net = _mlp(units=(3,))
    net.hybridize()
    x = nd.ones((2, 4))
    net(x)
    for imperative, symbolic in ((True, False), (False, True)):
        profiler.set_config(profile_imperative=imperative, profile_symbolic=symbolic,
                            filename=str(tmp_path / 'profile.json'))
        profiler.set_state('run')
        net(x)
        nd.sigmoid(x)
        profiler.set_state('stop')
        names = [e['name'] for e in _ops(_trace(tmp_path))]
        assert names == (['sigmoid'] if imperative else ['FullyConnected+fused[Activation]'])


def test_pause_resume(tmp_path):
    profiler.set_state('run')
    nd.ones((2, 2)).exp()
    profiler.pause()
    assert profiler.state() == 'run'
    nd.ones((2, 2)).sqrt()
    with profiler.Event('hidden'):
        pass
    profiler.resume()
    nd.ones((2, 2)).sin()
    with profiler.Event('shown'):
        pass
    profiler.set_state('stop')
    assert profiler.state() == 'stop'
    doc = _trace(tmp_path)
    assert [e['name'] for e in _ops(doc)] == ['_ones', 'exp', '_ones', 'sin']
    assert [e['name'] for e in _ops(doc, 'event')] == ['shown']


def test_scope_names_ops(tmp_path):
    profiler.set_state('run')
    with profiler.scope('outer'):
        nd.ones((2,)).exp()
        with profiler.scope('inner:', append_mode=True):
            nd.ones((2,)).sqrt()
        with profiler.scope('other'):
            nd.ones((2,)).sin()
    nd.ones((2,)).cos()
    profiler.set_state('stop')
    names = [e['name'] for e in _ops(_trace(tmp_path))]
    assert names == ['outer:_ones', 'outer:exp', 'outer:inner:_ones', 'outer:inner:sqrt',
                     'other:_ones', 'other:sin', '_ones', 'cos']


def test_custom_op_names(tmp_path):
    class Twice(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], in_data[0] * 2)

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            self.assign(in_grad[0], req[0], out_grad[0] * 2)

    @mx.operator.register('ProfTwice')
    class TwiceProp(mx.operator.CustomOpProp):
        def __init__(self):
            super().__init__(need_top_grad=True)

        def infer_shape(self, in_shape):
            return in_shape, [in_shape[0]], []

        def create_operator(self, ctx, shapes, dtypes):
            return Twice()

    profiler.set_config(aggregate_stats=True, filename=str(tmp_path / 'profile.json'))
    profiler.set_state('run')
    x = nd.array([1.0, 2.0])
    x.attach_grad()
    with autograd.record():
        y = nd.Custom(x, op_type='ProfTwice')
    y.backward()
    profiler.set_state('stop')
    np.testing.assert_allclose(x.grad.asnumpy(), [2.0, 2.0])
    custom = json.loads(profiler.dumps(format='json'))['Time']['Custom Operator']
    assert custom['ProfTwice::pure_python']['Count'] == 1
    assert custom['_backward_ProfTwice::pure_python']['Count'] == 1
    assert custom['ProfTwice::_mul_scalar']['Count'] == 2  # forward and backward


def test_threads_record_concurrently(tmp_path, fusion):
    """Several Python threads run hybridized blocks (one shared, one each) at once: every
    call's events arrive, each thread's on its own track, none overlapping on a track."""
    nthreads, calls = 4, 20
    shared = _mlp(units=(32, 16))
    shared.hybridize()
    own = [_mlp(units=(8,)) for _ in range(nthreads)]
    x = nd.ones((16, 12))
    for n in own + [shared]:
        n.hybridize()
        n(x)
    profiler.set_config(aggregate_stats=True, profile_imperative=False,
                        filename=str(tmp_path / 'profile.json'))
    profiler.set_state('run')
    barrier = threading.Barrier(nthreads)
    errors = []

    def work(i):
        try:
            barrier.wait()
            for _ in range(calls):
                shared(x)
                own[i](x)
        except Exception as e:  # noqa: BLE001  (reported below)
            errors.append(e)
    threads = [threading.Thread(target=work, args=(i,)) for i in range(nthreads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    profiler.set_state('stop')
    assert not errors
    doc = _trace(tmp_path, finished=False)
    ops = _ops(doc)
    # shared: two FC+relu steps per call; own: one.
    assert len(ops) == nthreads * calls * 3
    by_tid = {}
    for e in ops:
        by_tid.setdefault(e['tid'], []).append(e)
    assert len(by_tid) == nthreads
    for evs in by_tid.values():
        assert len(evs) == calls * 3
        for a, b in zip(evs, evs[1:]):
            assert a['ts'] + a['dur'] <= b['ts'] + 1e-3
    stats = json.loads(profiler.dumps(format='json'))['Time']['operator']
    assert sum(s['Count'] for s in stats.values()) == nthreads * calls * 3


def test_continuous_dump_grows(tmp_path):
    profiler.set_config(continuous_dump=True, filename=str(tmp_path / 'profile.json'))
    profiler.set_state('run')
    sizes = []
    for i in range(3):
        nd.ones((2, 2)) + i
        profiler.dump(False)
        sizes.append(len(_ops(json.load(open(str(tmp_path / 'profile.json'))))))
    profiler.dump(True)
    profiler.dump(True)
    assert sizes == [2, 4, 6]
    assert _ops(json.load(open(str(tmp_path / 'profile.json')))) == []
    profiler.set_state('stop')


def test_bad_arguments_raise():
    with pytest.raises(mx.MXNetError, match='unknown setting .profile_everything'):
        profiler.set_config(profile_everything=True)
    with pytest.raises(mx.MXNetError, match="'profile_memory'"):
        profiler.set_config(profile_memory='maybe')
    with pytest.raises(mx.MXNetError, match="expected 'run' or 'stop'"):
        profiler.set_state('go')
    with pytest.raises(mx.MXNetError, match='server'):
        profiler.set_state('run', profile_process='server')
    for kw in ({'format': 'xml'}, {'sort_by': 'name'}, {'ascending': 'yes'}, {'reset': 2}):
        with pytest.raises(mx.MXNetError, match='Invalid value'):
            profiler.dumps(**kw)
    with pytest.raises(mx.MXNetError, match='invalid scope'):
        profiler.Marker(profiler.Domain('d'), 'm').mark('galaxy')
    with pytest.raises(mx.MXNetError, match='stop.. without start'):
        profiler.Task(profiler.Domain('d'), 't').stop()



def test_unwritable_file_loses_nothing(tmp_path):
    profiler.set_config(filename=str(tmp_path / 'missing-dir' / 'profile.json'))
    profiler.set_state('run')
    nd.ones((2,)).exp()
    profiler.set_state('stop')
    with pytest.raises(mx.MXNetError, match='cannot write the trace'):
        profiler.dump()
    profiler.set_config(filename=str(tmp_path / 'profile.json'))
    assert [e['name'] for e in _ops(_trace(tmp_path))] == ['_ones', 'exp']


def test_mx_profiler_is_the_module():
    assert mx.profiler is profiler
    assert str(profiler.Domain('abc')) == 'abc'
    d = profiler.Domain('abc')
    assert isinstance(d.new_task('t'), profiler.Task)
    assert isinstance(d.new_frame('f'), profiler.Frame)
    assert isinstance(d.new_counter('c'), profiler.Counter)
    assert isinstance(d.new_marker('m'), profiler.Marker)


def test_executor_steps(tmp_path, fusion):
    a, b = mx.sym.var('a'), mx.sym.var('b')
    c = mx.sym.dot(a, b, name='mm') + 1
    ex = c.simple_bind(mx.cpu(), a=(3, 4), b=(4, 5))
    profiler.set_config(profile_imperative=False, filename=str(tmp_path / 'profile.json'))
    profiler.set_state('run')
    ex.forward()
    ex.forward()
    profiler.set_state('stop')
    events = _ops(_trace(tmp_path))
    assert [(e['name'], e['args']['node'].split()[0]) for e in events] == \
        [('dot+fused[_plus_scalar]', 'mm')] * 2


def test_control_flow_nests_its_body(tmp_path):
    """A foreach node's event encloses the events of its body's steps, one set per step of the
    loop: the trace nests them as a call tree."""
    def body(x, s):
        return x * 2, [s[0] + x]

    class Loop(gluon.HybridBlock):
        def hybrid_forward(self, F, x, s):
            out, st = F.contrib.foreach(body, x, [s])
            return out, st[0]
    net = Loop()
    net.hybridize()
    x, s = nd.ones((3, 2)), nd.zeros((2,))
    net(x, s)
    profiler.set_config(profile_imperative=False, filename=str(tmp_path / 'profile.json'))
    profiler.set_state('run')
    net(x, s)
    profiler.set_state('stop')
    events = _ops(_trace(tmp_path))
    loop = [e for e in events if e['name'] == '_foreach']
    inner = [e for e in events if e['name'] != '_foreach']
    assert len(loop) == 1 and len(inner) == 3 * 2
    assert sorted({e['name'] for e in inner}) == ['_mul_scalar', 'elemwise_add']
    for e in inner:
        assert loop[0]['ts'] <= e['ts'] and \
            e['ts'] + e['dur'] <= loop[0]['ts'] + loop[0]['dur'] + 1e-3


def test_threads_record_through_c_while_dumping(tmp_path):
    """Threads record through the C API with the GIL released (ctypes drops it) while the
    main thread dumps and folds statistics: every event arrives once, intact."""
    import ctypes
    from hybridgluon.base import _LIB
    rec = _LIB.hg_prof_record
    rec.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char,
                    ctypes.c_int64, ctypes.c_int64, ctypes.c_int64]
    rec.restype = ctypes.c_bool
    profiler.set_config(aggregate_stats=True, filename=str(tmp_path / 'profile.json'))
    profiler.set_state('run')  # events carry the aggregate flag of the moment they are made
    nthreads, n = 4, 3000
    failed = []

    def work(i):
        name = ('op%d' % i).encode()
        failed.extend(k for k in range(n) if not rec(b'race', name, b'node', b'X', 1000 + k, 7, 0))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(nthreads)]
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        json.loads(_core._prof_dump(False))  # a consistent document while they write
        _core._prof_aggregate(False)
    for t in threads:
        t.join()
    profiler.set_state('stop')
    assert failed == []
    events = _ops(_trace(tmp_path, finished=False), 'race')
    assert len(events) == nthreads * n
    per_name = {}
    for e in events:
        assert e['args'] == {'node': 'node'} and e['dur'] == 0.007
        per_name.setdefault(e['name'], set()).add(e['tid'])
    assert sorted(per_name) == ['op%d' % i for i in range(nthreads)]
    assert all(len(tids) == 1 for tids in per_name.values())
    stats = json.loads(profiler.dumps(format='json'))['Time']['race']
    assert {k: v['Count'] for k, v in stats.items()} == {'op%d' % i: n for i in range(nthreads)}
