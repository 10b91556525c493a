/* Crash-safe replacement of a file (see fileout.h): a temporary file beside the target, written,
 * fsync()ed, then rename()d over it. POSIX only, like the rest of the file I/O. */
#include "formats/fileout.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct hg_file_out {
    char *path;       /* as the caller named it, for messages */
    char *target;     /* the file replaced: path, or what a symlink at path names */
    char *tmp;        /* the temporary file beside target; NULL when writing in place */
    const char *what; /* "NDArray file", "symbol file": for messages */
    int fd;           /* -1 once closed */
};

hg_status hg_file_out_error(const hg_file_out *f, int err)
{
    return hg_error(HG_ERR_IO, "Cannot save %s '%s': %s", f->what, f->path, strerror(err));
}

static void file_out_free(hg_file_out *f)
{
    if (f->fd >= 0) close(f->fd);
    if (f->target != f->path) free(f->target);
    free(f->path);
    free(f->tmp);
    free(f);
}

/* Opens a new temporary file beside f->target with the given mode; returns 0 or an errno. */
static int open_temporary(hg_file_out *f, const struct stat *old)
{
    static atomic_uint seq; /* two threads saving one path must not share a temporary file */
    size_t len = strlen(f->target) + 48;
    if (!(f->tmp = malloc(len))) return ENOMEM;
    /* O_EXCL | O_NOFOLLOW: never write through something already at the temporary name. */
    for (int tries = 0; f->fd < 0 && tries < 100; tries++) {
        snprintf(f->tmp, len, "%s.tmp.%ld.%u", f->target, (long)getpid(),
                 atomic_fetch_add(&seq, 1u));
        f->fd = open(f->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (f->fd < 0 && errno != EEXIST) break;
    }
    if (f->fd < 0) {
        int e = errno;
        free(f->tmp);
        f->tmp = NULL;
        return e;
    }
    /* The replaced file's permission bits (a private 0600 file stays private); a new file keeps
     * what open() gave it, 0666 less the umask. */
    if (old && fchmod(f->fd, old->st_mode & 07777) != 0) {
        int e = errno;
        close(f->fd);
        f->fd = -1;
        unlink(f->tmp);
        free(f->tmp);
        f->tmp = NULL;
        return e;
    }
    return 0;
}

hg_status hg_file_out_open(const char *path, const char *what, hg_file_out **out)
{
    if (!out) return hg_error(HG_ERR_VALUE, "hg_file_out_open: out is NULL");
    *out = NULL;
    if (!path || !what) return hg_error(HG_ERR_VALUE, "hg_file_out_open: NULL argument");
    hg_file_out *f = calloc(1, sizeof *f);
    if (!f || !(f->path = strdup(path))) {
        free(f);
        return hg_error(HG_ERR_MEMORY, "out of memory");
    }
    f->what = what;
    f->fd = -1;
    f->target = f->path;
    struct stat sb;
    bool link = lstat(path, &sb) == 0 && S_ISLNK(sb.st_mode);
    char *resolved = link ? realpath(path, NULL) : NULL;
    if (resolved) f->target = resolved;
    bool exists = stat(f->target, &sb) == 0;
    int err = 0;
    if ((exists && !S_ISREG(sb.st_mode) && !S_ISDIR(sb.st_mode)) || (link && !resolved)) {
        /* A device or FIFO (/dev/null, a pipe) cannot be replaced by a rename, and a dangling
         * link names a file to create: write through them in place, as MXNet does. */
        f->fd = open(f->target, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
        if (f->fd < 0) err = errno;
    } else {
        err = open_temporary(f, exists && S_ISREG(sb.st_mode) ? &sb : NULL);
    }
    if (err) {
        hg_status st = hg_file_out_error(f, err);
        file_out_free(f);
        return st;
    }
    *out = f;
    return HG_OK;
}

int hg_file_out_fd(const hg_file_out *f) { return f ? f->fd : -1; }

hg_status hg_file_out_write(hg_file_out *f, const void *buf, size_t len)
{
    const char *p = buf;
    if (f->fd < 0) return hg_error(HG_ERR_VALUE, "hg_file_out_write: the file is closed");
    while (len > 0) {
        ssize_t k = write(f->fd, p, len);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) return hg_file_out_error(f, errno);
        if (k == 0) return hg_file_out_error(f, EIO);
        p += k;
        len -= (size_t)k;
    }
    return HG_OK;
}

hg_status hg_file_out_finish(hg_file_out *f)
{
    if (f->fd < 0) return HG_OK;
    int err = 0;
    if (f->tmp && fsync(f->fd) != 0) err = errno; /* in place (a pipe): nothing to sync */
    if (close(f->fd) != 0 && !err) err = errno;
    f->fd = -1;
    return err ? hg_file_out_error(f, err) : HG_OK;
}

/* fsync the directory holding path so the rename itself survives a crash. Best effort: some
 * file systems refuse fsync on directories, and the data is already safe in the file. */
static void sync_parent_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    if (!dir) return;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
    free(dir);
}

hg_status hg_file_out_commit(hg_file_out *f)
{
    hg_status st = hg_file_out_finish(f);
    if (st == HG_OK && f->tmp) {
        if (rename(f->tmp, f->target) != 0) {
            st = hg_file_out_error(f, errno);
        } else {
            sync_parent_dir(f->target);
            free(f->tmp);
            f->tmp = NULL; /* committed: nothing left to remove */
        }
    }
    hg_file_out_discard(f);
    return st;
}

void hg_file_out_discard(hg_file_out *f)
{
    if (!f) return;
    if (f->fd >= 0) {
        close(f->fd);
        f->fd = -1;
    }
    if (f->tmp) unlink(f->tmp);
    file_out_free(f);
}
