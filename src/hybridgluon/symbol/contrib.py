"""`sym.contrib`: the registry's `_contrib_*` ops under their short names, as MXNet lays them
out (`sym.contrib.X` is the op `_contrib_X`). Generated from the registry at import."""
from ..base import _cf_regroup, _register_prefixed
from .op import _make

_register_prefixed(globals(), '_contrib_', _make)


# ---- control flow: one graph node holding the body as subgraphs (MXNet's _foreach,
# _while_loop, _cond). The body is traced with fresh variables inside an AttrScope that marks
# its nodes with __subgraph_name__; values it reads from outside are cut out of it and become
# inputs of the node (MXNet's _cut_subgraph), names preserved, so the JSON is MXNet's. ----------
import copy as _copy  # noqa: E402
from collections import defaultdict as _defaultdict  # noqa: E402

from .. import _core  # noqa: E402
from .. import base as _base  # noqa: E402
from ..attribute import AttrScope as _AttrScope  # noqa: E402
from ..attribute import current as _attr_scope  # noqa: E402
from .symbol import NameManager as _NameManager  # noqa: E402
from .symbol import Group as _Group  # noqa: E402
from .symbol import Symbol as _Symbol  # noqa: E402
from .op import _with_origin  # noqa: E402
from .symbol import _hidden_key  # noqa: E402
from .symbol import var as _var  # noqa: E402

if not hasattr(_AttrScope, '_subgraph_names'):
    _AttrScope._subgraph_names = _defaultdict(int)


def _cf_flatten(args, what):
    """Flattens nested lists of Symbols; the format regroups them (MXNet's: 0 a bare Symbol, n
    a Symbol of n outputs, a list the nested formats)."""
    if isinstance(args, _Symbol):
        n = len(args.list_outputs())
        return [args], (n if n > 1 else 0)
    if not isinstance(args, (list, tuple)):
        raise ValueError('%s must be (nested) list of Symbol, but got %s of type %s'
                         % (what, args, type(args)))
    flat, fmts = [], []
    for item in args:
        f, fmt = _cf_flatten(item, what)
        flat.extend(f)
        fmts.append(fmt)
    return flat, fmts


def _check_symbols(items, msg):
    if not all(isinstance(i, _Symbol) for i in items):
        raise ValueError(msg)


def _uniq_name(sym):
    """The name the body's variable for an input gets: '<node>-<output index>'."""
    _, heads = sym._graph()
    return '%s-%d' % (sym.name, heads[0][1])


def _unique_subgraph_name(name):
    outer = _attr_scope()._attr.get('__subgraph_name__', '')
    if outer:
        name = outer + '$' + name
    _AttrScope._subgraph_names[name] += 1
    return name + str(_AttrScope._subgraph_names[name] - 1)


def _in_graph(sym, name):
    return sym.list_attr().get('__subgraph_name__', '') == name


def _make_outputs(outputs, name, states=()):
    """The subgraph's heads: an output that is an input or made outside the body goes through
    identity (a head must be a node of the body, distinct from its inputs); so does a state
    (foreach) that is also an output. Repeated outputs stay repeated, as in MXNet."""
    everything = list(outputs) + list(states)
    inputs = set(_Group(everything).list_inputs()) if everything else set()
    out_names = {o.name for o in outputs}
    flat = []
    for o in outputs:
        flat.append(_identity(o) if o.name in inputs or not _in_graph(o, name) else o)
    for o in states:
        copy = o.name in inputs or o.name in out_names or not _in_graph(o, name)
        flat.append(_identity(o) if copy else o)
    return _Group(flat)


def _identity(sym):
    from .op import _invoke
    return _invoke('_copy', (sym,), {}, 'identity')


def _cut(graph):
    """(the graph with outside values replaced by variables, {variable name: outside value})."""
    cut_graph, outside = _core.symbol_cut_subgraph(graph)
    return cut_graph, {s.list_outputs()[0]: s for s in outside}


def _graph_input_vars(graph):
    """{name: a variable like the graph's input variable of that name}."""
    nodes, _ = graph._graph()
    return {n[0]: n[2] for n in nodes if n[1] is None}


def _copy_var(name, attrs):
    return _core.symbol_var(name, dict(attrs))


def _node(op, subgraphs, inputs, attrs):
    """The control-flow node, named and annotated as MXNet's _internal functions do."""
    str_attrs = {k: str(v) for k, v in attrs.items()}
    str_attrs['num_args'] = str(len(inputs) + len(subgraphs))
    for k, v in _attr_scope().get(None).items():
        str_attrs[_hidden_key(k)] = str(v)
    name = _NameManager.current.get(None, op)
    return _with_origin(_core.symbol_op(op, name, str_attrs, list(inputs), list(subgraphs)))


_MAX_LOCS = 32  # the longest tuple an op attribute holds here (HG_MAX_TUPLE)


def _locs(values):
    if len(values) > _MAX_LOCS:
        raise _base._MXNetValueError(
            'a control-flow body reads %d values (inputs and free variables) through one '
            'location list; hybridgluon holds at most %d there (MXNet has no limit): group '
            'parameters, or run the block imperatively' % (len(values), _MAX_LOCS))
    return '[%s]' % ', '.join(str(int(v)) for v in values)


def foreach(body, data, init_states, name='foreach'):
    """Runs `body(data_slice, states) -> (outputs, new_states)` over axis 0 of data as one
    `_foreach` graph node (MXNet's `sym.contrib.foreach`). Returns (outputs stacked along
    axis 0, final states) in the nesting the body gave."""
    flat_data, data_fmt = _cf_flatten(data, 'foreach input')
    _check_symbols(flat_data, 'data should be a symbol or a nested list of symbols')
    flat_states, state_fmt = _cf_flatten(init_states, 'foreach states')
    _check_symbols(flat_states, 'init_states should be a symbol or a nested list of symbols')
    name = _unique_subgraph_name(name)
    with _AttrScope(__subgraph_name__=name):
        in_eles, _ = _cf_regroup([_var(_uniq_name(s)) for s in flat_data], data_fmt)
        states, _ = _cf_regroup([_var(_uniq_name(s)) for s in flat_states],
                                _copy.deepcopy(state_fmt))
        sym_out, sym_states = body(in_eles, states)
        sym_out, out_fmt = _cf_flatten(sym_out, 'foreach output')
        sym_states, new_state_fmt = _cf_flatten(sym_states, 'foreach loop_vars')
        if new_state_fmt != state_fmt:
            raise ValueError('The input and output loop_vars have different format')
        _check_symbols(sym_out, 'the output should be an NDArray or a nested list of NDArrays')
        _check_symbols(sym_states,
                       'the output states should be an NDArray or a nested list of NDArrays')
        num_out_data, num_states = len(sym_out), len(sym_states)
        graph = _make_outputs(sym_out, name, sym_states)
    graph, cut = _cut(graph)
    names = graph.list_inputs()
    if len(set(names)) != len(names):
        raise AssertionError("The inputs of the subgraph don't have unique names: %s" % names)
    data_names = [_uniq_name(s) for s in flat_data]
    state_names = [_uniq_name(s) for s in flat_states]
    in_data_locs, in_state_locs, remain_locs = [], [], []
    for n in data_names:
        if n not in names:
            # MXNet asserts here (callers catch AssertionError)
            raise AssertionError('the data arrays have to be used in the loop body')
        in_data_locs.append(names.index(n))
    for n in state_names:
        if n not in names:
            raise AssertionError('the state arrays have to be used in the loop body')
        in_state_locs.append(names.index(n))
    ordered = list(flat_data) + list(flat_states)
    own_vars = _graph_input_vars(graph)
    for i, n in enumerate(names):
        if n in cut:
            ordered.append(cut[n])
            remain_locs.append(i)
        elif n not in data_names and n not in state_names:
            ordered.append(_copy_var(n, own_vars[n]))  # a variable made inside the body
            remain_locs.append(i)
    num_outputs = num_out_data + num_states
    ret = _node('_foreach', [graph], ordered, {
        'num_outputs': num_outputs, 'num_out_data': num_out_data,
        'in_state_locs': _locs(in_state_locs), 'in_data_locs': _locs(in_data_locs),
        'remain_locs': _locs(remain_locs)})
    outs, _ = _cf_regroup([ret[i] for i in range(num_out_data)], out_fmt) \
        if num_out_data else ([], None)
    states, _ = _cf_regroup([ret[num_out_data + i] for i in range(num_states)], state_fmt)
    return outs, states


def _subgraph(graph_vars, graph_func, subgraph_name, uniq):
    """Traces graph_func on fresh variables for graph_vars inside the subgraph's scope:
    (graph, number of data outputs, outputs' format)."""
    subgraph_name = _unique_subgraph_name(subgraph_name)
    with _AttrScope(__subgraph_name__=subgraph_name):
        flat, fmt = _cf_flatten(graph_vars, 'while loop_vars')
        new_vars, _ = _cf_regroup([_var(uniq(s)) for s in flat], fmt)
        outputs, final, out_fmt = graph_func(new_vars)
        graph = _make_outputs(outputs + final, subgraph_name)
    return graph, len(outputs), out_fmt


def _union_inputs(graphs, known, by_name):
    """The node's inputs: the union of the cut graphs' inputs; per graph the locations of its
    inputs among them. known: {name: symbol} of the loop variables (while_loop); by_name:
    inputs of the same name are one input (cond), else the same symbol object (while_loop)."""
    inputs, where, locs, cut_graphs = [], {}, [], []
    for graph in graphs:
        graph, cut = _cut(graph)
        own = _graph_input_vars(graph)
        names = graph.list_inputs()
        if len(set(names)) != len(names):
            raise AssertionError("The inputs of the subgraph don't have unique names: %s" % names)
        prior = {s.name: s for s in inputs} if by_name else {}
        graph_locs = []
        for n in names:
            if n in known:
                sym = known[n]
            elif n in prior:
                sym = prior[n]
            elif n in cut:
                sym = cut[n]
            else:
                sym = _copy_var(n, own[n])
            if id(sym) not in where:
                where[id(sym)] = len(inputs)
                inputs.append(sym)
            graph_locs.append(where[id(sym)])
        locs.append((graph_locs, names))
        cut_graphs.append(graph)
    return inputs, locs, cut_graphs


def while_loop(cond, func, loop_vars, max_iterations=None, name='while_loop'):
    """Runs `func(*loop_vars) -> (step_output, new_loop_vars)` while `cond(*loop_vars)` holds,
    at most max_iterations times, as one `_while_loop` graph node (MXNet's
    `sym.contrib.while_loop`). Returns (step outputs stacked along axis 0, max_iterations rows
    with zeros after the last step, final loop_vars)."""
    if max_iterations is None:
        raise ValueError('max_iterations should be specified')
    if hasattr(max_iterations, 'asscalar'):
        max_iterations = max_iterations.asscalar()
    try:
        max_iterations = int(max_iterations)
    except (TypeError, ValueError):
        raise ValueError('Cannot convert max_iteration to python int') from None
    flat_vars, var_fmt = _cf_flatten(loop_vars, 'while loop_vars')
    _check_symbols(flat_vars, 'loop_vars should be a symbol or a nested list of symbols')
    if len(flat_vars) == 0:
        raise ValueError('loop_vars should contain at least one element')

    def cond_wrapper(vs):
        result = cond(*vs)
        if not isinstance(result, _Symbol):
            raise ValueError('Return of cond must be a Symbol')
        return [], [result], None

    def func_wrapper(vs):
        step_output, new_vars = func(*vs)
        step_output = [] if step_output is None else step_output
        new_vars = [] if new_vars is None else new_vars
        step_output = list(step_output) if isinstance(step_output, tuple) else step_output
        new_vars = list(new_vars) if isinstance(new_vars, tuple) else new_vars
        step_output, out_fmt = _cf_flatten(step_output, 'while output')
        new_vars, _ = _cf_flatten(new_vars, 'while loop_vars')
        if len(vs) != len(new_vars):
            raise ValueError('The number of loop_vars should be consistent during the loop')
        return step_output, new_vars, out_fmt

    cond_g, n_cond_data, _ = _subgraph(loop_vars, cond_wrapper, name + '_cond', _uniq_name)
    func_g, num_out_data, out_fmt = _subgraph(loop_vars, func_wrapper, name + '_func',
                                              _uniq_name)
    num_outputs = len(func_g.list_outputs())
    var_names = [_uniq_name(s) for s in flat_vars]
    inputs, ((cond_locs, _), (func_locs, func_names)), (cond_g, func_g) = _union_inputs(
        [cond_g, func_g], dict(zip(var_names, flat_vars)), by_name=False)
    func_var_locs = [func_names.index(n) if n in func_names else -1 for n in var_names]
    for i, loc in enumerate(func_var_locs, 1):
        if loc == -1:
            raise ValueError("The %d-th loop_var doesn't involve into the computation" % i)
    ret = _node('_while_loop', [cond_g, func_g], inputs, {
        'max_iterations': max_iterations, 'cond_input_locs': _locs(cond_locs),
        'func_input_locs': _locs(func_locs), 'func_var_locs': _locs(func_var_locs),
        'num_out_data': num_out_data, 'num_outputs': num_outputs})
    outputs = [ret[i] for i in range(num_out_data)]
    if out_fmt is not None and num_out_data:
        outputs, _ = _cf_regroup(outputs, out_fmt)
    final, _ = _cf_regroup([ret[i] for i in range(num_out_data, num_outputs)], var_fmt)
    return outputs, final


def cond(pred, then_func, else_func, name='cond'):
    """then_func() if pred else else_func(), as one `_cond` graph node holding the predicate
    and both branches (MXNet's `sym.contrib.cond`); returns the branch's outputs in then's
    nesting."""
    def branch(fn):
        def run(_):
            outputs, fmt = _cf_flatten(fn(), 'cond outputs')
            return outputs, [], fmt
        return run

    cond_g, n_pred, _ = _subgraph([], branch(lambda: pred), name + '_pred', None)
    if n_pred != 1:
        raise ValueError('pred should always be a single output')
    then_g, n_then, then_fmt = _subgraph([], branch(then_func), name + '_then', None)
    else_g, n_else, _ = _subgraph([], branch(else_func), name + '_else', None)
    if n_then != n_else:
        raise ValueError('Number of outputs differs between then-branch and else-branch')
    inputs, locs, graphs = _union_inputs([cond_g, then_g, else_g], {}, by_name=True)
    ret = _node('_cond', graphs, inputs, {
        'cond_input_locs': _locs(locs[0][0]), 'then_input_locs': _locs(locs[1][0]),
        'else_input_locs': _locs(locs[2][0]), 'num_outputs': n_then})
    outputs, _ = _cf_regroup([ret[i] for i in range(n_then)], then_fmt)
    if isinstance(outputs, _Symbol):
        outputs.__class__ = _BranchOutput
    return outputs


class _BranchOutput(_Symbol):
    """cond's result when a branch returns one Symbol. It stands for the branch's list of
    outputs, so it iterates while tracing (MXNet code unpacks it: `(y,) = F.contrib.cond(...)`),
    where iterating a traced Symbol is otherwise refused as a use of data."""
    __slots__ = ()

    def __iter__(self):
        return (self[i] for i in range(self._num_outputs))
