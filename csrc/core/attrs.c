/* Attribute schema handling: defaults, parsing MXNet attribute strings, printing them back. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/op.h"

static const char *const k_type_names[] = {"int",  "float", "boolean", "Shape(tuple)",
                                           "enum", "dtype", "string"};
_Static_assert(HG_COUNT(k_type_names) == HG_NUM_ATTR_TYPES, "one name per hg_attr_type");

int hg_attr_index(const hg_op_def *op, const char *name)
{
    for (int i = 0; i < op->num_attrs; i++)
        if (strcmp(op->attrs[i].name, name) == 0) return i;
    return -1;
}

hg_status hg_attr_unknown(const hg_op_def *op, const char *key)
{
    char list[1024];
    size_t n = 0;
    list[0] = '\0';
    for (int i = 0; i < op->num_attrs && n < sizeof list - 64; i++)
        n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "", op->attrs[i].name);
    return hg_error(HG_ERR_VALUE,
                    "Cannot find argument '%s', Possible Arguments: [%s], in "
                    "operator %s",
                    key, list, op->name);
}

static bool is_none_text(const char *s)
{
    while (isspace((unsigned char)*s)) s++;
    return strncmp(s, "None", 4) == 0 && s[4 + strspn(s + 4, " ")] == '\0';
}

static hg_status bad(const hg_op_def *op, const hg_attr_spec *sp, const char *text)
{
    return hg_error(HG_ERR_VALUE,
                    "Invalid Parameter format for %s expect %s but value='%s', in "
                    "operator %s",
                    sp->name, k_type_names[sp->type], text, op->name);
}

static bool parse_int(const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    while (isspace((unsigned char)*s)) s++;
    long long v = strtoll(s, &end, 10);
    if (end == s || errno) return false;
    if (*end == 'L') end++;
    while (isspace((unsigned char)*end)) end++;
    if (*end) return false;
    *out = v;
    return true;
}

static bool parse_float(const char *s, double *out)
{
    char *end;
    while (isspace((unsigned char)*s)) s++;
    double v = strtod(s, &end);
    if (end == s) return false;
    while (isspace((unsigned char)*end)) end++;
    if (*end) return false;
    *out = v;
    return true;
}

static bool parse_tuple(const char *s, hg_tuple *t)
{
    t->n = 0;
    while (isspace((unsigned char)*s)) s++;
    char close = 0;
    if (*s == '(') close = ')';
    else if (*s == '[') close = ']';
    if (close) s++;
    for (;;) {
        while (isspace((unsigned char)*s) || *s == ',') s++;
        if (*s == close || *s == '\0') break;
        char *end;
        errno = 0;
        long long v;
        if (strncmp(s, "None", 4) == 0) { /* an unset entry (slice begin/end/step) */
            v = INT64_MIN;
            end = (char *)s + 4;
        } else {
            v = strtoll(s, &end, 10);
            if (end == s || errno) return false;
        }
        if (t->n >= HG_MAX_TUPLE) return false;
        t->v[t->n++] = v;
        s = end;
        if (*s == 'L') s++;
        while (isspace((unsigned char)*s)) s++;
        if (*s != ',' && *s != close && *s != '\0') return false;
    }
    if (close) {
        if (*s != close) return false;
        s++;
    }
    while (isspace((unsigned char)*s)) s++;
    return *s == '\0';
}

static bool parse_bool(const char *s, bool *out)
{
    if (!strcasecmp(s, "true") || !strcmp(s, "1")) *out = true;
    else if (!strcasecmp(s, "false") || !strcmp(s, "0")) *out = false;
    else return false;
    return true;
}

hg_status hg_attr_parse(const hg_op_def *op, int idx, const char *text, hg_attrs *a)
{
    const hg_attr_spec *sp = &op->attrs[idx];
    hg_attr_value *v = &a->v[idx];
    v->is_set = true;
    v->is_none = false;
    if ((sp->flags & HG_ATTR_OPTIONAL) && is_none_text(text)) {
        v->is_none = true;
        return HG_OK;
    }
    switch (sp->type) {
    case HG_ATTR_INT:
        if (!parse_int(text, &v->i)) return bad(op, sp, text);
        break;
    case HG_ATTR_FLOAT:
        if (!parse_float(text, &v->f)) return bad(op, sp, text);
        break;
    case HG_ATTR_BOOL:
        if (!parse_bool(text, &v->b)) return bad(op, sp, text);
        break;
    case HG_ATTR_TUPLE:
        if (!parse_tuple(text, &v->t)) return bad(op, sp, text);
        break;
    case HG_ATTR_ENUM:
        for (int i = 0; sp->choices[i]; i++) {
            if (strcmp(sp->choices[i], text) == 0) {
                v->i = i;
                return HG_OK;
            }
        }
        {
            char list[512];
            size_t n = 0;
            for (int i = 0; sp->choices[i] && n < sizeof list - 64; i++)
                n += (size_t)snprintf(list + n, sizeof list - n, "%s'%s'", i ? ", " : "",
                                      sp->choices[i]);
            return hg_error(HG_ERR_VALUE,
                            "Invalid Input: '%s', valid values are: {%s}, in "
                            "operator %s attribute %s",
                            text, n ? list : "", op->name, sp->name);
        }
    case HG_ATTR_DTYPE: {
        hg_dtype dt;
        if (hg_dtype_from_name(text, &dt) != HG_OK)
            return hg_error(HG_ERR_TYPE, "Invalid dtype '%s' for attribute %s of operator %s", text,
                            sp->name, op->name);
        v->i = dt;
        break;
    }
    case HG_ATTR_STRING:
        if (strlen(text) >= HG_MAX_STR) return bad(op, sp, text);
        strcpy(v->s, text);
        break;
    }
    return HG_OK;
}

hg_status hg_attrs_init_defaults(const hg_op_def *op, hg_attrs *a)
{
    a->n = op->num_attrs;
    for (int i = 0; i < op->num_attrs; i++) {
        const hg_attr_spec *sp = &op->attrs[i];
        memset(&a->v[i], 0, offsetof(hg_attr_value, t) + sizeof(int64_t) * 2);
        if (sp->def) {
            HG_TRY(hg_attr_parse(op, i, sp->def, a));
        }
        a->v[i].is_set = false;
    }
    return HG_OK;
}

hg_status hg_attrs_finish(const hg_op_def *op, hg_attrs *a)
{
    for (int i = 0; i < op->num_attrs; i++) {
        if ((op->attrs[i].flags & HG_ATTR_REQUIRED) && !a->v[i].is_set)
            return hg_error(HG_ERR_VALUE,
                            "Required parameter %s of %s is not presented, in "
                            "operator %s",
                            op->attrs[i].name, k_type_names[op->attrs[i].type], op->name);
    }
    return HG_OK;
}

void hg_attr_format(const hg_op_def *op, int idx, const hg_attrs *a, char *buf, size_t size)
{
    const hg_attr_spec *sp = &op->attrs[idx];
    const hg_attr_value *v = &a->v[idx];
    if (v->is_none) {
        snprintf(buf, size, "None");
        return;
    }
    switch (sp->type) {
    case HG_ATTR_INT: snprintf(buf, size, "%lld", (long long)v->i); break;
    case HG_ATTR_FLOAT: snprintf(buf, size, "%.17g", v->f); break;
    case HG_ATTR_BOOL: snprintf(buf, size, "%s", v->b ? "True" : "False"); break;
    case HG_ATTR_ENUM: snprintf(buf, size, "%s", sp->choices[v->i]); break;
    case HG_ATTR_DTYPE: snprintf(buf, size, "%s", hg_dtype_name((hg_dtype)v->i)); break;
    case HG_ATTR_STRING: snprintf(buf, size, "%s", v->s); break;
    case HG_ATTR_TUPLE: {
        size_t n = (size_t)snprintf(buf, size, "(");
        for (int i = 0; i < v->t.n && n < size; i++)
            n += v->t.v[i] == INT64_MIN ? (size_t)snprintf(buf + n, size - n, i ? ", None" : "None")
                                        : (size_t)snprintf(buf + n, size - n, i ? ", %lld" : "%lld",
                                                           (long long)v->t.v[i]);
        if (n < size) snprintf(buf + n, size - n, v->t.n == 1 ? ",)" : ")");
        break;
    }
    }
}
