/* What mpi.c shares with overlap.c (not part of the API in dist.h). */
#ifndef HG_DIST_DIST_IMPL_H
#define HG_DIST_DIST_IMPL_H

#include "dist/dist.h"

/* Starts a detached thread running fn(NULL); HG_ERR_MEMORY (naming `what`) when it cannot. */
hg_status hg_dist_start_thread(void *(*fn)(void *), const char *what);
/* Takes the collectives' lock, failing (without it) before init or once the communicator is
 * broken; hg_dist_leave releases it. */
hg_status hg_dist_enter(const char *what);
void hg_dist_leave(void);
/* The dtype tensor t (argument i, for messages) travels as under flags, and its element size;
 * HG_ERR_TYPE for a dtype that cannot be summed. */
hg_status hg_dist_wire(const hg_tensor *t, int flags, int i, hg_dtype *wire_dtype, size_t *esize);
/* t's elements into dst as wire_dtype; dst's sums back into t, times scale. */
void hg_dist_pack(const hg_tensor *t, hg_dtype wire_dtype, void *dst);
void hg_dist_unpack(hg_tensor *t, hg_dtype wire_dtype, const void *src, double scale);
/* With the lock held: sums count elements of wire_dtype at buf over all ranks, in place. */
hg_status hg_dist_reduce_locked(void *buf, int64_t count, hg_dtype wire_dtype);

#endif
