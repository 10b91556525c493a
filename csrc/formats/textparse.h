/* The text formats of MXNet's data iterators, CSV (CSVIter) and LibSVM (LibSVMIter), parsed into
 * tensors.
 *
 * Numbers are converted as MXNet's parsers (dmlc-core) convert them, so values read here equal
 * MXNet's to the bit: a float is its integer part (as float) plus its first 19 fraction digits
 * (as double val / 10^digits, then float), the two added in float, then scaled by the exponent
 * in float; an integer is the longest decimal prefix of the field (as strtoll reads it), cast
 * to the output type. A field stops at the first character that cannot continue the number; the
 * rest up to the separator is skipped, as MXNet skips it. An empty CSV field is 0 (MXNet's
 * reading); one that holds text but no number at all is an error (MXNet reads 0 there too, which
 * hides a header line or a wrong file).
 *
 * Input is a caller buffer (text, len): it need not end with a newline or a NUL. first_line is
 * the line number of its first line and what names its source ("'train.csv'") in messages. Both
 * functions are pure (no global state): any thread may call them at once on distinct outputs.
 * On failure every *out is NULL and the error names the source, the line and what was wrong. */
#ifndef HG_FORMATS_TEXTPARSE_H
#define HG_FORMATS_TEXTPARSE_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/tensor.h"

/* CSV: every non-empty line holds exactly width numbers separated by commas (a trailing comma
 * ends the line). *out: a (rows, width) tensor of dtype float32, int32 or int64 (rows may be
 * 0). Errors: HG_ERR_IO for a line of another length, HG_ERR_VALUE for a bad argument. */
HG_API hg_status hg_text_parse_csv(const char *text, size_t len, int64_t first_line,
                                   const char *what, int64_t width, hg_dtype dtype,
                                   hg_tensor **out);

/* LibSVM: each non-empty line is "label idx:value idx:value ..." with zero-based column indices
 * below width. Outputs, for n lines and z entries: labels float32 (n,), indptr int64 (n + 1,)
 * (row i's entries are indptr[i] .. indptr[i+1] - 1), cols int64 (z,), vals float32 (z,).
 * Errors: HG_ERR_IO naming the line for a bad label, an entry that is not idx:value, or a
 * column index outside [0, width). */
HG_API hg_status hg_text_parse_libsvm(const char *text, size_t len, int64_t first_line,
                                      const char *what, int64_t width, hg_tensor **labels,
                                      hg_tensor **indptr, hg_tensor **cols, hg_tensor **vals);

#endif
