#!/usr/bin/env python3
"""Runs Apache MXNet's own Python unit tests, unchanged, against hybridgluon (through the opt-in
`mxnet` alias, hybridgluon.mxnet_alias) and, side by side, against a real MXNet when its Python
is given; prints per file: collected / passed / failed / skipped on each, and how many of the
tests that pass on MXNet pass here.

    python tools/mxnet_suite.py MXNET_SRC [--mxnet-python PY] [--files a.py,b.py] [--out FILE]

MXNET_SRC is an Apache MXNet source tree (its tests/python/unittest is used), kept outside this
repository: MXNet's tests are Apache MXNet's code and are not part of hybridgluon. CONTRIBUTING.md
says how to get the 1.9.1 release's. Both Pythons need pytest, and MXNet 1.9's test helpers
import `nose` (on Python >= 3.10: `pip install pynose`, which provides it).

Each file runs in its own pytest process (cwd: the unittest folder, so MXNet's `common.py`
imports); a small reporting plugin records every test's outcome as it finishes, so a file that
crashes the interpreter still reports the tests before the crash, and the crash itself.
Outcomes: passed (xpass included), failed (errors in setup or teardown too), skipped (xfail
included).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

# The files of MXNet 1.9.1's tests/python/unittest that issue #14 measures.
DEFAULT_FILES = [
    'test_gluon.py', 'test_ndarray.py', 'test_symbol.py', 'test_autograd.py', 'test_operator.py',
    'test_higher_order_grad.py', 'test_infer_shape.py', 'test_infer_type.py', 'test_attr.py',
    'test_executor.py', 'test_contrib_operator.py', 'test_contrib_autograd.py', 'test_base.py',
    'test_engine.py', 'test_dlpack.py', 'test_dynamic_shape.py', 'test_gluon_contrib.py',
    'test_gluon_utils.py', 'test_gluon_save.py', 'test_gluon_model_zoo.py', 'test_test_utils.py',
    'test_runtime.py', 'test_contrib_krprod.py', 'test_contrib_hawkesll.py',
    'test_contrib_stes_op.py', 'test_contrib_optimizer.py',
]

# A pytest plugin, written to a temporary folder and loaded with -p: one JSON line per test
# phase into $HG_SUITE_LOG, flushed at once (so a crash loses nothing before it).
PLUGIN = '''
import json, os

def _write(rec):
    with open(os.environ['HG_SUITE_LOG'], 'a') as f:
        f.write(json.dumps(rec) + '\\n')

def pytest_collectreport(report):
    if report.failed:
        _write({'collect_error': report.nodeid, 'text': str(report.longrepr)[-2000:]})

def pytest_runtest_logreport(report):
    rec = {'id': report.nodeid, 'when': report.when, 'outcome': report.outcome}
    if hasattr(report, 'wasxfail'):
        rec['xfail'] = True
    if report.failed:
        rec['text'] = str(report.longrepr)[-600:]
    _write(rec)
'''


def _outcomes(lines):
    """{test id: 'passed' | 'failed' | 'skipped'} and the collection errors, from the log."""
    phases, errors = {}, []
    for line in lines:
        try:
            rec = json.loads(line)
        except ValueError:
            continue  # a line cut short by a crash
        if 'collect_error' in rec:
            errors.append(rec['collect_error'] or '<module>')
            continue
        phases.setdefault(rec['id'], []).append(rec)
    result = {}
    for tid, recs in phases.items():
        if any(r['outcome'] == 'failed' and not r.get('xfail') for r in recs):
            result[tid] = 'failed'
        elif any(r['outcome'] == 'skipped' for r in recs):
            result[tid] = 'skipped'
        elif any(r['when'] == 'call' and r['outcome'] == 'passed' for r in recs):
            result[tid] = 'passed'
        else:
            result[tid] = 'failed'  # set up, never called: the process died in the test
    return result, errors


def _has_pytest_timeout(python):
    probe = subprocess.run([python, '-c', 'import pytest_timeout'], capture_output=True)
    return probe.returncode == 0


def run_file(python, unittest_dir, name, alias, timeout, plugin_dir, test_timeout=None):
    """Runs one test file; returns {'tests': {id: outcome}, 'errors': [...], 'status': str}.
    test_timeout: seconds per test (pytest-timeout), a test over it counts as failed."""
    fd, log = tempfile.mkstemp(suffix='.jsonl', prefix='hg_suite_')
    os.close(fd)
    env = dict(os.environ, HG_SUITE_LOG=log)
    # Absolute: the tests run from the unittest folder.
    paths = [plugin_dir] + [os.path.abspath(p) for p in env.get('PYTHONPATH', '').split(os.pathsep)
                            if p]
    env['PYTHONPATH'] = os.pathsep.join(paths)
    cmd = ([python, '-m', 'pytest', '-q', '-p', 'no:cacheprovider', '-p', '_hg_suite_report']
           + (['-p', 'hybridgluon.mxnet_alias'] if alias else [])
           + (['--timeout', str(test_timeout)] if test_timeout else [])  # plugin autoloads
           + ['-o', 'addopts=', name])
    start = time.time()
    try:
        proc = subprocess.run(cmd, cwd=unittest_dir, env=env, capture_output=True, text=True,
                              timeout=timeout)
        rc, tail = proc.returncode, (proc.stdout + proc.stderr)[-3000:]
        status = 'ok' if rc in (0, 1) else ('crashed (signal %d)' % -rc if rc < 0 else
                                            'pytest exit %d' % rc)
    except subprocess.TimeoutExpired:
        rc, tail, status = None, '', 'timed out after %d s' % timeout
    with open(log) as f:
        tests, errors = _outcomes(f.readlines())
    os.unlink(log)
    if rc is not None and rc != 0 and not tests and not errors:  # pytest itself did not start
        lines = [ln for ln in tail.splitlines() if ln.strip()]
        status = 'pytest failed: %s' % (lines[-1][:200] if lines else 'exit %d' % rc)
    return {'tests': tests, 'errors': errors, 'status': status, 'seconds': time.time() - start,
            'tail': tail}


def _counts(res):
    t = res['tests'].values()
    return (len(res['tests']), sum(o == 'passed' for o in t), sum(o == 'failed' for o in t),
            sum(o == 'skipped' for o in t))


def _cell(res):
    if res is None:
        return '', '', '', ''
    n, p, f, s = _counts(res)
    note = '' if res['status'] == 'ok' else ' (%s)' % res['status']
    if res['errors']:
        note += ' (collection error)'
    return str(n), str(p), str(f) + note, str(s)


def table(rows, with_mxnet):
    head = ['file', 'collected', 'passed', 'failed', 'skipped']
    if with_mxnet:
        head = (['file'] + ['hg ' + h for h in head[1:]] + ['mx ' + h for h in head[1:]]
                + ['MXNet-passing tests passing here'])
    out = ['| ' + ' | '.join(head) + ' |', '|' + '---|' * len(head)]
    tot_both = tot_mx = 0
    for name, ours, theirs in rows:
        cells = [name] + list(_cell(ours))
        if with_mxnet:
            cells += list(_cell(theirs))
            mx_pass = {t for t, o in theirs['tests'].items() if o == 'passed'}
            both = sum(ours['tests'].get(t) == 'passed' for t in mx_pass)
            tot_both += both
            tot_mx += len(mx_pass)
            cells.append('%d of %d' % (both, len(mx_pass)))
        out.append('| ' + ' | '.join(cells) + ' |')
    if with_mxnet:
        pct = 100.0 * tot_both / tot_mx if tot_mx else 0.0
        out.append('')
        out.append('Of the %d tests that pass on MXNet, %d (%.1f%%) pass on hybridgluon.'
                   % (tot_mx, tot_both, pct))
    else:
        tot = [sum(_counts(o)[i] for _, o, _ in rows) for i in range(4)]
        out.append('| total | %d | %d | %d | %d |' % tuple(tot))
    return '\n'.join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('mxnet_src', help='an Apache MXNet source tree (tests/python/unittest)')
    ap.add_argument('--files', help='comma-separated test files (default: issue #14\'s list)')
    ap.add_argument('--python', default=sys.executable,
                    help='the Python with hybridgluon and pytest (default: this one)')
    ap.add_argument('--mxnet-python', help='a Python with real MXNet and pytest: run it too')
    ap.add_argument('--mxnet-results', help='instead of running MXNet again, its outcomes from '
                    'an earlier run\'s --json file (MXNet\'s side does not change)')
    ap.add_argument('--timeout', type=int, default=1800, help='seconds per file and library')
    ap.add_argument('--test-timeout', type=int,
                    help='seconds per test (needs pytest-timeout in that Python); a test over it '
                         'fails instead of holding up its whole file')
    ap.add_argument('--out', help='also write the table (markdown) to this file')
    ap.add_argument('--json', help='write every test\'s outcome on each side to this file')
    ap.add_argument('-v', '--verbose', action='store_true', help='print failing test ids')
    args = ap.parse_args(argv)

    unittest_dir = os.path.join(os.path.abspath(args.mxnet_src), 'tests', 'python', 'unittest')
    if not os.path.isdir(unittest_dir):
        ap.error('%s has no tests/python/unittest' % args.mxnet_src)
    files = args.files.split(',') if args.files else DEFAULT_FILES
    missing = [f for f in files if not os.path.exists(os.path.join(unittest_dir, f))]
    if missing:
        ap.error('not in %s: %s' % (unittest_dir, ', '.join(missing)))

    if args.mxnet_python and args.mxnet_results:
        ap.error('give --mxnet-python or --mxnet-results, not both')
    earlier = None
    if args.mxnet_results:
        with open(args.mxnet_results) as f:
            earlier = json.load(f)
        lacking = [n for n in files if not (earlier.get(n) or {}).get('mxnet')]
        if lacking:
            ap.error('%s has no MXNet outcomes for %s' % (args.mxnet_results, ', '.join(lacking)))
    with_mxnet = bool(args.mxnet_python or earlier)
    test_timeout = {}
    for py in filter(None, [args.python, args.mxnet_python]):
        usable = args.test_timeout and _has_pytest_timeout(py)
        test_timeout[py] = args.test_timeout if usable else None
        if args.test_timeout and not test_timeout[py]:
            print('note: %s has no pytest-timeout; --test-timeout is not applied there' % py,
                  file=sys.stderr)
    rows, dump = [], {}
    with tempfile.TemporaryDirectory() as plugin_dir:
        with open(os.path.join(plugin_dir, '_hg_suite_report.py'), 'w') as f:
            f.write(PLUGIN)
        for name in files:
            ours = run_file(args.python, unittest_dir, name, True, args.timeout, plugin_dir,
                            test_timeout[args.python])
            theirs = (run_file(args.mxnet_python, unittest_dir, name, False, args.timeout,
                               plugin_dir, test_timeout[args.mxnet_python])
                      if args.mxnet_python else None)
            if earlier:
                theirs = {'tests': earlier[name]['mxnet'], 'errors': [], 'seconds': 0.0,
                          'status': earlier[name].get('mxnet_status', 'ok')}
            rows.append((name, ours, theirs))
            line = '%-28s hybridgluon %s/%s passed (%.0f s, %s)' % (
                name, _counts(ours)[1], _counts(ours)[0], ours['seconds'], ours['status'])
            if theirs:
                line += ', MXNet %s/%s (%.0f s, %s)' % (_counts(theirs)[1], _counts(theirs)[0],
                                                       theirs['seconds'], theirs['status'])
            print(line, file=sys.stderr, flush=True)
            if args.verbose:
                for tid, o in sorted(ours['tests'].items()):
                    if o == 'failed' and (not theirs or theirs['tests'].get(tid) == 'passed'):
                        print('    failed here: %s' % tid, file=sys.stderr)
            dump[name] = {'hybridgluon': ours['tests'], 'hybridgluon_status': ours['status'],
                          'mxnet': theirs['tests'] if theirs else None,
                          'mxnet_status': theirs['status'] if theirs else None}
    text = table(rows, with_mxnet)
    print(text)
    if args.out:
        with open(args.out, 'w') as f:
            f.write(text + '\n')
    if args.json:
        with open(args.json, 'w') as f:
            json.dump(dump, f, indent=1, sort_keys=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
