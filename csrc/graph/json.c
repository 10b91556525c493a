/* JSON reader and string buffer. The reader is recursive descent with a depth limit of 64, so
 * deeply nested input is an error rather than a stack overflow. */
#include "json.h"

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

static hg_status parse_string(reader *r, char **out)
{
    r->p++; /* opening quote */
    size_t cap = 16, n = 0;
    char *s = malloc(cap);
    if (!s) return hg_error(HG_ERR_MEMORY, "out of memory");
    for (;;) {
        if (r->p >= r->end) {
            free(s);
            return fail(r, "unterminated string");
        }
        char c = *r->p++;
        if (c == '"') break;
        if ((unsigned char)c < 0x20) {
            free(s);
            return fail(r, "control character in string");
        }
        char buf[4];
        size_t k = 1;
        buf[0] = c;
        if (c == '\\') {
            if (r->p >= r->end) {
                free(s);
                return fail(r, "unterminated escape");
            }
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
                unsigned cp = 0;
                for (int i = 0; i < 4; i++) {
                    int h = r->p < r->end ? hexval(*r->p) : -1;
                    if (h < 0) {
                        free(s);
                        return fail(r, "bad \\u escape");
                    }
                    cp = cp * 16 + (unsigned)h;
                    r->p++;
                }
                if (cp == 0) {
                    free(s);
                    return fail(r, "NUL character in string");
                }
                /* UTF-8 encode the BMP code point (surrogates kept as-is: names are ASCII). */
                if (cp < 0x80) {
                    buf[0] = (char)cp;
                } else if (cp < 0x800) {
                    buf[0] = (char)(0xC0 | (cp >> 6));
                    buf[1] = (char)(0x80 | (cp & 0x3F));
                    k = 2;
                } else {
                    buf[0] = (char)(0xE0 | (cp >> 12));
                    buf[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
                    buf[2] = (char)(0x80 | (cp & 0x3F));
                    k = 3;
                }
                break;
            }
            default: free(s); return fail(r, "unknown escape");
            }
        }
        if (n + k + 1 > cap) {
            cap = cap * 2 + k;
            char *t = realloc(s, cap);
            if (!t) {
                free(s);
                return hg_error(HG_ERR_MEMORY, "out of memory");
            }
            s = t;
        }
        memcpy(s + n, buf, k);
        n += k;
    }
    s[n] = '\0';
    *out = s;
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
