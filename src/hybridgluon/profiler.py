"""The profiler (MXNet's `mx.profiler`): per-op timings from the executor and the imperative
path, user events (Task, Frame, Event, Counter, Marker), an aggregate table and a Chrome trace
file that chrome://tracing and Perfetto (ui.perfetto.dev) open.

The events are recorded in C (core/profiler.c), one buffer per thread; this module keeps the
configuration, writes the file and formats the aggregate statistics. See docs/profiler.md.
"""
import contextlib
import json
import threading
import warnings

from . import _core
from .base import MXNetError, MXNetValueError

__all__ = ['set_config', 'set_state', 'state', 'dump', 'dumps', 'pause', 'resume', 'Domain',
           'Task', 'Frame', 'Event', 'Counter', 'Marker', 'scope', 'profiler_set_config',
           'profiler_set_state', 'dump_profile']

# set_config's keys and defaults: every call starts again from these, as in MXNet.
_DEFAULTS = {
    'profile_all': False,
    'profile_symbolic': True,
    'profile_imperative': True,
    'profile_memory': True,
    'profile_api': True,
    'filename': 'profile.json',
    'continuous_dump': False,
    'dump_period': 1.0,
    'aggregate_stats': False,
    'profile_process': 'worker',
}
_KINDS = {
    'profile_symbolic': _core.PROF_SYMBOLIC,
    'profile_imperative': _core.PROF_IMPERATIVE,
    'profile_memory': _core.PROF_MEMORY,
    'profile_api': _core.PROF_API,
    'aggregate_stats': _core.PROF_AGGREGATE,
}
_lock = threading.Lock()
_config = dict(_DEFAULTS)
_state = {'state': 'stop', 'paused': False, 'dropped': 0}


def _as_bool(key, value):
    # MXNet passes every value as str(value) to its parameter parser: 'True', '1', 'false'...
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ('true', '1'):
        return True
    if text in ('false', '0'):
        return False
    raise MXNetValueError(
        "profiler.set_config: invalid value %r for '%s' (expected a boolean)" % (value, key))


def _check_process(profile_process):
    if profile_process == 'server':
        raise MXNetValueError("profiler: profile_process='server' needs a distributed kvstore "
                              "server, which hybridgluon does not have; use 'worker'")
    if profile_process != 'worker':
        raise MXNetValueError("profiler: invalid profile_process %r (expected 'worker' or "
                              "'server')" % (profile_process,))


def set_config(**kwargs):
    """Configures the profiler (keyword arguments only; unnamed settings take their defaults).

    Parameters
    ----------
    filename : str
        The trace file `dump` writes (default 'profile.json').
    profile_all : bool
        Record everything below.
    profile_symbolic : bool
        Per-step events of hybridized blocks and executors (default True).
    profile_imperative : bool
        Per-op events of ops called one by one, autograd's backward included (default True).
    profile_memory : bool
        The bytes of live tensors, sampled after each recorded op (default True).
    profile_api : bool
        Accepted for MXNet's sake; hybridgluon has no C API layer of its own to time.
    continuous_dump : bool
        Accepted: `dump(finished=False)` keeps the events, so each dump rewrites the whole
        trace so far (the file grows).
    dump_period : float
        Accepted for MXNet's sake (no background dumping).
    aggregate_stats : bool
        Keep the statistics `dumps` prints (count, total, min, max, avg per op).
    profile_process : str
        'worker' (the only process there is).
    """
    config = dict(_DEFAULTS)
    for key, value in kwargs.items():
        if key not in _DEFAULTS:
            raise MXNetValueError("profiler.set_config: unknown setting '%s' (expected one of %s)"
                                  % (key, ', '.join(sorted(_DEFAULTS))))
        if key == 'filename':
            config[key] = str(value)
        elif key == 'dump_period':
            try:
                config[key] = float(value)
            except (TypeError, ValueError):
                raise MXNetValueError("profiler.set_config: invalid dump_period %r" % (value,))
        elif key == 'profile_process':
            _check_process(value)
        else:
            config[key] = _as_bool(key, value)
    kinds = 0
    for key, kind in _KINDS.items():
        if config[key] or (config['profile_all'] and key != 'aggregate_stats'):
            kinds |= kind
    with _lock:
        _config.clear()
        _config.update(config)
        _core._prof_set_config(kinds)


def set_state(state='stop', profile_process='worker'):
    """Starts ('run') or stops ('stop') recording. Either ends a pause: a new run records."""
    if state not in ('run', 'stop'):
        raise MXNetValueError("profiler.set_state: invalid state %r (expected 'run' or 'stop')"
                              % (state,))
    _check_process(profile_process)
    with _lock:
        _state['state'] = state
        _state['paused'] = False
        _core._prof_set_state(state == 'run', False)


def state():
    """'run' or 'stop'."""
    return _state['state']


def pause(profile_process='worker'):
    """Stops recording until `resume` without leaving the 'run' state."""
    _check_process(profile_process)
    with _lock:
        _state['paused'] = True
        _core._prof_set_state(_state['state'] == 'run', True)


def resume(profile_process='worker'):
    """Resumes recording after `pause`."""
    _check_process(profile_process)
    with _lock:
        _state['paused'] = False
        _core._prof_set_state(_state['state'] == 'run', False)


def dump(finished=True, profile_process='worker'):
    """Writes every event recorded so far to the configured file as a Chrome trace
    ({"traceEvents": [...]}). finished=True also drops the events (their statistics stay in
    the aggregate table); finished=False keeps them, so a later dump writes them again with
    what came since."""
    _check_process(profile_process)
    filename = _config['filename']
    # The file opens first: a path that cannot be written loses no events.
    try:
        f = open(filename, 'w', encoding='utf-8')
    except OSError as e:
        raise MXNetError("profiler.dump: cannot write the trace to '%s': %s" % (filename, e))
    with f:
        f.write(_core._prof_dump(bool(finished)))
    dropped = _core._prof_dropped()
    if dropped > _state['dropped']:
        warnings.warn('profiler: %d events were dropped for want of memory'
                      % (dropped - _state['dropped']))
        _state['dropped'] = dropped


_SORT_KEYS = {'total': 'Total', 'avg': 'Avg', 'min': 'Min', 'max': 'Max', 'count': 'Count'}


def _stats(reset):
    """{'Time': {category: {name: stats}}, 'Memory': {...}} in ms and kB."""
    out = {'Time': {}, 'Memory': {}}
    for kind, cat, name, count, total, lo, hi in _core._prof_aggregate(bool(reset)):
        if kind == 0:
            scale = 1e-6  # ns -> ms
            entry = {'Count': count, 'Total': total * scale, 'Min': lo * scale,
                     'Max': hi * scale, 'Avg': total * scale / count}
            out['Time'].setdefault(cat, {})[name] = entry
        else:
            scale = 1e-3  # bytes -> kB
            entry = {'Count': count, 'Min': lo * scale, 'Max': hi * scale,
                     'Avg': total * scale / count}
            out['Memory'].setdefault(cat, {})[name] = entry
    return out


def _sorted(items, key, ascending):
    # Memory entries have no total: they sort by their largest use instead.
    field = _SORT_KEYS[key]
    return sorted(items.items(), key=lambda kv: kv[1].get(field, kv[1].get('Max')),
                  reverse=not ascending)


def _table(stats, sort_by, ascending):
    lines = ['', 'Profile Statistics:', '\tNote the difference in units for different entries.']
    head = '%-30s%11s%17s%17s%17s%17s'
    for cat in sorted(stats['Time']):
        lines += [cat, '=================',
                  head % ('Name', 'Total Count', 'Time (ms)', 'Min Time (ms)', 'Max Time (ms)',
                          'Avg Time (ms)'),
                  head % ('----', '-----------', '---------', '-------------', '-------------',
                          '-------------')]
        for name, e in _sorted(stats['Time'][cat], sort_by, ascending):
            lines.append('%-30s%11d%17.4f%17.4f%17.4f%17.4f'
                         % (name, e['Count'], e['Total'], e['Min'], e['Max'], e['Avg']))
        lines.append('')
    head = '%-30s%11s%17s%17s%17s'
    for cat in sorted(stats['Memory']):
        lines += [cat, '=================',
                  head % ('Name', 'Total Count', 'Min Use  (kB)', 'Max Use  (kB)',
                          'Avg Use  (kB)'),
                  head % ('----', '-----------', '-------------', '-------------',
                          '-------------')]
        for name, e in _sorted(stats['Memory'][cat], sort_by, ascending):
            lines.append('%-30s%11d%17.4f%17.4f%17.4f'
                         % (name, e['Count'], e['Min'], e['Max'], e['Avg']))
        lines.append('')
    return '\n'.join(lines) + '\n'


def dumps(reset=False, format='table', sort_by='total', ascending=False):
    """The aggregate statistics as a table or JSON text ('' unless set_config turned
    aggregate_stats on). reset: start the statistics afresh afterwards. sort_by: 'total',
    'avg', 'min', 'max' or 'count' within each category."""
    if format not in ('table', 'json'):
        raise MXNetValueError("Invalid value provided for format: %r. Support: 'table', 'json'"
                              % (format,))
    if sort_by not in _SORT_KEYS:
        raise MXNetValueError("Invalid value provided for sort_by: %r. Support: 'total', 'avg', "
                              "'min', 'max', 'count'" % (sort_by,))
    if ascending not in (False, True):
        raise MXNetValueError("Invalid value provided for ascending: %r. Support: False, True"
                              % (ascending,))
    if reset not in (False, True):
        raise MXNetValueError("Invalid value provided for reset: %r. Support: False, True"
                              % (reset,))
    if not _config['aggregate_stats']:
        if reset:
            _core._prof_aggregate(True)
        return ''
    stats = _stats(reset)
    if format == 'table':
        return _table(stats, sort_by, ascending)
    doc = {'Time': {}, 'Memory': {}, 'Unit': {'Time': 'ms', 'Memory': 'kB'}}
    for part in ('Time', 'Memory'):
        for cat in sorted(stats[part]):
            doc[part][cat] = {name: {k: (round(v, 4) if isinstance(v, float) else v)
                                     for k, v in e.items()}
                              for name, e in _sorted(stats[part][cat], sort_by, ascending)}
    return json.dumps(doc, indent=4)


# ---- user events -----------------------------------------------------------------------------

class Domain(object):
    """A category that groups tasks, frames, counters and markers in the trace."""

    def __init__(self, name):
        self.name = str(name)

    def __str__(self):
        return self.name

    def new_task(self, name):
        """A Task of this domain."""
        return Task(self, name)

    def new_frame(self, name):
        """A Frame of this domain."""
        return Frame(self, name)

    def new_counter(self, name, value=None):
        """A Counter of this domain."""
        return Counter(self, name, value)

    def new_marker(self, name):
        """A Marker of this domain."""
        return Marker(self, name)


class _Duration(object):
    """start() ... stop() recorded as one complete event of the stopping thread."""
    _suffix = None

    def __init__(self, domain, name):
        self.name = str(name)
        self.domain = domain
        self._start = None

    def _category(self):
        return str(self.domain) + self._suffix

    def start(self):
        """Starts timing."""
        self._start = _core._prof_now()

    def stop(self):
        """Stops timing and records the interval (when the profiler is running)."""
        if self._start is None:
            raise MXNetValueError("profiler %s '%s': stop() without start()"
                                  % (type(self).__name__, self.name))
        start, self._start = self._start, None
        if _core._prof_active(_core.PROF_USER):
            _core._prof_record(self._category(), self.name, None, 'X', start,
                               _core._prof_now() - start, 0)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def __str__(self):
        return self.name


class Task(_Duration):
    """A unit of work of a domain; every pass between start() and stop() adds to one entry of
    the aggregate table."""
    _suffix = ''


class Frame(_Duration):
    """A period of a domain (a frame of work), shown under '<domain>,frame'."""
    _suffix = ',frame'


class Event(_Duration):
    """A timed region of its own (category 'event')."""

    def __init__(self, name):
        super(Event, self).__init__(None, name)

    def _category(self):
        return 'event'


class Counter(object):
    """A value tracked over time (a counter track in the trace)."""

    def __init__(self, domain, name, value=None):
        self.name = str(name)
        self.domain = domain
        self._value = 0
        self._lock = threading.Lock()
        if value is not None:
            self.set_value(value)

    def _record(self, value):
        if _core._prof_active(_core.PROF_USER):
            _core._prof_record(str(self.domain), self.name, None, 'C', _core._prof_now(), 0,
                               value)

    def set_value(self, value):
        """Sets the counter."""
        with self._lock:
            self._value = int(value)
            self._record(self._value)

    def increment(self, delta=1):
        """Adds delta."""
        with self._lock:
            self._value += int(delta)
            self._record(self._value)

    def decrement(self, delta=1):
        """Subtracts delta."""
        self.increment(-int(delta))

    def __iadd__(self, delta):
        self.increment(delta)
        return self

    def __isub__(self, delta):
        self.decrement(delta)
        return self

    def __str__(self):
        return self.name


_MARKER_SCOPES = {'global': 'g', 'process': 'p', 'thread': 't', 'task': 't', 'marker': 't'}


class Marker(object):
    """An instant in time, shown under '<domain>,instant_marker'."""

    def __init__(self, domain, name):
        self.name = str(name)
        self.domain = domain

    def mark(self, scope='process'):
        """Records the instant; scope: 'global', 'process', 'thread', 'task' or 'marker' (the
        last two are drawn as 'thread')."""
        if scope not in _MARKER_SCOPES:
            raise MXNetValueError("profiler.Marker.mark: invalid scope %r (expected one of %s)"
                                  % (scope, ', '.join(_MARKER_SCOPES)))
        if _core._prof_active(_core.PROF_USER):
            _core._prof_record(str(self.domain) + ',instant_marker', self.name, None, 'i',
                               _core._prof_now(), 0, ord(_MARKER_SCOPES[scope]))


@contextlib.contextmanager
def scope(name='<unk>:', append_mode=False):
    """Names the ops this thread runs inside the block '<name>:<op>' in the trace and the
    aggregate table. append_mode: nest inside the current scope ('outer:inner:<op>')."""
    name = str(name)
    if not name.endswith(':'):
        name += ':'
    prev, cat = _core._prof_set_scope(None, None)
    _core._prof_set_scope(prev + name if append_mode and prev else name, cat)
    try:
        yield
    finally:
        _core._prof_set_scope(prev, cat)


@contextlib.contextmanager
def _custom_op(op_type, backward):
    """Times a custom operator's Python code as '[_backward_]<op_type>::pure_python' in the
    'Custom Operator' category, and names the ops it runs '<op_type>::<op>' there (MXNet's
    names). Costs one check when the profiler is off."""
    if not _core._prof_active(_core.PROF_IMPERATIVE | _core.PROF_SYMBOLIC):
        yield
        return
    prefix = str(op_type) + '::'
    prev = _core._prof_set_scope(prefix, 'Custom Operator')
    start = _core._prof_now()
    try:
        yield
    finally:
        _core._prof_set_scope(*prev)
        if _core._prof_active(_core.PROF_IMPERATIVE | _core.PROF_SYMBOLIC):
            _core._prof_record('Custom Operator',
                               ('_backward_' if backward else '') + prefix + 'pure_python', None,
                               'X', start, _core._prof_now() - start, 0)


# ---- MXNet's deprecated names ----------------------------------------------------------------

def profiler_set_config(mode='symbolic', filename='profile.json'):
    """Deprecated: set_config(profile_<mode>=True, filename=filename)."""
    warnings.warn('profiler.profiler_set_config() is deprecated. '
                  'Please use profiler.set_config() instead')
    if mode not in ('symbolic', 'all', 'imperative', 'memory', 'api'):
        raise MXNetValueError("profiler_set_config: invalid mode %r" % (mode,))
    set_config(**{'profile_' + mode: True, 'filename': filename})


def profiler_set_state(state='stop'):
    """Deprecated: set_state(state)."""
    warnings.warn('profiler.profiler_set_state() is deprecated. '
                  'Please use profiler.set_state() instead')
    set_state(state)


def dump_profile():
    """Deprecated: dump(True)."""
    warnings.warn('profiler.dump_profile() is deprecated. Please use profiler.dump() instead')
    dump(True)
