/* MXNet's NDArray-list format (.params): a bounds-checked reader over a file or a memory buffer
 * and a writer to a crash-safe temporary file or an exactly sized memory buffer.
 *
 * Layout (MXNet 1.x's NDArray::Save / Load), little-endian:
 *   u64 0x112 | u64 0 | u64 N | N records | u64 K (0 or N) | K x (u64 len, len bytes)
 *   V2 record: u32 0xF993FAC9 | i32 stype | i32 ndim, ndim x i64 | i32 dev_type | i32 dev_id |
 *              i32 type_flag | data
 * The reader never trusts a number from the input: every count and size is compared with the
 * bytes that remain before it is used to allocate or to read, so hostile input costs at most
 * its own size in memory. Errors name the source (file path or "buffer") and the record.
 */
#include "hybridgluon/ndlist.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/device.h"
#include "core/tensor.h"
#include "formats/fileout.h"

#define LIST_MAGIC 0x112ULL
#define REC_V1 0xF993FAC8u /* i64 dims, no storage type */
#define REC_V2 0xF993FAC9u /* storage type; what MXNet 1.x writes in legacy-shape mode */
#define REC_V3 0xF993FACAu /* V2 layout in NumPy-shape mode: ndim 0 is a scalar, -1 none */
#define NUM_MX_TYPE_FLAGS 13 /* MXNet's type flags 0..12; 8..12 have no dtype here */
/* Bytes of the smallest record (a pre-V1 "none" array: just u32 ndim = 0). Bounds the array
 * count a file can claim, so the pointer table allocated for it is at most twice the file. */
#define MIN_RECORD_BYTES 4

/* MXNet's NumPy shape semantics for this thread (hg_ndlist_set_np_shape): saving then writes V3
 * records, where ndim 0 is a scalar, and loading accepts only V3 records; off (the default),
 * V2 records are written and V3 ones refused, as MXNet 1.9.1 does. */
static _Thread_local int t_np_shape;

int hg_ndlist_set_np_shape(int on)
{
    int prev = t_np_shape;
    t_np_shape = on != 0;
    return prev;
}

struct hg_ndlist {
    int count;
    hg_tensor **arrays;
    char **names;      /* NULL for a list file; else count NUL-terminated names */
    size_t *name_lens; /* byte lengths of names (a name may hold NUL bytes) */
};

static const char *const k_extra_types[NUM_MX_TYPE_FLAGS] = {
    [8] = "int16", [9] = "uint16", [10] = "uint32", [11] = "uint64", [12] = "bfloat16"};

/* ---------------------------------------------------------------------------------------- */
/* Reading                                                                                   */

typedef struct reader {
    const unsigned char *buf; /* memory source, or NULL when reading fp */
    FILE *fp;
    uint64_t pos, len;        /* len: total bytes of the source */
    const char *path;         /* NULL for a memory buffer */
    char where[96];           /* "header", "record 3 of 5 (byte 120)", ...: for messages */
} reader;

static hg_status rd_fail(const reader *r, hg_status code, const char *fmt, ...) HG_PRINTF(3, 4);

/* Formats "<head> <source>, <where>: <what>". Structural problems (HG_ERR_IO) start with
 * MXNet's own wording so users searching for it find the cause. */
static hg_status rd_fail(const reader *r, hg_status code, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    const char *head = code == HG_ERR_IO ? "Invalid NDArray file format in" : "Cannot load";
    if (r->path) return hg_error(code, "%s '%s', %s: %s", head, r->path, r->where, what);
    return hg_error(code, "%s buffer, %s: %s", head, r->where, what);
}

static uint64_t rd_remaining(const reader *r) { return r->len - r->pos; }

/* Reads n bytes into dst (n checked against what remains first). */
static hg_status rd_bytes(reader *r, void *dst, uint64_t n, const char *what)
{
    if (n > rd_remaining(r))
        return rd_fail(r, HG_ERR_IO, "truncated: %s needs %llu bytes at byte %llu, %llu remain",
                       what, (unsigned long long)n, (unsigned long long)r->pos,
                       (unsigned long long)rd_remaining(r));
    if (n == 0) return HG_OK;
    if (r->buf) {
        memcpy(dst, r->buf + r->pos, (size_t)n);
    } else if (fread(dst, 1, (size_t)n, r->fp) != (size_t)n) {
        if (ferror(r->fp))
            return rd_fail(r, HG_ERR_IO, "read error in %s at byte %llu: %s", what,
                           (unsigned long long)r->pos, strerror(errno));
        return rd_fail(r, HG_ERR_IO, "the file ended early (changed while being read?) in %s",
                       what);
    }
    r->pos += n;
    return HG_OK;
}

static hg_status rd_u32(reader *r, uint32_t *v, const char *what)
{
    unsigned char b[4];
    HG_TRY(rd_bytes(r, b, 4, what));
    *v = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    return HG_OK;
}

static hg_status rd_i32(reader *r, int32_t *v, const char *what)
{
    uint32_t u;
    HG_TRY(rd_u32(r, &u, what));
    *v = (int32_t)u;
    return HG_OK;
}

static hg_status rd_u64(reader *r, uint64_t *v, const char *what)
{
    uint32_t lo, hi;
    HG_TRY(rd_u32(r, &lo, what));
    HG_TRY(rd_u32(r, &hi, what));
    *v = (uint64_t)hi << 32 | lo;
    return HG_OK;
}

/* A V1/V2/V3 shape: i32 ndim then ndim x i64. *ndim may come back -1 (V3's "none"). */
static hg_status rd_shape64(reader *r, int *ndim, int64_t *dims)
{
    int32_t nd;
    HG_TRY(rd_i32(r, &nd, "ndim"));
    if (nd < -1 || nd > HG_MAX_NDIM)
        return rd_fail(r, HG_ERR_IO, "ndim %d is outside [0, %d]", nd, HG_MAX_NDIM);
    for (int i = 0; i < nd; i++) {
        uint64_t d;
        HG_TRY(rd_u64(r, &d, "shape"));
        if ((int64_t)d < 0)
            return rd_fail(r, HG_ERR_IO, "dimension %d of the shape is negative (%lld)", i,
                           (long long)(int64_t)d);
        dims[i] = (int64_t)d;
    }
    *ndim = nd;
    return HG_OK;
}

/* Reads a record's magic / storage type / shape. Sets *ndim to -1 for a "none" array. */
static hg_status rd_record_shape(reader *r, int *ndim, int64_t *dims)
{
    uint32_t magic;
    HG_TRY(rd_u32(r, &magic, "record magic"));
    if (magic == REC_V3 && !t_np_shape)
        return rd_fail(r, HG_ERR_VALUE,
                       "ndarray was saved in np shape semantics, must be loaded in the same "
                       "semantics: load it within `with mx.np_shape(True)`");
    if (magic != REC_V3 && t_np_shape)
        return rd_fail(r, HG_ERR_VALUE,
                       "ndarray was not saved in np shape semantics, but being loaded in np "
                       "shape semantics: load it within `with mx.np_shape(False)`");
    if (magic == REC_V2 || magic == REC_V3) {
        int32_t stype;
        HG_TRY(rd_i32(r, &stype, "storage type"));
        if ((stype == 1 || stype == 2) && magic == REC_V2)
            return rd_fail(r, HG_ERR_UNSUPPORTED,
                           "%s storage is not supported (only dense "
                           "arrays can be loaded)",
                           stype == 1 ? "row_sparse" : "csr");
        /* -1 is MXNet's undefined storage: what an uninitialised NDArray() saves as. */
        if (stype != 0 && !(stype == -1 && magic == REC_V2))
            return rd_fail(r, HG_ERR_IO, "unknown storage type %d", stype);
        HG_TRY(rd_shape64(r, ndim, dims));
        if (magic == REC_V2 && *ndim == 0) *ndim = -1;
        for (int i = 0; magic == REC_V3 && i < *ndim; i++)
            if (dims[i] < 0) *ndim = -1; /* an unknown dimension: MXNet's none array */
        if (stype == -1 && *ndim >= 0)
            return rd_fail(r, HG_ERR_IO, "undefined storage type on an array with a shape");
    } else if (magic == REC_V1) {
        HG_TRY(rd_shape64(r, ndim, dims));
        if (*ndim == 0) *ndim = -1;
    } else {
        /* Pre-V1 records have no magic: the first word is ndim, then ndim x u32 dims. */
        if (magic > HG_MAX_NDIM)
            return rd_fail(r, HG_ERR_IO,
                           "unknown record type 0x%08x (not a V1/V2/V3 record "
                           "magic, nor a pre-V1 dimension count in [0, %d])",
                           (unsigned)magic, HG_MAX_NDIM);
        for (uint32_t i = 0; i < magic; i++) {
            uint32_t d;
            HG_TRY(rd_u32(r, &d, "shape"));
            dims[i] = d;
        }
        *ndim = magic == 0 ? -1 : (int)magic;
    }
    return HG_OK;
}

/* One record -> one new tensor (a single allocation, sized only after the data it needs has
 * been found to be present). */
static hg_status rd_record(reader *r, hg_tensor **out)
{
    int ndim = -1; /* (set by rd_record_shape whenever it succeeds) */
    int64_t dims[HG_MAX_NDIM];
    HG_TRY(rd_record_shape(r, &ndim, dims));
    if (ndim < 0)
        return rd_fail(r, HG_ERR_UNSUPPORTED,
                       "none arrays are not supported (an uninitialised "
                       "NDArray() saved with no shape, dtype or data)");
    int32_t dev_type, dev_id, flag;
    HG_TRY(rd_i32(r, &dev_type, "device type"));
    HG_TRY(rd_i32(r, &dev_id, "device id"));
    HG_TRY(rd_i32(r, &flag, "type flag"));
    /* cpu, gpu, cpu_pinned, cpu_shared: every device loads onto the CPU here. */
    if (dev_type != 1 && dev_type != 2 && dev_type != 3 && dev_type != 5)
        return rd_fail(r, HG_ERR_IO, "unknown device type %d", dev_type);
    if (flag < 0 || flag >= NUM_MX_TYPE_FLAGS)
        return rd_fail(r, HG_ERR_IO, "invalid type flag %d", flag);
    if (flag >= HG_NUM_DTYPES)
        return rd_fail(r, HG_ERR_UNSUPPORTED, "dtype %s (type flag %d) is not supported",
                       k_extra_types[flag], flag);
    /* need = itemsize x prod(dims), compared with what remains one factor at a time so that
     * neither the product nor an allocation can be driven by an absurd shape. */
    const uint64_t avail = rd_remaining(r);
    uint64_t need = hg_dtype_size((hg_dtype)flag);
    char sbuf[HG_SHAPE_STR];
    for (int i = 0; i < ndim; i++)
        if (dims[i] == 0) need = 0;
    for (int i = 0; i < ndim && need; i++) {
        if ((uint64_t)dims[i] > avail / need)
            return rd_fail(r, HG_ERR_IO,
                           "array data of shape %s (%s) is larger than the %llu "
                           "bytes that remain",
                           hg_shape_str(sbuf, ndim, dims), hg_dtype_name((hg_dtype)flag),
                           (unsigned long long)avail);
        need *= (uint64_t)dims[i];
    }
    if (need > avail)
        return rd_fail(r, HG_ERR_IO, "array data of shape %s (%s) needs %llu bytes, %llu remain",
                       hg_shape_str(sbuf, ndim, dims), hg_dtype_name((hg_dtype)flag),
                       (unsigned long long)need, (unsigned long long)avail);
    hg_tensor *t;
    hg_status st = hg_tensor_new(ndim, dims, (hg_dtype)flag, &t);
    if (st) return rd_fail(r, st, "%s", hg_last_error());
    st = rd_bytes(r, hg_data(t), need, "array data");
    if (st) {
        hg_tensor_free(t);
        return st;
    }
    *out = t;
    return HG_OK;
}

static hg_status rd_names(reader *r, hg_ndlist *l, uint64_t k)
{
    l->names = calloc((size_t)k, sizeof *l->names);
    l->name_lens = calloc((size_t)k, sizeof *l->name_lens);
    if (!l->names || !l->name_lens) return hg_error(HG_ERR_MEMORY, "out of memory");
    for (uint64_t j = 0; j < k; j++) {
        snprintf(r->where, sizeof r->where, "name %llu of %llu (byte %llu)", (unsigned long long)j,
                 (unsigned long long)k, (unsigned long long)r->pos);
        uint64_t len;
        HG_TRY(rd_u64(r, &len, "name length"));
        if (len > rd_remaining(r))
            return rd_fail(r, HG_ERR_IO,
                           "name length %llu is larger than the %llu bytes that "
                           "remain",
                           (unsigned long long)len, (unsigned long long)rd_remaining(r));
        char *s = malloc((size_t)len + 1);
        if (!s) return hg_error(HG_ERR_MEMORY, "out of memory");
        l->names[j] = s;
        HG_TRY(rd_bytes(r, s, len, "name"));
        s[len] = '\0';
        l->name_lens[j] = (size_t)len;
    }
    return HG_OK;
}

static hg_status rd_list(reader *r, hg_ndlist **out)
{
    hg_status st;
    uint64_t magic, reserved, n, k;
    snprintf(r->where, sizeof r->where, "header");
    if ((st = rd_u64(r, &magic, "magic number")) != HG_OK) return st;
    if (magic != LIST_MAGIC)
        return rd_fail(r, HG_ERR_IO,
                       "magic number 0x%llx is not 0x112: this is not an NDArray "
                       "file",
                       (unsigned long long)magic);
    if ((st = rd_u64(r, &reserved, "reserved field")) != HG_OK) return st;
    if ((st = rd_u64(r, &n, "array count")) != HG_OK) return st;
    /* Each array takes at least MIN_RECORD_BYTES, and the name count 8 more. */
    uint64_t rest = rd_remaining(r);
    if (rest < 8 || n > (rest - 8) / MIN_RECORD_BYTES || n > INT_MAX)
        return rd_fail(r, HG_ERR_IO,
                       "array count %llu cannot fit in the %llu bytes that remain "
                       "(truncated or corrupted file)",
                       (unsigned long long)n, (unsigned long long)rest);

    hg_ndlist *l = calloc(1, sizeof *l);
    if (!l || !(l->arrays = calloc(n ? (size_t)n : 1, sizeof *l->arrays))) {
        free(l);
        return hg_error(HG_ERR_MEMORY, "out of memory");
    }
    for (uint64_t i = 0; i < n; i++) {
        snprintf(r->where, sizeof r->where, "record %llu of %llu (byte %llu)",
                 (unsigned long long)i, (unsigned long long)n, (unsigned long long)r->pos);
        if ((st = rd_record(r, &l->arrays[i])) != HG_OK) goto fail;
        l->count = (int)i + 1;
    }
    snprintf(r->where, sizeof r->where, "name count (byte %llu)", (unsigned long long)r->pos);
    if ((st = rd_u64(r, &k, "name count")) != HG_OK) goto fail;
    if (k != 0 && k != n) {
        st = rd_fail(r, HG_ERR_IO, "%llu names for %llu arrays (must be 0 or equal)",
                     (unsigned long long)k, (unsigned long long)n);
        goto fail;
    }
    /* Trailing bytes after the names are ignored, as MXNet does. */
    if (k && (st = rd_names(r, l, k)) != HG_OK) goto fail;
    *out = l;
    return HG_OK;
fail:
    hg_ndlist_free(l);
    return st;
}

hg_status hg_ndlist_load_bytes(const void *buf, size_t len, hg_ndlist **out)
{
    if (!out) return hg_error(HG_ERR_VALUE, "hg_ndlist_load_bytes: out is NULL");
    *out = NULL;
    if (!buf && len) return hg_error(HG_ERR_VALUE, "hg_ndlist_load_bytes: buf is NULL");
    reader r = {.buf = buf ? buf : (const void *)"", .len = len};
    return rd_list(&r, out);
}

hg_status hg_ndlist_load_file(const char *path, hg_ndlist **out)
{
    if (!out || !path) return hg_error(HG_ERR_VALUE, "hg_ndlist_load_file: NULL argument");
    *out = NULL;
    FILE *fp = fopen(path, "rb");
    if (!fp) return hg_error(HG_ERR_IO, "Cannot open NDArray file '%s': %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fileno(fp), &sb) != 0) {
        int e = errno;
        fclose(fp);
        return hg_error(HG_ERR_IO, "Cannot read NDArray file '%s': %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        fclose(fp);
        return hg_error(HG_ERR_IO, "Cannot read NDArray file '%s': %s", path,
                        S_ISDIR(sb.st_mode) ? "it is a directory" : "not a regular file");
    }
    reader r = {.fp = fp, .len = (uint64_t)sb.st_size, .path = path};
    hg_status st = rd_list(&r, out);
    fclose(fp);
    return st;
}

/* ---------------------------------------------------------------------------------------- */
/* Accessors                                                                                 */

int hg_ndlist_count(const hg_ndlist *l) { return l ? l->count : 0; }

int hg_ndlist_has_names(const hg_ndlist *l) { return l && l->names ? 1 : 0; }

hg_status hg_ndlist_get(const hg_ndlist *l, int i, hg_tensor **out)
{
    if (!out) return hg_error(HG_ERR_VALUE, "hg_ndlist_get: out is NULL");
    *out = NULL;
    if (!l || i < 0 || i >= l->count)
        return hg_error(HG_ERR_INDEX, "hg_ndlist_get: index %d is out of range for %d arrays", i,
                        l ? l->count : 0);
    hg_tensor_retain(l->arrays[i]);
    *out = l->arrays[i];
    return HG_OK;
}

const char *hg_ndlist_name(const hg_ndlist *l, int i)
{
    return l && l->names && i >= 0 && i < l->count ? l->names[i] : NULL;
}

size_t hg_ndlist_name_len(const hg_ndlist *l, int i)
{
    return l && l->names && i >= 0 && i < l->count ? l->name_lens[i] : 0;
}

void hg_ndlist_free(hg_ndlist *l)
{
    if (!l) return;
    for (int i = 0; i < l->count; i++) hg_tensor_free(l->arrays[i]);
    if (l->names)
        for (int i = 0; i < l->count; i++) free(l->names[i]);
    free(l->arrays);
    free(l->names);
    free(l->name_lens);
    free(l);
}

void hg_buffer_free(void *buf) { free(buf); }

/* ---------------------------------------------------------------------------------------- */
/* Writing                                                                                   */

typedef struct writer {
    FILE *fp;           /* file sink, or NULL when filling buf */
    unsigned char *buf; /* sized exactly by ndlist_size beforehand */
    size_t pos;
    int err;            /* errno of the first failed write; later writes are skipped */
} writer;

static void w_bytes(writer *w, const void *p, size_t n)
{
    if (n == 0 || w->err) return;
    if (w->fp) {
        errno = 0;
        if (fwrite(p, 1, n, w->fp) != n) w->err = errno ? errno : EIO;
    } else {
        memcpy(w->buf + w->pos, p, n);
    }
    w->pos += n;
}

static void w_u32(writer *w, uint32_t v)
{
    unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 24)};
    w_bytes(w, b, 4);
}

static void w_u64(writer *w, uint64_t v)
{
    w_u32(w, (uint32_t)v);
    w_u32(w, (uint32_t)(v >> 32));
}

/* The whole file, exactly as MXNet 1.9.1 writes it (V3 records in NumPy-shape mode). */
static void w_list(writer *w, int n, hg_tensor *const *arrays, const char *const *names)
{
    w_u64(w, LIST_MAGIC);
    w_u64(w, 0);
    w_u64(w, (uint64_t)n);
    for (int i = 0; i < n; i++) {
        const hg_tensor *t = arrays[i];
        w_u32(w, t_np_shape ? REC_V3 : REC_V2);
        w_u32(w, 0); /* dense storage */
        w_u32(w, (uint32_t)t->ndim);
        for (int d = 0; d < t->ndim; d++) w_u64(w, (uint64_t)t->shape[d]);
        /* The storage's device, as MXNet records it (cpu(1) writes 1 1); loading puts every
         * CPU array on cpu(0) whatever the file says, as MXNet does. */
        w_u32(w, (uint32_t)t->storage->device_type);
        w_u32(w, (uint32_t)t->storage->device_id);
        w_u32(w, (uint32_t)t->dtype);
        if (hg_on_gpu(t)) { /* through host memory; a failed copy fails the write */
            size_t nb = hg_tensor_nbytes(t);
            void *host = malloc(nb ? nb : 1);
            if (!host || hg_tensor_read_bytes(t, host, nb) != HG_OK) w->err = host ? EIO : ENOMEM;
            else w_bytes(w, host, nb);
            free(host);
        } else {
            w_bytes(w, hg_data(t), hg_tensor_nbytes(t));
        }
    }
    w_u64(w, names ? (uint64_t)n : 0);
    for (int i = 0; names && i < n; i++) {
        size_t len = strlen(names[i]);
        w_u64(w, len);
        w_bytes(w, names[i], len);
    }
}

/* Checks the arguments of a save and computes the file size (before any file is touched). */
static hg_status check_save(int n, hg_tensor *const *arrays, const char *const *names, size_t *size)
{
    if (n < 0 || (n > 0 && !arrays))
        return hg_error(HG_ERR_VALUE, "NDArray save: bad array count %d or NULL arrays", n);
    uint64_t total = 24 + 8, limit = (uint64_t)1 << 62;
    for (int i = 0; i < n; i++) {
        const hg_tensor *t = arrays[i];
        if (!t) return hg_error(HG_ERR_VALUE, "NDArray save: array %d is NULL", i);
        if (t->ndim == 0 && !t_np_shape)
            return hg_error(HG_ERR_VALUE,
                            "NDArray save: array %d is 0-d; MXNet's format reads "
                            "ndim 0 back as an empty 'none' array, so reshape it to (1,) first",
                            i);
        if ((unsigned)t->dtype >= HG_NUM_DTYPES || t->ndim > HG_MAX_NDIM)
            return hg_error(HG_ERR_INTERNAL, "NDArray save: array %d is malformed", i);
        /* A GPU array is written through host memory (w_list), with its device recorded. */
        if (names && !names[i]) return hg_error(HG_ERR_VALUE, "NDArray save: name %d is NULL", i);
        total += 24 + 8 * (uint64_t)t->ndim + hg_tensor_nbytes(t);
        if (names) total += 8 + strlen(names[i]);
        if (total > limit) return hg_error(HG_ERR_MEMORY, "NDArray save: the data is too large");
    }
    if (total > SIZE_MAX) return hg_error(HG_ERR_MEMORY, "NDArray save: the data is too large");
    *size = (size_t)total;
    return HG_OK;
}

hg_status hg_ndlist_save_bytes(int n, hg_tensor *const *arrays, const char *const *names,
                               void **out_buf, size_t *out_len)
{
    if (!out_buf || !out_len) return hg_error(HG_ERR_VALUE, "hg_ndlist_save_bytes: NULL output");
    *out_buf = NULL;
    *out_len = 0;
    size_t size;
    HG_TRY(check_save(n, arrays, names, &size));
    writer w = {.buf = malloc(size)};
    if (!w.buf) return hg_error(HG_ERR_MEMORY, "NDArray save: out of memory for %zu bytes", size);
    w_list(&w, n, arrays, names);
    if (w.pos != size) { /* check_save and w_list disagree: a bug, not bad input */
        free(w.buf);
        return hg_error(HG_ERR_INTERNAL, "NDArray save: wrote %zu bytes, expected %zu", w.pos,
                        size);
    }
    *out_buf = w.buf;
    *out_len = size;
    return HG_OK;
}

/* Writes the whole list to f's descriptor (through a stdio buffer on a duplicate of it, so f
 * keeps its own). Checks the arguments first. */
hg_status hg_ndlist_write_file_out(hg_file_out *f, int n, hg_tensor *const *arrays,
                                   const char *const *names)
{
    size_t size;
    HG_TRY(check_save(n, arrays, names, &size));
    int fd = dup(hg_file_out_fd(f));
    writer w = {.fp = fd >= 0 ? fdopen(fd, "wb") : NULL};
    if (!w.fp) {
        int e = errno;
        if (fd >= 0) close(fd);
        return hg_file_out_error(f, e);
    }
    w_list(&w, n, arrays, names);
    if (!w.err && fflush(w.fp) != 0) w.err = errno;
    if (fclose(w.fp) != 0 && !w.err) w.err = errno;
    if (!w.err && w.pos != size) w.err = EIO;
    return w.err ? hg_file_out_error(f, w.err) : HG_OK;
}

hg_status hg_ndlist_check_save(int n, hg_tensor *const *arrays, const char *const *names)
{
    size_t size;
    return check_save(n, arrays, names, &size);
}

hg_status hg_ndlist_save_file(const char *path, int n, hg_tensor *const *arrays,
                              const char *const *names)
{
    if (!path) return hg_error(HG_ERR_VALUE, "hg_ndlist_save_file: path is NULL");
    HG_TRY(hg_ndlist_check_save(n, arrays, names)); /* bad input touches no file */
    hg_file_out *f;
    HG_TRY(hg_file_out_open(path, "NDArray file", &f));
    hg_status st = hg_ndlist_write_file_out(f, n, arrays, names);
    if (st) {
        hg_file_out_discard(f);
        return st;
    }
    return hg_file_out_commit(f);
}
