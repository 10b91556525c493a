"""Every registered op is tested somewhere: each tests/test_ops_*.py lists OPS_COVERED."""
import glob
import importlib.util
import os

import hybridgluon as mx

HERE = os.path.dirname(os.path.abspath(__file__))


def test_every_op_has_a_test():
    covered = set()
    paths = (glob.glob(os.path.join(HERE, 'test_ops_*.py'))
             + glob.glob(os.path.join(HERE, 'test_grad*.py'))
             + [os.path.join(HERE, 'test_random.py')])
    for path in paths:
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


def _lists(name):
    out = set()
    for path in glob.glob(os.path.join(HERE, 'test_grad*.py')):
        spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3] + '_cov', path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        out.update(getattr(mod, name, []))
    return out


# Ops whose derivative is not implemented on purpose: backward kernels whose own derivative
# (second order) is not needed, and optimizer updates (never differentiated). Differentiating
# through them raises an error naming the op.
_NO_RULE_OK_PREFIXES = ('_backward_',)
_NO_RULE_OK = {'_digamma', 'batch_take'}


def test_every_differentiable_op_has_a_checked_gradient_rule():
    """An op either has the no-gradient flag or a gradient rule, and every rule is checked
    against finite differences in a tests/test_grad_*.py (listed in GRADS_COVERED)."""
    covered = _lists('GRADS_COVERED')
    missing_rule, unchecked = [], []
    for name in mx._core.list_ops():
        info = mx._core.op_info(name)
        if info['no_grad']:
            continue
        if not info['has_grad']:
            if not (name.startswith(_NO_RULE_OK_PREFIXES) or name in _NO_RULE_OK):
                missing_rule.append(name)
            continue
        if name not in covered and not name.startswith('_backward_'):
            unchecked.append(name)
    assert not missing_rule, 'ops with neither a gradient rule nor HG_OP_NO_GRAD: %s' % missing_rule
    assert not unchecked, 'gradient rules not checked by finite differences: %s' % unchecked
