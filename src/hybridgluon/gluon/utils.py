"""Small helpers of Gluon (MXNet's `gluon.utils`): hook handles, batch splitting over contexts,
global-norm clipping, file download with SHA-1 checks, and the formatting helpers that the Block
and Parameter messages rely on."""
import hashlib
import math
import os
import uuid
import warnings
import weakref

from ..base import MXNetError

__all__ = ['split_data', 'split_and_load', 'clip_global_norm', 'HookHandle', 'shape_is_known',
           'check_sha1', 'download', 'replace_file']


def split_data(data, num_slice, batch_axis=0, even_split=True):
    """Splits an NDArray into `num_slice` slices along `batch_axis` (a list of NDArrays, even
    when `num_slice` is 1).

    With even_split=False the first `size % num_slice` slices get one extra row (MXNet 1.9.1:
    5 rows in 3 slices are 2, 2, 1; 2 rows in 3 slices are 1, 1, 0). Slices along axis 0 are
    views of `data`; along another axis they are copies (slice_axis).
    """
    size = data.shape[batch_axis]
    if even_split and size % num_slice != 0:
        raise ValueError(
            "data with shape %s cannot be evenly split into %d slices along axis %d. "
            "Use a batch size that's multiple of %d or set even_split=False to allow "
            "uneven partitioning of data." % (str(data.shape), num_slice, batch_axis, num_slice))
    each, extras = divmod(size, num_slice)
    bounds = [0]
    for i in range(num_slice):
        bounds.append(bounds[-1] + each + (1 if i < extras else 0))
    if batch_axis == 0:
        return [data[bounds[i]:bounds[i + 1]] for i in range(num_slice)]
    return [data.slice_axis(batch_axis, bounds[i], bounds[i + 1]) for i in range(num_slice)]


def split_and_load(data, ctx_list, batch_axis=0, even_split=True):
    """Splits `data` along `batch_axis` and puts slice i on `ctx_list[i]` (a copy, or the
    slice itself when it already lives there). Non-NDArray data becomes an array on
    `ctx_list[0]` first."""
    from .. import ndarray as nd
    if not isinstance(data, nd.NDArray):
        data = nd.array(data, ctx=ctx_list[0])
    if len(ctx_list) == 1:
        return [data.as_in_context(ctx_list[0])]
    slices = split_data(data, len(ctx_list), batch_axis, even_split)
    return [i.as_in_context(ctx) for i, ctx in zip(slices, ctx_list)]


def clip_global_norm(arrays, max_norm, check_isfinite=True):
    """Rescales `arrays` in place so that their global 2-norm (of all their elements together)
    is at most `max_norm`: each is multiplied by min(1, max_norm / (norm + 1e-8)). The arrays
    may live on different contexts; the norm is computed on the first one's.

    Returns the norm before rescaling: a NumPy scalar when check_isfinite (which also warns when
    it is nan or inf), else an NDArray of shape (1,) on the first array's context.
    """
    from .. import ndarray as nd
    from ..base import MXNetError
    if not arrays:
        raise MXNetError('clip_global_norm: arrays is empty (give a list of NDArrays)')
    ctx = arrays[0].context
    squares = []
    for arr in arrays:
        flat = arr.reshape((-1,))
        squares.append(nd.dot(flat, flat).as_in_context(ctx))
    total_norm = nd.sqrt(nd.add_n(*squares))
    norm = total_norm.asscalar()
    if check_isfinite and not math.isfinite(norm):
        warnings.warn(UserWarning('nan or inf is detected. Clipping results will be undefined.'),
                      stacklevel=2)
    scale = nd.broadcast_minimum(max_norm / (total_norm + 1e-8), nd.ones((1,), ctx=ctx))
    for arr in arrays:
        arr *= scale.as_in_context(arr.context)
    return norm if check_isfinite else total_norm


def check_sha1(filename, sha1_hash):
    """Whether the SHA-1 of the file's content, in hexadecimal, equals `sha1_hash` (the whole
    digest, as MXNet 1.9.1 compares it)."""
    sha1 = hashlib.sha1()
    with open(filename, 'rb') as f:
        for chunk in iter(lambda: f.read(1 << 20), b''):
            sha1.update(chunk)
    return sha1.hexdigest() == sha1_hash


def replace_file(src, dst):
    """Moves file `src` to `dst` in one step (os.replace: a reader of `dst` sees the old file or
    the new one, never a part). On failure `src` is removed and OSError names both."""
    try:
        os.replace(src, dst)
    except OSError as err:
        try:
            os.remove(src)
        except OSError:
            pass
        raise OSError('Moving downloaded temp file - %s, to %s failed (%s). Please retry the '
                      'download.' % (src, dst, err.strerror or err)) from None


class _DownloadError(MXNetError, OSError):
    """A download that failed every attempt (an OSError too: it is an I/O failure)."""


_ERROR_CLASSES = {}


def _download_error(cause, message):
    """An MXNetError carrying `message` that is also an instance of `cause`'s class, so code
    that catches what MXNet would raise (requests.ConnectionError, ...) still catches it."""
    base = type(cause)
    cls = _ERROR_CLASSES.get(base)
    if cls is None:
        try:
            cls = type('DownloadError', (MXNetError, base), {'__module__': __name__})
        except TypeError:  # a class that cannot be combined with MXNetError
            cls = _DownloadError
        _ERROR_CLASSES[base] = cls
    try:
        return cls(message)
    except Exception:  # noqa: BLE001 (a constructor that needs other arguments)
        return _DownloadError(message)


class _MissingPackage(MXNetError, ImportError):
    """An optional package is not installed."""


def download(url, path=None, overwrite=False, sha1_hash=None, retries=5, verify_ssl=True):
    """Downloads `url` (with `requests`) to `path` (a file, or a folder to put the URL's file
    name in; default: that name in the working folder) and returns the file's path.

    Nothing is fetched when the file exists, unless `overwrite` or its SHA-1 does not match
    `sha1_hash`. The data goes to a uniquely named temporary file first, renamed into place at
    the end, so processes downloading the same file at once leave one complete copy. A failed
    attempt is retried until `retries` attempts in all have failed (at least one is made), then
    the last error is raised. verify_ssl=False skips certificate checks, with a warning.
    """
    if path is None:
        fname = url.split('/')[-1]
        if not fname:
            raise AssertionError("Can't construct file-name from this URL. Please set the "
                                 "`path` option manually.")
    else:
        path = os.path.expanduser(path)
        fname = os.path.join(path, url.split('/')[-1]) if os.path.isdir(path) else path
    if retries < 0:
        raise AssertionError("Number of retries should be at least 0, currently it's %d"
                             % retries)
    if not verify_ssl:
        warnings.warn('Unverified HTTPS request is being made (verify_ssl=False). Adding '
                      'certificate verification is strongly advised.')
    if not (overwrite or not os.path.exists(fname) or
            (sha1_hash and not check_sha1(fname, sha1_hash))):
        return fname
    try:
        import requests
    except ImportError:
        raise _MissingPackage('gluon.utils.download(%r) needs the requests package: pip install '
                              'requests' % url) from None
    dirname = os.path.dirname(os.path.abspath(fname))
    os.makedirs(dirname, exist_ok=True)
    attempts_left = max(retries, 1)
    while True:
        try:
            _download_once(requests, url, fname, sha1_hash, verify_ssl)
            return fname
        except Exception as e:  # noqa: BLE001 (any failure is retried, as in MXNet)
            attempts_left -= 1
            if attempts_left <= 0:
                if isinstance(e, UserWarning):  # the hash check, raised as MXNet raises it
                    raise
                tries = max(retries, 1)
                raise _download_error(e, 'download of %s to %s failed after %d attempt%s: %r '
                                      '(no network? put the file there yourself to skip the '
                                      'download)' % (url, fname, tries, 's' if tries > 1 else '',
                                                     e)) from e
            print('download failed due to %r, retrying, %d attempt%s left'
                  % (e, attempts_left, 's' if attempts_left > 1 else ''))


def _download_once(requests, url, fname, sha1_hash, verify_ssl):
    print('Downloading %s from %s...' % (fname, url))
    r = requests.get(url, stream=True, verify=verify_ssl)
    if r.status_code != 200:
        raise RuntimeError('Failed downloading url %s' % url)
    tmp = '%s.%s' % (fname, uuid.uuid4())
    try:
        with open(tmp, 'wb') as f:
            for chunk in r.iter_content(chunk_size=1024):
                if chunk:
                    f.write(chunk)
        if not os.path.exists(fname) or (sha1_hash and not check_sha1(fname, sha1_hash)):
            replace_file(tmp, fname)  # atomic: a concurrent reader sees the old or the new file
        else:
            warnings.warn('File %s exists in file system so the downloaded file is deleted'
                          % fname)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    if sha1_hash and not check_sha1(fname, sha1_hash):
        raise UserWarning('File %s is downloaded but the content hash does not match. The repo '
                          'may be outdated or download may be incomplete. If the "repo_url" is '
                          'overridden, consider switching to the default repo.' % fname)


def _get_repo_url():
    """The base URL of MXNet's Gluon repository ($MXNET_GLUON_REPO overrides), ending in '/'."""
    repo_url = os.environ.get('MXNET_GLUON_REPO',
                              'https://apache-mxnet.s3-accelerate.dualstack.amazonaws.com/')
    return repo_url if repo_url.endswith('/') else repo_url + '/'


def _get_repo_file_url(namespace, filename):
    return '%s%s/%s' % (_get_repo_url(), namespace, filename)


def shape_is_known(shape):
    """Whether every dimension of `shape` is known, as MXNet decides it: the unknown dimension
    is 0, or -1 under NumPy shape semantics (where 0 is a real, empty dimension and () a known
    scalar shape; without them () is unknown). None is unknown; a dimension below -1 is an
    error. (-1 also counts as unknown without NumPy semantics, where MXNet asserts.)"""
    from ..util import is_np_shape
    if shape is None:
        return False
    np_shape = is_np_shape()
    if len(shape) == 0:
        return np_shape
    for dim in shape:
        if dim < -1:
            raise ValueError('Invalid shape %s: dimensions must be >= -1' % str(shape))
        if dim == -1 or (dim == 0 and not np_shape):
            return False
    return True


class HookHandle:
    """Detaches a forward (pre-)hook from its Block: `handle.detach()` or `with handle:`."""

    def __init__(self):
        self._hooks_dict_ref = None
        self._id = None

    def attach(self, hooks_dict, hook):
        """Adds `hook` to `hooks_dict` (an OrderedDict of the block); once per handle."""
        if self._hooks_dict_ref is not None:
            raise AssertionError('The same handle cannot be attached twice.')
        self._id = id(hook)
        hooks_dict[self._id] = hook
        self._hooks_dict_ref = weakref.ref(hooks_dict)

    def detach(self):
        """Removes the hook; harmless if it is already gone."""
        hooks_dict = self._hooks_dict_ref() if self._hooks_dict_ref is not None else None
        if hooks_dict is not None and self._id in hooks_dict:
            del hooks_dict[self._id]

    def __getstate__(self):
        return (self._hooks_dict_ref() if self._hooks_dict_ref else None, self._id)

    def __setstate__(self, state):
        if state[0] is None:
            self._hooks_dict_ref = weakref.ref(dict())
        else:
            self._hooks_dict_ref = weakref.ref(state[0])
        self._id = state[1]

    def __enter__(self):
        return self

    def __exit__(self, ptype, value, trace):
        self.detach()


def _indent(s_, num_spaces):
    """Indents every line of `s_` but the first by `num_spaces`."""
    lines = s_.split('\n')
    if len(lines) == 1:
        return s_
    first = lines.pop(0)
    return '\n'.join([first] + [(num_spaces * ' ') + line for line in lines])


def _brief_print_list(lst, limit=7):
    """`'a', 'b', 'c', ..., 'w', 'x', 'y', 'z'`: at most `limit` quoted names."""
    lst = list(lst)
    if len(lst) > limit:
        return (_brief_print_list(lst[:limit // 2], limit) + ', ..., ' +
                _brief_print_list(lst[-limit // 2:], limit))
    return ', '.join(["'%s'" % str(i) for i in lst])
