/* The op families: the one list of csrc/ops/ tables, handed to the registry (core/registry.c) when
 * the library loads, so that core names no op. Adding a family means adding one line here; adding
 * an op to a family means nothing here at all. The references are strong: a family listed here
 * and not linked is a link error, never a silently missing family. Order matters only for
 * aliases: the first definition of a name wins. */
#include "core/op.h"

#define HG_FAMILIES(X)                                                                          \
    X(elemwise_unary) X(elemwise_binary) X(reduce) X(matrix) X(shape) X(slicing) X(indexing)   \
    X(nn_basic) X(creation) X(random) X(sort) X(nn_train) X(conv) X(pool) X(cast) X(resample)   \
    X(deconv) X(norm) X(grad_util) X(optimizer) X(reduce_grad) X(ctc) X(linalg) X(linalg_bwd) \
    X(softmax) X(legacy_output) X(sequence) X(legacy_nn)                                      \
    X(contrib_elemwise) X(contrib_bbox) X(contrib_multibox) X(contrib_index)                  \
    X(contrib_transformer) X(contrib_resize) X(contrib_roi) X(contrib_optim)                  \
    X(contrib_hawkes) X(contrib_quant) X(tensor_extra) X(tensor_num) X(spatial) X(sample) \
    X(deform_conv) X(image) X(image_geom) X(image_color) X(bn_v1) X(proposal) X(infer_util) X(custom) X(control_flow) X(rnn)

#define DECLARE(f) extern const hg_op_def hg_ops_##f[];
HG_FAMILIES(DECLARE)
#undef DECLARE

#define ENTRY(f) hg_ops_##f,
static const hg_op_def *const k_families[] = {HG_FAMILIES(ENTRY) NULL};
#undef ENTRY

__attribute__((constructor)) static void install_families(void)
{
    hg_registry_install_families(k_families);
}
