/* MXNet's binary NDArray-list format (`*.params`, `nd.save` / `nd.load`): read and write.
 *
 * A file holds N dense arrays and either no names (a "list file", what `nd.save(f, [a, b])`
 * writes) or one name per array (a "dict file": `nd.save(f, {'w': a})`, every Gluon .params).
 * Writing produces exactly what MXNet 1.9.1 writes in its default (legacy-shape) mode: V2
 * records, each with its array's device (cpu(i)), so files are byte-identical to MXNet's for the
 * same arrays, devices and names. Reading puts every array on cpu(0), as MXNet's nd.load does.
 * Reading also accepts MXNet's older records (V1, pre-V1 with 32-bit dims) and V3 records
 * (NumPy-shape mode: ndim 0 is a 0-d scalar). Arrays saved from a GPU load onto the CPU.
 *
 * Not supported, with an error naming the record: sparse storage (row_sparse, csr) and the
 * type flags MXNet has beyond the eight dtypes here (int16, uint16, uint32, uint64, bfloat16)
 * -> HG_ERR_UNSUPPORTED; "none" arrays (an uninitialised `NDArray()`, stored as ndim 0 in a
 * V2/V1 record, ndim -1 in V3) -> HG_ERR_UNSUPPORTED: they have no shape, dtype or data, and
 * nothing in this library can represent them, so they are refused rather than dropped (dropping
 * one would silently shift every later array of a list file).
 *
 * Files are little-endian (array data in host order, as MXNet does); this code assumes a
 * little-endian host. Reading is hardened against malformed input: every count and size read
 * from the data is checked against the bytes that remain before anything is allocated, so a
 * truncated or corrupted file gives HG_ERR_IO ("Invalid NDArray file format ...", naming the
 * file and the record) and never a crash, a huge allocation or a leak.
 *
 * Thread-safety: all functions are reentrant. A loaded hg_ndlist is immutable, so several
 * threads may read it at once; hg_ndlist_free must not race with other use of the same list.
 * Errors are reported as everywhere in hybridgluon: a status, message in hg_last_error().
 */
#ifndef HYBRIDGLUON_NDLIST_H
#define HYBRIDGLUON_NDLIST_H

#include "hybridgluon/hybridgluon.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A loaded NDArray file: arrays (and names for a dict file) in file order. Opaque. */
typedef struct hg_ndlist hg_ndlist;

/* Saves n arrays to path. names == NULL writes a list file; otherwise names[i] (NUL-terminated,
 * written as its bytes, typically UTF-8) names arrays[i] and a dict file is written (MXNet keeps
 * duplicates in the file; its loader then keeps the last). n == 0 writes an empty list file.
 * The arrays are only read; the caller keeps its references.
 *
 * Crash-safe: the bytes go to "<path>.tmp.<pid>.<seq>" in the same directory, which is flushed,
 * fsync()ed and rename()d over path, so path is never left half-written. An existing file keeps
 * its permission bits; a symlink is followed (the file it points to is replaced, the link
 * stays). A path that is a device or FIFO (/dev/null, a pipe) is written in place, as MXNet
 * does, since it cannot be renamed over. Arguments are checked before any file is created: a
 * 0-d array (MXNet's legacy format would read ndim 0 back as a "none" array; reshape to (1,))
 * or a NULL array/name gives HG_ERR_VALUE. Any I/O failure gives HG_ERR_IO with the path and
 * strerror() text, and removes the temporary file (path is then as it was). */
HG_API hg_status hg_ndlist_save_file(const char *path, int n, hg_tensor *const *arrays,
                                     const char *const *names);

/* As hg_ndlist_save_file, into memory: *out_buf receives a new buffer of *out_len bytes, owned
 * by the caller and released with hg_buffer_free(). On failure *out_buf is NULL. */
HG_API hg_status hg_ndlist_save_bytes(int n, hg_tensor *const *arrays, const char *const *names,
                                      void **out_buf, size_t *out_len);

/* Sets MXNet's NumPy shape semantics for this thread's saves and loads (V3 records, 0-d arrays
 * allowed; off: V2 records) and returns the previous setting. */
HG_API int hg_ndlist_set_np_shape(int on);

/* Frees a buffer returned by this library (hg_ndlist_save_bytes). NULL is ignored. */
HG_API void hg_buffer_free(void *buf);

/* Loads an NDArray file. On success *out is a new list owned by the caller (hg_ndlist_free);
 * on failure *out is NULL and nothing is leaked. The file is streamed: each array is read
 * straight into its own tensor (one allocation per array, made with hg_tensor_new). path must
 * be a regular file. Errors: HG_ERR_IO (cannot open/read, or malformed: message starts with
 * "Invalid NDArray file format" and names the file and the record), HG_ERR_UNSUPPORTED (see
 * the top of this file), HG_ERR_MEMORY. */
HG_API hg_status hg_ndlist_load_file(const char *path, hg_ndlist **out);

/* As hg_ndlist_load_file, from len bytes at buf (which the caller keeps; nothing points into
 * it afterwards). */
HG_API hg_status hg_ndlist_load_bytes(const void *buf, size_t len, hg_ndlist **out);

/* Number of arrays in the list. */
HG_API int hg_ndlist_count(const hg_ndlist *list);

/* 1 for a dict file (one name per array), 0 for a list file. An empty dict file cannot be told
 * from an empty list file (MXNet writes both with no names) and reads as a list. */
HG_API int hg_ndlist_has_names(const hg_ndlist *list);

/* The i-th array as a NEW reference: the caller releases it with hg_tensor_free(), and it stays
 * valid after hg_ndlist_free(). i outside [0, count) gives HG_ERR_INDEX and *out = NULL. */
HG_API hg_status hg_ndlist_get(const hg_ndlist *list, int i, hg_tensor **out);

/* The i-th name (NUL-terminated; borrowed, valid until hg_ndlist_free), or NULL for a list file
 * or i out of range. A name read from a file may contain NUL bytes: hg_ndlist_name_len gives
 * its full length in bytes (0 where hg_ndlist_name gives NULL). */
HG_API const char *hg_ndlist_name(const hg_ndlist *list, int i);
HG_API size_t hg_ndlist_name_len(const hg_ndlist *list, int i);

/* Frees the list and drops its references to the arrays. NULL is ignored. */
HG_API void hg_ndlist_free(hg_ndlist *list);

#ifdef __cplusplus
}
#endif
#endif /* HYBRIDGLUON_NDLIST_H */
