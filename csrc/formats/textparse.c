/* CSV and LibSVM text parsed into tensors with MXNet's (dmlc-core's) number conversion; see
 * textparse.h for the rules. Outputs grow in buffers whose sizes are checked before every
 * doubling; the tensors are allocated once the counts are known and the data copied in. */
#include "formats/textparse.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* dmlc reads at most this many fraction digits; later ones are skipped. */
#define MAX_FRACTION_DIGITS 19
/* dmlc clamps a float's decimal exponent to float's range. */
#define MAX_FLOAT_EXPONENT 38

typedef struct {
    char *data;
    size_t len, cap; /* in bytes */
} growbuf;

static hg_status growbuf_push(growbuf *b, const void *item, size_t size)
{
    if (b->cap - b->len < size) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap - b->len < size) {
            if (cap > SIZE_MAX / 2) return hg_error(HG_ERR_MEMORY, "text parser: out of memory");
            cap *= 2;
        }
        char *p = realloc(b->data, cap);
        if (!p) return hg_error(HG_ERR_MEMORY, "text parser: out of memory");
        b->data = p;
        b->cap = cap;
    }
    memcpy(b->data + b->len, item, size);
    b->len += size;
    return HG_OK;
}

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\v' || c == '\f'; }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static char lower(char c) { return (char)(c | 32); }

/* dmlc's ParseFloat<float> over [p, end): returns the value, *next is where it stopped. */
static float parse_float(const char *p, const char *end, const char **next)
{
    while (p < end && is_space(*p)) p++;
    bool negative = false;
    if (p < end && (*p == '-' || *p == '+')) negative = *p++ == '-';
    static const char inf_word[] = "infinity";
    size_t i = 0;
    while (i < 8 && p + i < end && lower(p[i]) == inf_word[i]) i++;
    if (i == 3 || i == 8) {
        *next = p + i;
        return negative ? -INFINITY : INFINITY;
    }
    if (end - p >= 3 && lower(p[0]) == 'n' && lower(p[1]) == 'a' && lower(p[2]) == 'n') {
        *next = p + 3;
        return NAN;
    }
    uint64_t whole = 0; /* wraps past 2^64, as dmlc's does */
    for (; p < end && is_digit(*p); p++) whole = whole * 10u + (uint64_t)(*p - '0');
    float value = (float)whole;
    if (p < end && *p == '.') {
        uint64_t frac = 0, pow10 = 1;
        int digits = 0;
        for (p++; p < end && is_digit(*p); p++, digits++) {
            if (digits < MAX_FRACTION_DIGITS) {
                frac = frac * 10u + (uint64_t)(*p - '0');
                pow10 *= 10u;
            }
        }
        value += (float)((double)frac / (double)pow10);
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        const char *q = p + 1;
        bool shrink = false;
        if (q < end && (*q == '-' || *q == '+')) shrink = *q++ == '-';
        unsigned expon = 0;
        for (; q < end && is_digit(*q); q++)
            if (expon < 1000u) expon = expon * 10u + (unsigned)(*q - '0');
        if (expon > MAX_FLOAT_EXPONENT) expon = MAX_FLOAT_EXPONENT;
        /* At the clamped exponent dmlc floors a shrunk value's magnitude at the largest
         * subnormal float (just below FLT_MIN), zero included: measured on MXNet 1.9.1, where
         * 0e-40, 1e-45 and 1.1e-38 all read 0x007FFFFF. */
        bool floor_min = shrink && expon == MAX_FLOAT_EXPONENT;
        float scale = 1.0f;
        for (; expon >= 8u; expon -= 8u) scale *= 1e8f;
        for (; expon > 0u; expon--) scale *= 10.0f;
        value = shrink ? value / scale : value * scale;
        if (floor_min && value < FLT_MIN) value = nextafterf(FLT_MIN, 0.0f);
        p = q;
    }
    *next = p;
    return negative ? -value : value;
}

/* strtoll's reading of a decimal prefix (saturating at the int64 bounds). */
static int64_t parse_int(const char *p, const char *end, const char **next)
{
    while (p < end && is_space(*p)) p++;
    bool negative = false;
    if (p < end && (*p == '-' || *p == '+')) negative = *p++ == '-';
    uint64_t v = 0;
    bool saturated = false;
    for (; p < end && is_digit(*p); p++) {
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10u) saturated = true;
        else v = v * 10u + d;
    }
    *next = p;
    uint64_t limit = negative ? (uint64_t)INT64_MAX + 1u : (uint64_t)INT64_MAX;
    if (saturated || v > limit) v = limit;
    if (negative) return v == (uint64_t)INT64_MAX + 1u ? INT64_MIN : -(int64_t)v;
    return (int64_t)v;
}

/* An int64 reduced modulo 2^32 into int32, as MXNet's cast of a parsed long gives it. */
static int32_t wrap_int32(int64_t v)
{
    uint32_t u = (uint32_t)((uint64_t)v & 0xFFFFFFFFu);
    return u <= (uint32_t)INT32_MAX ? (int32_t)u : (int32_t)(u - 2147483648u) - INT32_MAX - 1;
}

/* The next line [*start, *stop) from p (without its end of line); returns the position after
 * it. */
static const char *next_line(const char *p, const char *end, const char **start, const char **stop)
{
    const char *q = p;
    while (q < end && *q != '\n' && *q != '\r') q++;
    *start = p;
    *stop = q;
    if (q < end && *q == '\r') q++;
    if (q < end && *q == '\n') q++;
    return q;
}

static bool blank(const char *p, const char *end)
{
    for (; p < end; p++)
        if (!is_space(*p)) return false;
    return true;
}

/* Whether [p, q) (a field's text up to where its number stopped) read no number although the
 * field holds something: text where a number belongs, which MXNet would silently read as 0. */
static bool no_number(const char *p, const char *q, const char *end)
{
    while (p < q && (is_space(*p) || *p == '+' || *p == '-')) p++;
    if (p < q) return false;
    while (q < end && is_space(*q)) q++;
    return q < end && *q != ',';
}

/* One CSV line's fields, converted and appended to out; *count is how many there were. */
static hg_status csv_line(const char *p, const char *end, hg_dtype dtype, growbuf *out,
                          int64_t *count, const char *what, int64_t line)
{
    *count = 0;
    while (p < end) {
        const char *q;
        hg_status st;
        if (dtype == HG_DTYPE_F32) {
            float v = parse_float(p, end, &q);
            st = growbuf_push(out, &v, sizeof v);
        } else if (dtype == HG_DTYPE_I32) {
            int32_t v = wrap_int32(parse_int(p, end, &q));
            st = growbuf_push(out, &v, sizeof v);
        } else {
            int64_t v = parse_int(p, end, &q);
            st = growbuf_push(out, &v, sizeof v);
        }
        if (st) return st;
        if (no_number(p, q, end)) {
            const char *f = p;
            while (q < end && *q != ',') q++;
            return hg_error(HG_ERR_IO,
                            "CSV %s line %" PRId64 ": field %" PRId64 " '%.*s' is not a number",
                            what, line, *count + 1, (int)(q - f < 40 ? q - f : 40), f);
        }
        (*count)++;
        while (q < end && *q != ',') q++; /* the rest of a field is skipped, as MXNet does */
        p = q < end ? q + 1 : end;
    }
    return HG_OK;
}

hg_status hg_text_parse_csv(const char *text, size_t len, int64_t first_line, const char *what,
                            int64_t width, hg_dtype dtype, hg_tensor **out)
{
    if (!out) return hg_error(HG_ERR_VALUE, "hg_text_parse_csv: NULL argument");
    *out = NULL;
    if ((!text && len) || width <= 0 || !what)
        return hg_error(HG_ERR_VALUE, "hg_text_parse_csv: bad argument (width %" PRId64 ")", width);
    if (dtype != HG_DTYPE_F32 && dtype != HG_DTYPE_I32 && dtype != HG_DTYPE_I64)
        return hg_error(HG_ERR_TYPE, "CSV: dtype %s is not supported (float32, int32, int64)",
                        hg_dtype_name(dtype));
    growbuf buf = {0};
    hg_status st = HG_OK;
    int64_t rows = 0, line = first_line;
    const char *p = text, *end = text + len;
    while (p < end && st == HG_OK) {
        const char *a, *b;
        p = next_line(p, end, &a, &b);
        if (!blank(a, b)) {
            int64_t count;
            st = csv_line(a, b, dtype, &buf, &count, what, line);
            if (st == HG_OK && count != width)
                st = hg_error(HG_ERR_IO,
                              "CSV %s line %" PRId64 ": the data size in CSV do not match size of "
                              "shape: the row holds %" PRId64 " values, the shape %" PRId64,
                              what, line, count, width);
            rows++;
        }
        line++;
    }
    if (st == HG_OK) {
        int64_t shape[2] = {rows, width};
        st = hg_tensor_new(2, shape, dtype, out);
        if (st == HG_OK && buf.len) memcpy(hg_data(*out), buf.data, buf.len);
    }
    free(buf.data);
    return st;
}

typedef struct {
    growbuf labels, indptr, cols, vals;
} libsvm_bufs;

/* One "idx:value" entry: index digits (no sign), a colon, a number and nothing else. */
static hg_status libsvm_entry(const char *p, const char *end, const char *what, int64_t line,
                              int64_t width, libsvm_bufs *b)
{
    const char *tok = p;
    uint64_t idx = 0;
    bool digits = false, big = false;
    for (; p < end && is_digit(*p); p++, digits = true) {
        if (idx > (UINT64_MAX - 9u) / 10u) big = true;
        else idx = idx * 10u + (uint64_t)(*p - '0');
    }
    if (!digits || p >= end || *p != ':') {
        if (tok < end && *tok == '-') {
            const char *colon = memchr(tok, ':', (size_t)(end - tok));
            int n = (int)((colon ? colon : end) - tok);
            return hg_error(HG_ERR_IO,
                            "LibSVM %s line %" PRId64 ": column index %.*s is negative "
                            "(indices are zero-based)",
                            what, line, n < 40 ? n : 40, tok);
        }
        return hg_error(HG_ERR_IO,
                        "LibSVM %s line %" PRId64 ": malformed entry '%.*s' (expected "
                        "index:value)",
                        what, line, (int)(end - tok < 40 ? end - tok : 40), tok);
    }
    if (big || idx >= (uint64_t)width)
        return hg_error(HG_ERR_IO,
                        "LibSVM %s line %" PRId64 ": column index %.*s is out of range [0, %" PRId64
                        ") (indices are zero-based; the width is from the shape)",
                        what, line, (int)(p - tok < 40 ? p - tok : 40), tok, width);
    const char *q;
    float v = parse_float(p + 1, end, &q);
    if (q == p + 1 || q != end)
        return hg_error(HG_ERR_IO,
                        "LibSVM %s line %" PRId64 ": malformed value in '%.*s' (expected "
                        "index:value)",
                        what, line, (int)(end - tok < 40 ? end - tok : 40), tok);
    int64_t col = (int64_t)idx;
    hg_status st = growbuf_push(&b->cols, &col, sizeof col);
    return st ? st : growbuf_push(&b->vals, &v, sizeof v);
}

static hg_status libsvm_line(const char *p, const char *end, const char *what, int64_t line,
                             int64_t width, libsvm_bufs *b)
{
    while (p < end && is_space(*p)) p++;
    const char *q;
    float label = parse_float(p, end, &q);
    /* The label may carry a weight ("label:weight"), which MXNet's iterator does not use. */
    if (q == p || (q < end && !is_space(*q) && *q != ':'))
        return hg_error(HG_ERR_IO, "LibSVM %s line %" PRId64 ": bad label '%.*s'", what, line,
                        (int)(end - p < 40 ? end - p : 40), p);
    hg_status st = growbuf_push(&b->labels, &label, sizeof label);
    while (q < end && !is_space(*q)) q++;
    while (st == HG_OK) {
        while (q < end && is_space(*q)) q++;
        if (q >= end) break;
        const char *tok = q;
        while (q < end && !is_space(*q)) q++;
        st = libsvm_entry(tok, q, what, line, width, b);
    }
    if (st) return st;
    int64_t nnz = (int64_t)(b->cols.len / sizeof(int64_t));
    return growbuf_push(&b->indptr, &nnz, sizeof nnz);
}

static hg_status to_tensor(const growbuf *g, hg_dtype dtype, size_t item, hg_tensor **out)
{
    int64_t n = (int64_t)(g->len / item);
    hg_status st = hg_tensor_new(1, &n, dtype, out);
    if (st == HG_OK && g->len) memcpy(hg_data(*out), g->data, g->len);
    return st;
}

hg_status hg_text_parse_libsvm(const char *text, size_t len, int64_t first_line, const char *what,
                               int64_t width, hg_tensor **labels, hg_tensor **indptr,
                               hg_tensor **cols, hg_tensor **vals)
{
    if (!labels || !indptr || !cols || !vals)
        return hg_error(HG_ERR_VALUE, "hg_text_parse_libsvm: NULL argument");
    *labels = *indptr = *cols = *vals = NULL;
    if ((!text && len) || width <= 0 || !what)
        return hg_error(HG_ERR_VALUE, "hg_text_parse_libsvm: bad argument (width %" PRId64 ")",
                        width);
    libsvm_bufs b = {{0}, {0}, {0}, {0}};
    int64_t zero = 0, line = first_line;
    hg_status st = growbuf_push(&b.indptr, &zero, sizeof zero);
    const char *p = text, *end = text + len;
    while (p < end && st == HG_OK) {
        const char *a, *e;
        p = next_line(p, end, &a, &e);
        if (!blank(a, e)) st = libsvm_line(a, e, what, line, width, &b);
        line++;
    }
    if (st == HG_OK) st = to_tensor(&b.labels, HG_DTYPE_F32, sizeof(float), labels);
    if (st == HG_OK) st = to_tensor(&b.indptr, HG_DTYPE_I64, sizeof(int64_t), indptr);
    if (st == HG_OK) st = to_tensor(&b.cols, HG_DTYPE_I64, sizeof(int64_t), cols);
    if (st == HG_OK) st = to_tensor(&b.vals, HG_DTYPE_F32, sizeof(float), vals);
    if (st) {
        hg_tensor_free(*labels);
        hg_tensor_free(*indptr);
        hg_tensor_free(*cols);
        hg_tensor_free(*vals);
        *labels = *indptr = *cols = *vals = NULL;
    }
    free(b.labels.data);
    free(b.indptr.data);
    free(b.cols.data);
    free(b.vals.data);
    return st;
}
