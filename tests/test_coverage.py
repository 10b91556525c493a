"""Every registered op is tested somewhere: each tests/test_ops_*.py lists OPS_COVERED."""
import glob
import importlib.util
import os

import hybridgluon as mx

HERE = os.path.dirname(os.path.abspath(__file__))


def test_every_op_has_a_test():
    covered = set()
    for path in glob.glob(os.path.join(HERE, 'test_ops_*.py')) + glob.glob(os.path.join(HERE, 'test_grad*.py')) + [os.path.join(HERE, 'test_random.py')]:
        if not os.path.exists(path):
            continue
        spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        covered.update(getattr(mod, 'OPS_COVERED', []))
    missing = sorted(set(mx._core.list_ops()) - covered)
    assert not missing, 'ops without tests: %s' % missing


def test_nd_namespace_generated_from_registry():
    for name in mx._core.list_ops():
        info = mx._core.op_info(name)
        for alias in [name] + info['aliases']:
            assert hasattr(mx.nd, alias), alias
    assert mx.nd.flip is mx.nd.reverse or mx.nd.flip.name == 'reverse'
