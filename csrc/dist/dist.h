/* Collectives across processes for data-parallel training, over the MPI library the process
 * has already initialised (mpi4py's, docs/distributed.md). No transport of our own: every byte
 * moves through MPI's nonblocking collectives.
 *
 * hg_dist_init looks the MPI functions up in the libmpi loaded into the process and takes the
 * handles (communicator, datatypes, MPI_SUM, MPI_IN_PLACE) from the caller, which reads them
 * from mpi4py; so no MPI header or library is needed to build. Both handle widths of the MPI
 * ABIs in use are supported: 8 bytes (Open MPI's pointers) and 4 bytes (MPICH's ints).
 *
 * Thread-safety: every collective holds one process-wide lock from start to end, so calls from
 * several threads are serialised (they must still be made in the same order on every rank, as
 * MPI requires). The caller releases the GIL around them. The calls are MPI's blocking
 * collectives, watched: one that another rank never joins does not hang the job; after the
 * timeout a watchdog thread prints which collective waited and ends the job (MPI_Abort). An MPI
 * error (HG_ERR_IO) leaves the communicator unusable: every later collective fails at once.
 */
#ifndef HG_DIST_DIST_H
#define HG_DIST_DIST_H

#include <stdint.h>

#include "core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The MPI handles hg_dist_init needs, each as the integer value of the handle. */
typedef struct hg_dist_handles {
    int handle_size; /* sizeof(MPI_Comm) == sizeof(MPI_Datatype) ...: 8 or 4 */
    intptr_t comm, op_sum, in_place;
    intptr_t t_f32, t_f64, t_i32, t_i64, t_u8, t_u16, t_byte;
} hg_dist_handles;

/* Bit flags of hg_dist_allreduce. */
enum {
    HG_DIST_AVERAGE = 1, /* divide the sum by the number of processes */
    HG_DIST_FP16 = 2,    /* send float32 tensors as float16 (halves the bytes; sums in float32) */
};

/* Resolves MPI's functions in the loaded libmpi, reads rank and size of h->comm and makes the
 * float16 sum op. timeout_s: how long a collective waits for the other ranks before it fails;
 * bucket_bytes: the allreduce message size (1 KiB .. 1 GiB). May be called again (a new
 * communicator). HG_ERR_UNSUPPORTED when no libmpi is loaded or a function is missing,
 * HG_ERR_VALUE for a handle width other than 4 or 8 or a bad setting. */
HG_API hg_status hg_dist_init(const hg_dist_handles *h, double timeout_s, size_t bucket_bytes);
/* This process's rank and the number of processes; 0 and 1 before hg_dist_init. */
HG_API int hg_dist_rank(void);
HG_API int hg_dist_size(void);
/* Sets the seconds a collective may wait for the other ranks before the watchdog ends the job.
 * Returns the previous value; t <= 0 only reads it. */
HG_API double hg_dist_set_timeout(double t);

/* Sums each tensor over all processes, in place (flags: HG_DIST_AVERAGE, HG_DIST_FP16). Every
 * rank passes tensors of the same dtypes and sizes in the same order. Small tensors are packed
 * into buckets (hg_dist_init's bucket_bytes), one message each; a tensor at least a bucket
 * large is reduced where it
 * lies (so is a bucket of one tensor). float32, float64, float16 (summed in float32), int32 and int64 (not with AVERAGE).
 * Errors: HG_ERR_TYPE for another dtype, HG_ERR_UNSUPPORTED for a GPU tensor or before init,
 * HG_ERR_IO when MPI fails. */
HG_API hg_status hg_dist_allreduce(hg_tensor *const *ts, int n, int flags);
/* Copies each tensor of rank `root` into the same tensor of every other rank (any dtype). */
HG_API hg_status hg_dist_broadcast(hg_tensor *const *ts, int n, int root);
/* Concatenates along axis 0 the tensor of every rank, in rank order, into a new tensor *out.
 * The tensors agree in dtype and in every dim but the first. */
HG_API hg_status hg_dist_allgather(const hg_tensor *t, hg_tensor **out);
/* Returns when every rank has called it. */
HG_API hg_status hg_dist_barrier(void);
/* The gradient allreduce overlapped with backward (overlap.c). A schedule holds n gradient
 * buffers (references taken) in buckets of at most bucket_bytes, in reverse order (the order
 * backward writes them). While it exists, a backward that writes these buffers sends each
 * bucket to a communication thread as soon as backward has written all of its buffers, and
 * writes the sums back before it returns (flags as for hg_dist_allreduce). finish, at the
 * optimizer step, reduces what backward did not (buffers it did not write, or a schedule made
 * after the backward) in one hg_dist_allreduce, so that on return every buffer holds its sum;
 * it returns the first failure of the thread's collectives too. Every rank makes the same
 * schedules and runs the same backward passes. One thread trains: a schedule is used by the
 * thread that runs backward and step. Errors: as hg_dist_allreduce; HG_ERR_VALUE for a buffer
 * listed twice. */
typedef struct hg_dist_sched hg_dist_sched;
HG_API hg_status hg_dist_sched_new(hg_tensor *const *grads, int n, int flags, size_t bucket_bytes,
                                   hg_dist_sched **out);
HG_API hg_status hg_dist_sched_finish(hg_dist_sched *s);
/* Buckets reduced during backward, and buffers reduced by finish, since the schedule began. */
HG_API void hg_dist_sched_stats(hg_dist_sched *s, int64_t *overlapped, int64_t *at_finish);
/* Waits for the thread, releases the buffers. NULL is ignored. */
HG_API void hg_dist_sched_free(hg_dist_sched *s);

/* MPI_Abort on the communicator: ends every process of the job with `code`. No-op before init. */
HG_API void hg_dist_abort(int code);

#ifdef __cplusplus
}
#endif

#endif
