/* JSON reader and string buffer. The reader is recursive descent with a depth limit of 64, so
 * deeply nested input is an error rather than a stack overflow. */
#include "graph/json.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 64

typedef struct {
    const char *p, *end, *start;
    int line;
    const char *line_start;
} reader;

static hg_status fail(reader *r, const char *what)
{
    return hg_error(HG_ERR_IO, "malformed JSON at line %d, column %d: %s", r->line,
                    (int)(r->p - r->line_start) + 1, what);
}

static void skip_ws(reader *r)
{
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r')) {
        if (*r->p == '\n') {
            r->line++;
            r->line_start = r->p + 1;
        }
        r->p++;
    }
}

static hg_json *new_value(reader *r, hg_json_type t)
{
    hg_json *v = calloc(1, sizeof *v);
    if (v) {
        v->type = t;
        v->line = r->line;
        v->col = (int)(r->p - r->line_start) + 1;
    }
    return v;
}

void hg_json_free(hg_json *v)
{
    if (!v) return;
    for (int i = 0; i < v->n; i++) {
        hg_json_free(v->items[i]);
        if (v->keys) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->str);
    free(v);
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static hg_status fail_at(reader *r, const char *at, const char *what, unsigned cp)
{
    return hg_error(HG_ERR_IO, "malformed JSON at line %d, column %d: %s (U+%04X)", r->line,
                    (int)(at - r->line_start) + 1, what, cp);
}

/* Four hex digits after "\u"; r->p is past them on success. */
static hg_status read_hex4(reader *r, unsigned *cp)
{
    *cp = 0;
    for (int i = 0; i < 4; i++) {
        int h = r->p < r->end ? hexval(*r->p) : -1;
        if (h < 0) return fail(r, "bad \\u escape (want four hex digits)");
        *cp = *cp * 16 + (unsigned)h;
        r->p++;
    }
    return HG_OK;
}

/* A "\uXXXX" escape (r->p just past the 'u', esc at its backslash) as a code point: a UTF-16
 * surrogate pair ("\ud83d\ude00") is one code point; half of one alone is an error. */
static hg_status read_u_escape(reader *r, const char *esc, unsigned *cp)
{
    HG_TRY(read_hex4(r, cp));
    if (*cp >= 0xDC00 && *cp <= 0xDFFF)
        return fail_at(r, esc, "UTF-16 low surrogate without a high surrogate before it", *cp);
    if (*cp < 0xD800 || *cp > 0xDBFF) return HG_OK;
    unsigned lo;
    if (r->end - r->p < 2 || r->p[0] != '\\' || r->p[1] != 'u')
        return fail_at(r, esc, "UTF-16 high surrogate not followed by a low surrogate", *cp);
    r->p += 2;
    HG_TRY(read_hex4(r, &lo));
    if (lo < 0xDC00 || lo > 0xDFFF)
        return fail_at(r, esc, "UTF-16 high surrogate not followed by a low surrogate", *cp);
    *cp = 0x10000 + ((*cp - 0xD800) << 10) + (lo - 0xDC00);
    return HG_OK;
}

/* UTF-8 of code point cp (at most 0x10FFFF, not a surrogate) into buf; returns its length. */
static size_t utf8_encode(unsigned cp, char *buf)
{
    if (cp < 0x80) {
        buf[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        buf[0] = (char)(0xC0 | (cp >> 6));
        buf[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        buf[0] = (char)(0xE0 | (cp >> 12));
        buf[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        buf[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    buf[0] = (char)(0xF0 | (cp >> 18));
    buf[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    buf[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    buf[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Length of the well-formed UTF-8 sequence at p (lead byte >= 0x80), or 0 when it is not one
 * (overlong, a surrogate, past U+10FFFF, cut short): every string the reader returns is valid
 * UTF-8, so callers (the Python binding) can decode names without a failure path of their own. */
static size_t utf8_valid_len(const unsigned char *p, const unsigned char *end)
{
    unsigned c = p[0], lo = 0x80, hi = 0xBF;
    size_t k;
    if (c >= 0xC2 && c <= 0xDF) k = 2;
    else if (c >= 0xE0 && c <= 0xEF) k = 3;
    else if (c >= 0xF0 && c <= 0xF4) k = 4;
    else return 0;
    if (c == 0xE0) lo = 0xA0;      /* overlong */
    else if (c == 0xED) hi = 0x9F; /* surrogates */
    else if (c == 0xF0) lo = 0x90; /* overlong */
    else if (c == 0xF4) hi = 0x8F; /* past U+10FFFF */
    if ((size_t)(end - p) < k || p[1] < lo || p[1] > hi) return 0;
    for (size_t i = 2; i < k; i++)
        if ((p[i] & 0xC0) != 0x80) return 0;
    return k;
}

/* A string literal. Beyond standard JSON it takes raw control characters other than CR and LF,
 * as MXNet writes them (its writer escapes only \r \n \\ \t and "), so our own and MXNet's
 * files read back; NUL, raw or escaped, is an error (strings are NUL-terminated). */
static hg_status parse_string_body(reader *r, hg_strbuf *sb)
{
    r->p++; /* opening quote */
    for (;;) {
        if (r->p >= r->end) return fail(r, "unterminated string");
        const char *at = r->p;
        char c = *r->p++;
        char buf[4];
        size_t k = 1;
        buf[0] = c;
        if (c == '"') return HG_OK;
        if (c == '\0' || c == '\n' || c == '\r') {
            r->p = at;
            return fail(r, c ? "line break in string" : "NUL character in string");
        }
        if ((unsigned char)c >= 0x80) {
            k = utf8_valid_len((const unsigned char *)at, (const unsigned char *)r->end);
            if (k == 0) {
                r->p = at;
                return fail(r, "invalid UTF-8 in string");
            }
            hg_sb_put(sb, at, k);
            r->p = at + k;
            continue;
        }
        if (c == '\\') {
            if (r->p >= r->end) return fail(r, "unterminated escape");
            char e = *r->p++;
            switch (e) {
            case '"': buf[0] = '"'; break;
            case '\\': buf[0] = '\\'; break;
            case '/': buf[0] = '/'; break;
            case 'b': buf[0] = '\b'; break;
            case 'f': buf[0] = '\f'; break;
            case 'n': buf[0] = '\n'; break;
            case 'r': buf[0] = '\r'; break;
            case 't': buf[0] = '\t'; break;
            case 'u': {
                unsigned cp;
                HG_TRY(read_u_escape(r, at, &cp));
                if (cp == 0) return fail_at(r, at, "NUL character in string", cp);
                k = utf8_encode(cp, buf);
                break;
            }
            default: r->p = at; return fail(r, "unknown escape");
            }
        }
        hg_sb_put(sb, buf, k);
    }
}

static hg_status parse_string(reader *r, char **out)
{
    hg_strbuf sb = {0};
    hg_sb_put(&sb, "", 0); /* an empty string is "" too, not NULL */
    hg_status st = parse_string_body(r, &sb);
    if (st == HG_OK && sb.oom) st = hg_error(HG_ERR_MEMORY, "out of memory");
    if (st != HG_OK) {
        free(sb.buf);
        return st;
    }
    char *fit = realloc(sb.buf, sb.len + 1); /* most strings are short names */
    *out = fit ? fit : sb.buf;
    return HG_OK;
}

static hg_status parse_value(reader *r, int depth, hg_json **out);

static hg_status append(hg_json *v, hg_json *item, char *key, int *cap)
{
    if (v->n == *cap) {
        int nc = *cap ? *cap * 2 : 8;
        hg_json **items = realloc(v->items, sizeof *items * (size_t)nc);
        if (!items) return hg_error(HG_ERR_MEMORY, "out of memory");
        v->items = items;
        if (v->type == HG_JSON_OBJECT) {
            char **keys = realloc(v->keys, sizeof *keys * (size_t)nc);
            if (!keys) return hg_error(HG_ERR_MEMORY, "out of memory");
            v->keys = keys;
        }
        *cap = nc;
    }
    v->items[v->n] = item;
    if (v->keys) v->keys[v->n] = key;
    v->n++;
    return HG_OK;
}

static hg_status parse_container(reader *r, int depth, hg_json *v)
{
    bool obj = v->type == HG_JSON_OBJECT;
    char close = obj ? '}' : ']';
    int cap = 0;
    r->p++;
    skip_ws(r);
    if (r->p < r->end && *r->p == close) {
        r->p++;
        return HG_OK;
    }
    for (;;) {
        char *key = NULL;
        hg_json *item = NULL;
        skip_ws(r);
        if (obj) {
            if (r->p >= r->end || *r->p != '"') return fail(r, "expected a string key");
            HG_TRY(parse_string(r, &key));
            skip_ws(r);
            if (r->p >= r->end || *r->p != ':') {
                free(key);
                return fail(r, "expected ':'");
            }
            r->p++;
        }
        hg_status st = parse_value(r, depth + 1, &item);
        if (st == HG_OK) st = append(v, item, key, &cap);
        if (st != HG_OK) {
            free(key);
            hg_json_free(item);
            return st;
        }
        skip_ws(r);
        if (r->p < r->end && *r->p == ',') {
            r->p++;
            continue;
        }
        if (r->p < r->end && *r->p == close) {
            r->p++;
            return HG_OK;
        }
        return fail(r, obj ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

static hg_status parse_value(reader *r, int depth, hg_json **out)
{
    *out = NULL;
    if (depth > MAX_DEPTH) return fail(r, "nesting too deep");
    skip_ws(r);
    if (r->p >= r->end) return fail(r, "unexpected end of input");
    char c = *r->p;
    hg_json *v;
    hg_status st = HG_OK;
    if (c == '{' || c == '[') {
        v = new_value(r, c == '{' ? HG_JSON_OBJECT : HG_JSON_ARRAY);
        if (!v) return hg_error(HG_ERR_MEMORY, "out of memory");
        if (c == '{') {
            v->keys = NULL;
            v->keys = calloc(1, sizeof(char *)); /* non-NULL marks an object's key array */
            if (!v->keys) {
                free(v);
                return hg_error(HG_ERR_MEMORY, "out of memory");
            }
        }
        st = parse_container(r, depth, v);
    } else if (c == '"') {
        v = new_value(r, HG_JSON_STRING);
        if (!v) return hg_error(HG_ERR_MEMORY, "out of memory");
        st = parse_string(r, &v->str);
    } else if (c == 't' && r->end - r->p >= 4 && !memcmp(r->p, "true", 4)) {
        v = new_value(r, HG_JSON_BOOL);
        if (v) v->b = true;
        r->p += 4;
    } else if (c == 'f' && r->end - r->p >= 5 && !memcmp(r->p, "false", 5)) {
        v = new_value(r, HG_JSON_BOOL);
        r->p += 5;
    } else if (c == 'n' && r->end - r->p >= 4 && !memcmp(r->p, "null", 4)) {
        v = new_value(r, HG_JSON_NULL);
        r->p += 4;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
        char buf[64];
        size_t k = 0;
        while (r->p < r->end && k < sizeof buf - 1 &&
               (strchr("+-.eE", *r->p) || (*r->p >= '0' && *r->p <= '9')))
            buf[k++] = *r->p++;
        buf[k] = '\0';
        char *endp;
        double d = strtod(buf, &endp);
        if (*endp || k == 0) return fail(r, "bad number");
        v = new_value(r, HG_JSON_NUMBER);
        if (v) v->num = d;
    } else {
        return fail(r, "unexpected character");
    }
    if (!v) return hg_error(HG_ERR_MEMORY, "out of memory");
    if (st != HG_OK) {
        hg_json_free(v);
        return st;
    }
    *out = v;
    return HG_OK;
}

hg_status hg_json_parse(const char *text, size_t len, hg_json **out)
{
    if (!text || !out) return hg_error(HG_ERR_VALUE, "hg_json_parse: NULL argument");
    reader r = {text, text + len, text, 1, text};
    hg_json *v;
    HG_TRY(parse_value(&r, 0, &v));
    skip_ws(&r);
    if (r.p != r.end) {
        hg_json_free(v);
        return fail(&r, "trailing characters after the document");
    }
    *out = v;
    return HG_OK;
}

const hg_json *hg_json_get(const hg_json *obj, const char *key)
{
    if (!obj || obj->type != HG_JSON_OBJECT) return NULL;
    for (int i = 0; i < obj->n; i++)
        if (strcmp(obj->keys[i], key) == 0) return obj->items[i];
    return NULL;
}

void hg_sb_put(hg_strbuf *sb, const char *s, size_t n)
{
    if (sb->oom) return;
    if (sb->len + n + 1 > sb->cap) {
        size_t nc = (sb->cap ? sb->cap * 2 : 256) + n;
        char *b = realloc(sb->buf, nc);
        if (!b) {
            sb->oom = true;
            return;
        }
        sb->buf = b;
        sb->cap = nc;
    }
    memcpy(sb->buf + sb->len, s, n);
    sb->len += n;
    sb->buf[sb->len] = '\0';
}

void hg_sb_puts(hg_strbuf *sb, const char *s) { hg_sb_put(sb, s, strlen(s)); }

void hg_sb_printf(hg_strbuf *sb, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < sizeof buf) {
        hg_sb_put(sb, buf, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) {
        sb->oom = true;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    hg_sb_put(sb, big, (size_t)n);
    free(big);
}

void hg_sb_json_string(hg_strbuf *sb, const char *s)
{
    hg_sb_put(sb, "\"", 1);
    for (; *s; s++) {
        switch (*s) {
        case '\r': hg_sb_put(sb, "\\r", 2); break;
        case '\n': hg_sb_put(sb, "\\n", 2); break;
        case '\\': hg_sb_put(sb, "\\\\", 2); break;
        case '\t': hg_sb_put(sb, "\\t", 2); break;
        case '"': hg_sb_put(sb, "\\\"", 2); break;
        default: hg_sb_put(sb, s, 1);
        }
    }
    hg_sb_put(sb, "\"", 1);
}
