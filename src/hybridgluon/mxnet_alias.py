"""An opt-in `mxnet` alias: after install(), `import mxnet` and `import mxnet.gluon.nn` give
hybridgluon and its submodules, so code written for MXNet runs with its imports unchanged.

Nothing installs it behind the user's back: importing hybridgluon does not, and install() refuses
when a real MXNet has already been imported in the process. Three ways to turn it on:

    python -m hybridgluon.run script.py [args]        # a script (or -m module), see run.py
    python -m pytest -p hybridgluon.mxnet_alias ...   # as a pytest plugin (MXNet's own tests)
    import hybridgluon.mxnet_alias; hybridgluon.mxnet_alias.install()

`mxnet.X` is the very module object `hybridgluon.X` (its __name__ stays hybridgluon.X); a
submodule hybridgluon lacks raises ModuleNotFoundError naming both.
"""
import importlib
import importlib.abc
import importlib.util
import sys
import threading

ALIAS = 'mxnet'
TARGET = 'hybridgluon'

_lock = threading.Lock()
_finder = None


def _target_name(fullname):
    return TARGET + fullname[len(ALIAS):]


class _Loader(importlib.abc.Loader):
    """Hands back hybridgluon's module for an mxnet name; executes nothing itself."""

    def __init__(self, module):
        self._module = module
        self._spec = module.__spec__

    def create_module(self, spec):
        return self._module

    def exec_module(self, module):
        # The import system stamped the alias's spec on the module; it stays hybridgluon's.
        module.__spec__ = self._spec


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if fullname != ALIAS and not fullname.startswith(ALIAS + '.'):
            return None
        name = _target_name(fullname)
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name != name:  # something the module itself imports is missing
                raise
            raise ModuleNotFoundError(
                "No module named %r: hybridgluon has no %r (the mxnet alias maps %s.* to %s.*)"
                % (fullname, name, ALIAS, TARGET), name=fullname) from None
        return importlib.util.spec_from_loader(fullname, _Loader(module))


def installed():
    """Whether the alias is on."""
    return _finder is not None


def install():
    """Turns the alias on (idempotent). Refuses when a real MXNet is already imported: the
    process would otherwise hold two libraries under one name."""
    global _finder
    with _lock:
        if _finder is not None:
            return
        real = sys.modules.get(ALIAS)
        if real is not None and real is not sys.modules.get(TARGET):
            raise ImportError('a real %r is already imported (%s): the hybridgluon alias cannot '
                              'replace it' % (ALIAS, getattr(real, '__file__', real)))
        importlib.import_module(TARGET)
        _finder = _Finder()
        sys.meta_path.insert(0, _finder)


def uninstall():
    """Turns the alias off and forgets the mxnet names it gave out."""
    global _finder
    with _lock:
        if _finder is None:
            return
        sys.meta_path.remove(_finder)
        _finder = None
        for name in [n for n in sys.modules if n == ALIAS or n.startswith(ALIAS + '.')]:
            if getattr(sys.modules[name], '__name__', '').startswith(TARGET):
                del sys.modules[name]


def pytest_configure(config):
    """pytest plugin hook (`-p hybridgluon.mxnet_alias`): the alias is on before collection."""
    install()
