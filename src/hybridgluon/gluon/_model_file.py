"""Block.save / Block.load (MXNet 1.9.1): a model's structure and traced graphs in
`<prefix>-model.json`, its parameters in `<prefix>-model.params`.

The JSON nests one entry per block, keyed by its class name (lower case) and its position in a
depth-first walk, holding the block's name, the attribute name its parent knows it by, and for a
hybridized block its input/output formats, input variables and graph. Loading walks a freshly
built model of the same structure in the same order, gives every block its saved name back
(so the saved graphs' parameter names are found), restores the graphs, then loads the
parameters. The format is MXNet's, so files go both ways.
"""
import json

__all__ = []


def save_model(block, prefix):
    from .block import HybridBlock
    model = {}

    def visit(blk, index, structure):
        mdl = {'orig_name': blk.name}
        structure[type(blk).__name__.lower() + str(index[0])] = mdl
        if isinstance(blk, HybridBlock):
            if blk._cached_graph:
                syms, out = blk._cached_graph
                mdl['in_format'] = blk._in_format
                mdl['out_format'] = blk._out_format
                mdl['inputs'] = [s.tojson() for s in syms]
                mdl['symbol'] = out.tojson()
                mdl['hybridized'] = True
            else:
                mdl['hybridized'] = False
        children = {}
        mdl['children'] = children
        for ch_name, child in blk._children.items():
            index[0] += 1
            children[child.name] = ch_name
            visit(child, index, mdl)

    visit(block, [0], model)
    with open(prefix + '-model.json', 'w') as fp:
        json.dump(model, fp)
    block.save_parameters(prefix + '-model.params')


def load_model(block, prefix):
    from .. import symbol
    from .block import HybridBlock
    with open(prefix + '-model.json') as fp:
        model = json.load(fp)

    def visit(blk, index, structure):
        key = type(blk).__name__.lower() + str(index[0])
        if key not in structure:
            raise ValueError("Block.load: '%s-model.json' has no block %r where this model has "
                             "one (was it saved from a model built the same way?)" % (prefix, key))
        mdl = structure[key]
        blk._name = mdl['orig_name']
        if isinstance(blk, HybridBlock) and mdl['hybridized']:
            blk._clear_cached_op()
            blk._in_format = mdl['in_format']
            blk._out_format = mdl['out_format']
            blk._cached_graph = ([symbol.load_json(s) for s in mdl['inputs']],
                                 symbol.load_json(mdl['symbol']))
            blk._active = True
        # The parameters are found in the restored graph by their keys: rename them after
        # the saved block name.
        params = blk.params._params
        for p in list(params.keys()):
            param = params.pop(p)
            params[blk.name + '_' + p[len(blk.params._prefix):]] = param
        for child in blk._children.values():
            index[0] += 1
            visit(child, index, mdl)
        children = mdl['children']
        for ch_name in list(blk._children.keys()):
            child = blk._children.pop(ch_name)
            blk._children[children[child.name]] = child

    visit(block, [0], model)
    block.load_parameters(prefix + '-model.params')
