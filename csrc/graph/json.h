/* A small JSON reader (to a tree) and a growable string buffer for writers. Used for MXNet's
 * symbol files; depth and sizes are bounded so hostile input fails cleanly. */
#ifndef HG_GRAPH_JSON_H
#define HG_GRAPH_JSON_H

#include <stdbool.h>
#include <stddef.h>

#include "core/error.h"

typedef enum {
    HG_JSON_NULL,
    HG_JSON_BOOL,
    HG_JSON_NUMBER,
    HG_JSON_STRING,
    HG_JSON_ARRAY,
    HG_JSON_OBJECT
} hg_json_type;

typedef struct hg_json hg_json;
struct hg_json {
    hg_json_type type;
    bool b;
    double num;
    char *str;        /* STRING: NUL-terminated (embedded NULs rejected) */
    int n;            /* ARRAY / OBJECT: number of items */
    hg_json **items;
    char **keys;      /* OBJECT: keys, in document order */
    int line, col;    /* where the value starts, for messages */
};

/* Parses text[0..len). On failure returns HG_ERR_IO with "line L, column C: ..." */
hg_status hg_json_parse(const char *text, size_t len, hg_json **out);
void hg_json_free(hg_json *v);
/* Object member by key, or NULL. */
const hg_json *hg_json_get(const hg_json *obj, const char *key);

typedef struct {
    char *buf;
    size_t len, cap;
    bool oom;
} hg_strbuf;

void hg_sb_put(hg_strbuf *sb, const char *s, size_t n);
void hg_sb_puts(hg_strbuf *sb, const char *s);
void hg_sb_printf(hg_strbuf *sb, const char *fmt, ...) HG_PRINTF(2, 3);
/* A JSON string literal with MXNet's escaping (only \r \n \\ \t " are escaped). */
void hg_sb_json_string(hg_strbuf *sb, const char *s);

#endif
