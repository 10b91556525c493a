"""Every code cell of the seed tutorials (../shared/seeds) runs against this package, with
`mxnet` replaced by `hybridgluon` in the imports (the project's acceptance check)."""
import os

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER = os.path.join(HERE, '..', '..', 'shared', 'tools', 'run_seeds.py')


@pytest.mark.skipif(not os.path.exists(RUNNER), reason='../shared/tools/run_seeds.py not present')
def test_all_seed_cells_run():
    from conftest import run_python
    proc = run_python([os.path.abspath(RUNNER)], timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert '0 failing cell(s)' in proc.stdout
