/* Replacing a file so that no reader ever sees it half-written: the one way every writer of
 * model files (.params, -symbol.json, export's pair) puts bytes on disk.
 *
 * hg_file_out_open() resolves a symbolic link to the file it names (the link stays a link) and
 * opens a new temporary file beside that target, O_EXCL, named "<target>.tmp.<pid>.<n>" so
 * concurrent writers of one path (threads or processes) never share one. It gets the mode of
 * the file it will replace, or 0666 less the umask for a new file, as open() would give. The
 * caller writes through hg_file_out_fd(); hg_file_out_finish() flushes the data to disk and
 * closes it; hg_file_out_commit() renames it over the target (one atomic step: a reader opens
 * the old file or the new one) and syncs the directory. Devices, FIFOs and dangling links
 * cannot be replaced by a rename: they are written in place, as MXNet does.
 * hg_file_out_discard() removes the temporary file of a writer that is not committed.
 *
 * Errors are HG_ERR_IO "Cannot save <what> '<path>': <strerror>". One hg_file_out belongs to
 * one thread at a time; distinct ones are independent. */
#ifndef HG_FORMATS_FILEOUT_H
#define HG_FORMATS_FILEOUT_H

#include <stddef.h>

#include "core/error.h"
#include "core/tensor.h"

typedef struct hg_file_out hg_file_out;

/* Starts replacing path. what names the kind of file in messages ("NDArray file"); it must
 * outlive *out. On failure *out is NULL and nothing was created. */
HG_API hg_status hg_file_out_open(const char *path, const char *what, hg_file_out **out);
/* The descriptor to write to; -1 after hg_file_out_finish(). */
int hg_file_out_fd(const hg_file_out *f);
/* Writes all of buf[0..len). */
HG_API hg_status hg_file_out_write(hg_file_out *f, const void *buf, size_t len);
/* Flushes the data to disk and closes the file; the target is not touched yet. */
HG_API hg_status hg_file_out_finish(hg_file_out *f);
/* Finishes (if not done), renames the file over its target and frees f, on failure too (the
 * temporary file is then removed and the target left as it was). */
HG_API hg_status hg_file_out_commit(hg_file_out *f);
/* Closes f, removes its temporary file and frees it. NULL is ignored. */
HG_API void hg_file_out_discard(hg_file_out *f);
/* Reports an error on f's file as "Cannot save <what> '<path>': <strerror(err)>". */
hg_status hg_file_out_error(const hg_file_out *f, int err);

/* Checks the arguments of an NDArray-list save (hybridgluon/ndlist.h) without writing. */
HG_API hg_status hg_ndlist_check_save(int n, hg_tensor *const *arrays, const char *const *names);
/* Writes an NDArray list (the format of hybridgluon/ndlist.h) to f; checks the arguments first. */
HG_API hg_status hg_ndlist_write_file_out(hg_file_out *f, int n, hg_tensor *const *arrays,
                                          const char *const *names);

#endif
