"""DataParallelExecutorGroup: one executor per context, each bound to its slice of the batch
(MXNet's `mx.module.executor_group`).

The batch is split along each input's batch axis (the 'N' of its DataDesc layout; inputs
without one are copied whole to every executor) in proportion to the work load of each
context. Parameters live in every executor; the module keeps them equal by updating each
copy with the summed gradient. Arrays that are not parameters (data, labels and
intermediate arguments) can be shared by name with another group through
`shared_data_arrays`, so the executors of a BucketingModule reuse the memory of the default
bucket's.
"""
import logging
from collections import OrderedDict

import numpy as np

from .. import context as ctx
from .. import ndarray as nd
from ..base import MXNetError
from ..io import DataDesc

__all__ = ['DataParallelExecutorGroup']


def _split_input_slice(batch_size, work_load_list):
    """Slices of range(batch_size), one per device, sized in proportion to the work loads
    (rounded half to even, the remainder to the last device)."""
    total = sum(work_load_list)
    counts = [round(w * batch_size / total) for w in work_load_list]
    if sum(counts) < batch_size:
        counts[-1] += batch_size - sum(counts)
    slices, end = [], 0
    for count in counts:
        begin = int(min(end, batch_size))
        end = int(min(begin + count, batch_size))
        if begin >= end:
            raise ValueError('Too many slices. Some splits are empty: a batch of %d cannot be '
                             'split over %d devices with work loads %s'
                             % (batch_size, len(work_load_list), list(work_load_list)))
        slices.append(slice(begin, end))
    return slices


def _copy_slice(src, dst, piece, axis):
    """Copies the `piece` of `src` along `axis` into `dst` (all of it when axis < 0 or the
    piece is the whole)."""
    if axis < 0 or (piece.start == 0 and src.shape[axis] == piece.stop):
        src.copyto(dst)
    elif axis == 0:
        src[piece.start:piece.stop].copyto(dst)
    else:
        nd.slice_axis(src, axis=axis, begin=piece.start, end=piece.stop).copyto(dst)


def _load_general(data, targets, major_axis):
    """Loads each source array into its targets: one array, a list of per-device arrays
    (copied pairwise from a list of sources) or (slice, array) pairs (sliced from one)."""
    for src, dsts, axis in zip(data, targets, major_axis):
        if isinstance(dsts, nd.NDArray):
            src.copyto(dsts)
        elif isinstance(src, (list, tuple)):
            for s, d in zip(src, dsts):
                s.copyto(d)
        else:
            for piece, dst in dsts:
                _copy_slice(src, dst, piece, axis)


def _load_inputs(batch, targets, major_axis, field):
    if isinstance(batch, list):  # one batch per device, already split
        per_input = [[getattr(b, field)[i] for b in batch] for i in range(len(targets))]
        _load_general(per_input, [[dst for _, dst in t] for t in targets], major_axis)
    else:
        _load_general(getattr(batch, field), targets, major_axis)


def _merge_multi_context(outputs, major_axis):
    """Each output's per-device arrays joined along its batch axis (the first device's array
    for outputs without one)."""
    merged = []
    for arrays, axis in zip(outputs, major_axis):
        if axis >= 0 and len(arrays) > 1:
            first = arrays[0].context
            merged.append(nd.concat(*[a.as_in_context(first) for a in arrays], dim=axis))
        else:
            merged.append(arrays[0])
    return merged


def _prepare_group2ctxs(group2ctxs, ctx_len):
    """group2ctxs as one {group: context} dict (or None) per device: a list gives them in
    order; a dict maps a group to one context for all devices or a list of one per device."""
    if group2ctxs is None:
        return [None] * ctx_len
    if isinstance(group2ctxs, list):
        if len(group2ctxs) != ctx_len:
            raise ValueError('length of group2ctxs should be %d' % ctx_len)
        return group2ctxs
    if isinstance(group2ctxs, dict):
        out = [{} for _ in range(ctx_len)]
        for group, where in group2ctxs.items():
            if isinstance(where, ctx.Context):
                where = [where] * ctx_len
            elif len(where) == 1:
                where = list(where) * ctx_len
            elif len(where) != ctx_len:
                raise ValueError('length of group2ctxs[%s] should be %d or 1' % (group, ctx_len))
            for i in range(ctx_len):
                out[i][group] = where[i]
        return out
    raise ValueError('group2ctxs should be list of dict of str to context, or dict of str to '
                     'context or list of context')


def _exec_bytes(executor):
    """Bytes of the arrays an executor holds (arguments, gradients, states, outputs)."""
    arrays = executor.arg_arrays + executor.aux_arrays + list(executor.outputs) + \
        [g for g in executor.grad_arrays if g is not None]
    return sum(a.size * np.dtype(a.dtype).itemsize for a in arrays)


class DataParallelExecutorGroup(object):
    """Executors of `symbol`, one per context, each bound to its share of the batch.

    param_names: the arguments that are parameters (gradients kept unless fixed);
    for_training: whether backward will run; inputs_need_grad: whether the data inputs get
    gradients; shared_group: a group whose parameters (and named buffers) the new executors
    share; grad_req: 'write', 'add' or 'null' for all, or a list / dict per argument;
    state_names: arguments that are states (set with set_states, not parameters)."""

    def __init__(self, symbol, contexts, workload, data_shapes, label_shapes, param_names,
                 for_training, inputs_need_grad, shared_group=None, logger=logging,
                 fixed_param_names=None, grad_req='write', state_names=None, group2ctxs=None):
        self.param_names = param_names
        self.arg_names = symbol.list_arguments()
        self.aux_names = symbol.list_auxiliary_states()
        self.symbol = symbol
        self.contexts = contexts
        self.workload = workload
        self.group2ctxs = _prepare_group2ctxs(group2ctxs, len(contexts))
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self.logger = logger
        self._total_exec_bytes = 0
        self.fixed_param_names = fixed_param_names or []
        self.state_names = state_names or []
        if not for_training:
            grad_req = 'null'
        data_shapes = [d if isinstance(d, DataDesc) else DataDesc(*d) for d in data_shapes]
        if label_shapes is not None:
            label_shapes = [d if isinstance(d, DataDesc) else DataDesc(*d) for d in label_shapes]
        self.grad_req = self._grad_reqs(grad_req, [d.name for d in data_shapes])
        self.shared_data_arrays = (shared_group.shared_data_arrays if shared_group is not None
                                   else [{} for _ in contexts])
        self.batch_size = None
        self.slices = None
        self.execs = []
        self._default_execs = None
        self.data_arrays = self.label_arrays = self.param_arrays = None
        self.state_arrays = self.grad_arrays = self.aux_arrays = None
        self.input_grad_arrays = None
        self.data_shapes = self.label_shapes = None
        self.data_names = self.label_names = None
        self.data_layouts = self.label_layouts = None
        self.output_names = symbol.list_outputs()
        self.num_outputs = len(self.output_names)
        self.output_layouts = [DataDesc.get_batch_axis(symbol[i].attr('__layout__'))
                               for i in range(self.num_outputs)]
        self.bind_exec(data_shapes, label_shapes, shared_group)

    def _grad_reqs(self, grad_req, data_names):
        """The grad_req of every argument: parameters (unless fixed) and, with
        inputs_need_grad, the data inputs take the requested one; others 'null'."""
        if isinstance(grad_req, (list, tuple)):
            if len(grad_req) != len(self.arg_names):
                raise ValueError('grad_req: %d entries for %d arguments'
                                 % (len(grad_req), len(self.arg_names)))
            return dict(zip(self.arg_names, grad_req))
        if isinstance(grad_req, dict):
            default, extra = 'write', grad_req
        elif isinstance(grad_req, str):
            default, extra = grad_req, {}
        else:
            raise ValueError('grad_req must be one of str, list, tuple, or dict.')
        reqs = {}
        for name in self.arg_names:
            if name in self.param_names:
                reqs[name] = 'null' if name in self.fixed_param_names else default
            elif name in data_names:
                reqs[name] = default if self.inputs_need_grad else 'null'
            else:
                reqs[name] = 'null'
        reqs.update(extra)
        return reqs

    def decide_slices(self, data_shapes):
        """The batch axis of each input; sets batch_size and the per-device slices."""
        if not data_shapes:
            raise ValueError('the module needs at least one data input')
        major_axis = [DataDesc.get_batch_axis(d.layout) for d in data_shapes]
        for (name, shape), axis in zip(data_shapes, major_axis):
            if axis == -1:
                continue
            if self.batch_size is None:
                self.batch_size = shape[axis]
                self.slices = _split_input_slice(self.batch_size, self.workload)
            elif shape[axis] != self.batch_size:
                raise MXNetError('all data must have the same batch size: batch_size = %d, but '
                                 '%s has shape %s' % (self.batch_size, name, shape))
        return major_axis

    def _collect_arrays(self):
        execs = self.execs
        pieces = self.slices or [slice(i, i + 1) for i in range(len(execs))]
        self.data_arrays = [[(pieces[i], e.arg_dict[name]) for i, e in enumerate(execs)]
                            for name, _ in self.data_shapes]
        self.state_arrays = [[e.arg_dict[name] for e in execs] for name in self.state_names]
        self.label_arrays = None if self.label_shapes is None else \
            [[(pieces[i], e.arg_dict[name]) for i, e in enumerate(execs)]
             for name, _ in self.label_shapes]
        param_idx = [i for i, n in enumerate(self.arg_names) if n in self.param_names]
        self.param_arrays = [[e.arg_arrays[i] for e in execs] for i in param_idx]
        self.grad_arrays = ([[e.grad_arrays[i] for e in execs] for i in param_idx]
                            if self.for_training else None)
        self.input_grad_arrays = None
        if self.inputs_need_grad:
            self.input_grad_arrays = [[e.grad_arrays[self.arg_names.index(name)] for e in execs]
                                      for name, _ in self.data_shapes if name in self.arg_names]
        self.aux_arrays = [[e.aux_arrays[i] for e in execs] for i in range(len(self.aux_names))]

    def bind_exec(self, data_shapes, label_shapes, shared_group=None, reshape=False):
        """Binds one executor per context (reshape: reshapes the default executors instead)."""
        if self.execs and not reshape:
            raise MXNetError('bind_exec: the executors are bound already')
        self.batch_size = None
        self.data_layouts = self.decide_slices(data_shapes)
        if label_shapes is not None:
            self.label_layouts = self.decide_slices(label_shapes)
        for i in range(len(self.contexts)):
            data_i = self._sliced_shape(data_shapes, i, self.data_layouts)
            label_i = ([] if label_shapes is None else
                       self._sliced_shape(label_shapes, i, self.label_layouts))
            if reshape:
                shapes = {d.name: tuple(d.shape) for d in data_i + label_i}
                self.execs[i] = self._default_execs[i].reshape(allow_up_sizing=True, **shapes)
            else:
                self.execs.append(self._bind_ith_exec(i, data_i, label_i, shared_group))
        self.data_shapes = data_shapes
        self.label_shapes = label_shapes
        self.data_names = [d.name for d in data_shapes]
        if label_shapes is not None:
            self.label_names = [d.name for d in label_shapes]
        self._collect_arrays()

    def reshape(self, data_shapes, label_shapes):
        """Rebinds for new input shapes, sharing memory with the first binding."""
        if data_shapes == self.data_shapes and label_shapes == self.label_shapes:
            return
        if self._default_execs is None:
            self._default_execs = list(self.execs)
        self.bind_exec(data_shapes, label_shapes, reshape=True)

    def set_params(self, arg_params, aux_params, allow_extra=False):
        """Copies the given parameters into every executor."""
        for e in self.execs:
            e.copy_params_from(arg_params, aux_params, allow_extra_params=allow_extra)

    def get_params(self, arg_params, aux_params):
        """Writes the mean over devices of each parameter and state into the given dicts'
        arrays (cast to their dtypes)."""
        for names, blocks, out in ((self.param_names, self.param_arrays, arg_params),
                                   (self.aux_names, self.aux_arrays, aux_params)):
            for name, block in zip(names, blocks):
                copies = [w.copyto(ctx.cpu()) for w in block]
                mean = copies[0] if len(copies) == 1 else nd.add_n(*copies) / len(copies)
                mean.astype(out[name].dtype).copyto(out[name])

    def forward(self, data_batch, is_train=None):
        """Loads the batch's slices into the executors and runs their forward passes."""
        _load_inputs(data_batch, self.data_arrays, self.data_layouts, 'data')
        if is_train is None:
            is_train = self.for_training
        if self.label_arrays is not None:
            first = data_batch[0] if isinstance(data_batch, list) else data_batch
            if getattr(first, 'label', None):
                _load_inputs(data_batch, self.label_arrays, self.label_layouts, 'label')
        for e in self.execs:
            e.forward(is_train=is_train)

    def get_output_shapes(self):
        """[(name, shape)] of the merged outputs."""
        shapes = []
        for name, out, axis in zip(self.output_names, self.execs[0].outputs,
                                   self.output_layouts):
            shape = list(out.shape)
            if axis >= 0:
                shape[axis] = self.batch_size
            shapes.append((name, tuple(shape)))
        return shapes

    def get_outputs(self, merge_multi_context=True, begin=0, end=None):
        """Outputs begin:end, merged over devices or as a list per output of the devices'."""
        end = self.num_outputs if end is None else end
        outputs = [[e.outputs[i] for e in self.execs] for i in range(begin, end)]
        if merge_multi_context:
            outputs = _merge_multi_context(outputs, self.output_layouts[begin:end])
        return outputs

    def get_states(self, merge_multi_context=True):
        """The state arrays, a list per state of the devices' (merging is not supported)."""
        if merge_multi_context:
            raise MXNetError('merge_multi_context=True is not supported for get_states yet.')
        return self.state_arrays

    def set_states(self, states=None, value=None):
        """Sets the states from `states` (a list per state of the devices' arrays) or to the
        scalar `value`."""
        if (states is None) == (value is None):
            raise MXNetError('set_states: give exactly one of states and value')
        if states is not None:
            _load_general(states, self.state_arrays, (0,) * len(states))
        else:
            for arrays in self.state_arrays:
                for a in arrays:
                    a[:] = value

    def get_input_grads(self, merge_multi_context=True):
        """Gradients of the data inputs (bound with inputs_need_grad=True)."""
        if not self.inputs_need_grad:
            raise MXNetError('get_input_grads: bind with inputs_need_grad=True to get the '
                             'gradients of the inputs')
        if merge_multi_context:
            return _merge_multi_context(self.input_grad_arrays, self.data_layouts)
        return self.input_grad_arrays

    def backward(self, out_grads=None):
        """Runs every executor's backward pass with its slice of the head gradients."""
        if not self.for_training:
            raise MXNetError('re-bind with for_training=True to run backward')
        out_grads = out_grads or []
        for i, (e, piece) in enumerate(zip(self.execs, self.slices)):
            mine = []
            for grad, axis in zip(out_grads, self.output_layouts):
                if axis >= 0:
                    part = nd.slice_axis(grad, axis=axis, begin=piece.start, end=piece.stop)
                    mine.append(part.as_in_context(self.contexts[i]))
                else:
                    mine.append(grad.copyto(self.contexts[i]))
            e.backward(out_grads=mine)

    def update_metric(self, eval_metric, labels, pre_sliced):
        """Updates `eval_metric` with each executor's outputs and its slice of `labels`
        (labels is already a list per device when pre_sliced)."""
        for i, (e, piece) in enumerate(zip(self.execs, self.slices)):
            if pre_sliced:
                mine = labels[i]
            else:
                mine = []
                for label, axis in zip(labels, self.label_layouts):
                    if axis == 0:
                        mine.append(label[piece])
                    elif axis > 0:
                        mine.append(nd.slice_axis(label, axis=axis, begin=piece.start,
                                                  end=piece.stop))
                    else:
                        mine.append(label)
            eval_metric.update_dict(OrderedDict(zip(self.label_names or [], mine)),
                                    OrderedDict(zip(self.output_names, e.outputs)))

    def _bind_ith_exec(self, i, data_shapes, label_shapes, shared_group):
        """simple_bind on context i, sharing parameters with shared_group's executor i."""
        from ..base import _np_dtype
        shared_exec = None if shared_group is None else shared_group.execs[i]
        shapes = {d.name: tuple(d.shape) for d in data_shapes}
        types = {d.name: d.dtype for d in data_shapes}
        attrs = self.symbol.attr_dict()
        for name in self.symbol.list_inputs():
            flag = attrs.get(name, {}).get('__dtype__')
            if name in types and flag is not None and flag != '-1':
                types[name] = _np_dtype(int(flag))  # a variable's own dtype wins
        if label_shapes is not None:
            shapes.update({d.name: tuple(d.shape) for d in label_shapes})
            types.update({d.name: d.dtype for d in label_shapes})
        executor = self.symbol.simple_bind(
            ctx=self.contexts[i], grad_req=self.grad_req, type_dict=types,
            shared_arg_names=self.param_names, shared_exec=shared_exec,
            group2ctx=self.group2ctxs[i], shared_buffer=self.shared_data_arrays[i], **shapes)
        self._total_exec_bytes += _exec_bytes(executor)
        return executor

    def _sliced_shape(self, shapes, i, major_axis):
        """The DataDescs of device i's share of the batch."""
        out = []
        for desc, axis in zip(shapes, major_axis):
            shape = list(desc.shape)
            if axis >= 0:
                shape[axis] = self.slices[i].stop - self.slices[i].start
            out.append(DataDesc(desc.name, tuple(shape), desc.dtype, desc.layout))
        return out

    def install_monitor(self, mon):
        """Installs monitor `mon` on every executor."""
        for e in self.execs:
            mon.install(e)
