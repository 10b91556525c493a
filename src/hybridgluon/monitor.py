"""Monitor (MXNet's `mx.monitor.Monitor`, also `mx.mon`): statistics of the arrays an
executor computes, for debugging a network.

Installed on an executor, it receives every op output of each forward (and every op input
with monitor_all) through the executor's monitor callback; `tic()` before a batch starts a
collection on every `interval`-th batch, `toc()` after it adds the arguments and auxiliary
states and returns (step, name, statistic as text) for the names matching `pattern`.
"""
import logging
import math
import re

from . import ndarray as nd
from .ndarray import NDArray

__all__ = ['Monitor']


def _default_stat(x):
    """norm(x) / sqrt(size): the root mean square of the array."""
    return nd.norm(x) / math.sqrt(x.size)


class Monitor(object):
    """Collects stat_func(array) for the arrays whose names match `pattern`, every `interval`
    batches; sort: order the results by name."""

    def __init__(self, interval, stat_func=None, pattern='.*', sort=False, monitor_all=False):
        self.stat_func = stat_func if stat_func is not None else _default_stat
        self.interval = interval
        self.activated = False
        self.queue = []
        self.step = 0
        self.exes = []
        self.re_prog = re.compile(pattern)
        self.sort = sort
        self.monitor_all = monitor_all

        def stat_helper(name, array):
            name = name.decode() if isinstance(name, bytes) else name
            if self.activated and self.re_prog.match(name):
                self.queue.append((self.step, name, self.stat_func(array)))
        self.stat_helper = stat_helper

    def install(self, exe):
        """Starts monitoring executor `exe` (any number may be installed)."""
        exe.set_monitor_callback(self.stat_helper, self.monitor_all)
        self.exes.append(exe)

    def tic(self):
        """Call before a batch's forward: starts collecting when this batch is monitored."""
        if self.step % self.interval == 0:
            self.queue = []
            self.activated = True
        self.step += 1

    def toc(self):
        """Call after the batch: the collected [(step, name, text)], arguments and auxiliary
        states included; empty when this batch was not monitored."""
        if not self.activated:
            return []
        for exe in self.exes:
            for name, array in zip(exe._symbol.list_arguments(), exe.arg_arrays):
                if self.re_prog.match(name):
                    self.queue.append((self.step, name, self.stat_func(array)))
            for name, array in zip(exe._symbol.list_auxiliary_states(), exe.aux_arrays):
                if self.re_prog.match(name):
                    self.queue.append((self.step, name, self.stat_func(array)))
        self.activated = False
        if self.sort:
            self.queue.sort(key=lambda item: item[1])
        res = []
        for step, name, values in self.queue:
            if isinstance(values, NDArray):
                values = [values]
            if not isinstance(values, list):
                raise TypeError('Monitor: stat_func must return an NDArray or a list of them, '
                                'got %s' % type(values).__name__)
            text = ''
            for v in values:
                if not isinstance(v, NDArray):
                    raise TypeError('Monitor: stat_func must return NDArrays, got %s'
                                    % type(v).__name__)
                text += (str(v.asscalar()) if v.shape == (1,) else str(v.asnumpy())) + '\t'
            res.append((step, name, text))
        self.queue = []
        return res

    def toc_print(self):
        """toc(), logged."""
        for step, name, text in self.toc():
            logging.info('Batch: {:7d} {:30s} {:s}'.format(step, name, text))
