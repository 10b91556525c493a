"""RecordIO files (MXNet's `mx.recordio`): MXRecordIO, MXIndexedRecordIO, IRHeader, pack, unpack,
pack_img, unpack_img.

The bytes are dmlc-core's RecordIO, as MXNet 1.9.1 writes them, so .rec/.idx files move between
the two libraries unchanged. A record is one or more chunks, each
    uint32 magic 0xced7230a | uint32 (cflag << 29 | length) | payload | zero padding to 4 bytes.
A payload that contains the magic word at a 4-byte aligned offset is split there (the magic is
dropped from the data and implied by the chunk boundary): cflag 1 opens a split record, 2
continues it, 3 ends it, 0 is a whole record. Little-endian, as on every platform MXNet ships.

Reading and writing are plain buffered Python file I/O: a record costs two small reads (about a
microsecond), against a millisecond or more to decode the image it usually holds, so a C reader
would not change any pipeline's speed. The .idx file is text, one `key\\tbyte offset` a line.
"""
import numbers
import os
import struct
from collections import namedtuple
from multiprocessing import current_process

import numpy as np

from .base import MXNetError

__all__ = ['MXRecordIO', 'MXIndexedRecordIO', 'IRHeader', 'pack', 'unpack', 'pack_img',
           'unpack_img']

_MAGIC = 0xced7230a
_MAGIC_BYTES = struct.pack('<I', _MAGIC)
_LEN_MASK = (1 << 29) - 1
_CHUNK = struct.Struct('<II')


def _cv2():
    """OpenCV, imported when first needed (an optional dependency)."""
    try:
        import cv2
    except ImportError as e:
        raise MXNetError('this function needs OpenCV: pip install "hybridgluon[image]" '
                         '(the opencv-python-headless package)') from e
    return cv2


def _encode_record(buf):
    """The bytes of one record holding payload buf (dmlc RecordIOWriter::WriteRecord)."""
    n = len(buf)
    if n >= 1 << 29:
        raise MXNetError('RecordIO: a record holds less than 2^29 bytes, got %d' % n)
    out = []
    start = 0
    # The magic only needs escaping where a reader could meet it: at 4-byte aligned offsets.
    pos = buf.find(_MAGIC_BYTES)
    while pos != -1 and pos + 4 <= (n & ~3):
        if pos % 4 == 0:
            out.append(_CHUNK.pack(_MAGIC, ((1 if start == 0 else 2) << 29) | (pos - start)))
            out.append(buf[start:pos])
            start = pos + 4
            pos = buf.find(_MAGIC_BYTES, start)
        else:
            pos = buf.find(_MAGIC_BYTES, pos + 1)
    out.append(_CHUNK.pack(_MAGIC, ((3 if start else 0) << 29) | (n - start)))
    out.append(buf[start:])
    out.append(b'\0' * (-n % 4))
    return b''.join(out)


def _read_record(f, uri):
    """The next record's payload from binary file f, or None at the end of the file."""
    parts = []
    while True:
        head = f.read(8)
        if not head:
            if parts:
                raise MXNetError('invalid RecordIO file %s: it ends inside a record' % uri)
            return None
        if len(head) != 8:
            raise MXNetError('invalid RecordIO file %s: truncated chunk header' % uri)
        magic, lrec = _CHUNK.unpack(head)
        if magic != _MAGIC:
            raise MXNetError('invalid RecordIO file %s: bad magic 0x%08x at byte %d'
                             % (uri, magic, f.tell() - 8))
        cflag, length = lrec >> 29, lrec & _LEN_MASK
        padded = (length + 3) & ~3
        data = f.read(padded)
        if len(data) != padded:
            raise MXNetError('invalid RecordIO file %s: a record of %d bytes is truncated'
                             % (uri, length))
        parts.append(data[:length] if padded != length else data)
        if cflag in (0, 3):
            return _MAGIC_BYTES.join(parts) if len(parts) > 1 else parts[0]


class MXRecordIO:
    """Reads or writes a RecordIO file record by record.

    Parameters
    ----------
    uri : str
        Path of the record file.
    flag : str
        'w' to write (the file is truncated), 'r' to read.
    """

    def __init__(self, uri, flag):
        self.uri = os.fspath(uri)
        self.flag = flag
        self.handle = None
        self.pid = None
        self.is_open = False
        self.writable = flag == 'w'
        self.open()

    def open(self):
        """Opens the file (reading starts at its beginning; writing truncates it)."""
        if self.flag == 'w':
            mode = 'wb'
        elif self.flag == 'r':
            mode = 'rb'
        else:
            raise ValueError('Invalid flag %s' % self.flag)
        try:
            self.handle = open(self.uri, mode)
        except OSError as e:
            raise MXNetError('RecordIO: cannot open %s for %s: %s'
                             % (self.uri, 'writing' if mode == 'wb' else 'reading',
                                e.strerror)) from e
        self.writable = self.flag == 'w'
        self.pid = current_process().pid
        self.is_open = True

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown: nothing left to report to
            pass

    def __getstate__(self):
        # A file object cannot be pickled: the state keeps the path and whether it was open,
        # and unpickling opens it again (a reader starts over at the first record).
        is_open = self.is_open
        self.close()
        d = dict(self.__dict__)
        d['is_open'] = is_open
        del d['handle']
        return d

    def __setstate__(self, d):
        self.__dict__ = d
        is_open = d['is_open']
        self.is_open = False
        self.handle = None
        if is_open:
            self.open()

    def _check_pid(self, allow_reset=False):
        # A file position shared with a forked child would interleave the two processes' reads.
        if self.pid != current_process().pid:
            if allow_reset:
                self.reset()
            else:
                raise RuntimeError('Forbidden operation in multiple processes')

    def close(self):
        """Closes the file (a writer's records are flushed to disk)."""
        if not self.is_open:
            return
        self.handle.close()
        self.handle = None
        self.is_open = False
        self.pid = None

    def reset(self):
        """Back to the first record (for a writer: truncates the file to empty)."""
        self.close()
        self.open()

    def write(self, buf):
        """Appends one record holding the bytes buf."""
        assert self.writable
        self._check_pid(allow_reset=False)
        if isinstance(buf, str):
            raise TypeError('MXRecordIO.write takes bytes, not str')
        self.handle.write(_encode_record(bytes(buf)))

    def read(self):
        """The next record's bytes, or None after the last one."""
        assert not self.writable
        self._check_pid(allow_reset=False)
        return _read_record(self.handle, self.uri)


class MXIndexedRecordIO(MXRecordIO):
    """A RecordIO file with an index file for random access by key.

    Parameters
    ----------
    idx_path : str
        Path of the index file (text: `key\\toffset` a line).
    uri : str
        Path of the record file.
    flag : str
        'w' to write, 'r' to read.
    key_type : type
        Type of the keys (int by default).
    """

    def __init__(self, idx_path, uri, flag, key_type=int):
        self.idx_path = os.fspath(idx_path)
        self.idx = {}
        self.keys = []
        self.key_type = key_type
        self.fidx = None
        super().__init__(uri, flag)

    def open(self):
        super().open()
        self.idx = {}
        self.keys = []
        try:
            self.fidx = open(self.idx_path, self.flag)
        except OSError as e:
            super().close()
            raise MXNetError('RecordIO: cannot open index file %s: %s'
                             % (self.idx_path, e.strerror)) from e
        if not self.writable:
            for n, line in enumerate(iter(self.fidx.readline, '')):
                fields = line.strip().split('\t')
                if fields == ['']:
                    continue
                try:
                    key, pos = self.key_type(fields[0]), int(fields[1])
                except (ValueError, IndexError) as e:
                    raise MXNetError('invalid index file %s, line %d: %r (expected key<TAB>'
                                     'offset)' % (self.idx_path, n + 1, line)) from e
                self.idx[key] = pos
                self.keys.append(key)

    def close(self):
        if not self.is_open:
            return
        super().close()
        self.fidx.close()

    def __getstate__(self):
        d = super().__getstate__()
        d['fidx'] = None
        return d

    def seek(self, idx):
        """Moves the reader to the record of key idx."""
        assert not self.writable
        self._check_pid(allow_reset=True)
        self.handle.seek(self.idx[idx])

    def tell(self):
        """The writer's current byte position (where the next record starts)."""
        assert self.writable
        return self.handle.tell()

    def read_idx(self, idx):
        """The bytes of the record with key idx."""
        self.seek(idx)
        return self.read()

    def write_idx(self, idx, buf):
        """Appends a record under key idx and indexes it."""
        key = self.key_type(idx)
        pos = self.tell()
        self.write(buf)
        self.fidx.write('%s\t%d\n' % (str(key), pos))
        self.idx[key] = pos
        self.keys.append(key)


IRHeader = namedtuple('HEADER', ['flag', 'label', 'id', 'id2'])
IRHeader.__doc__ = """Header of an image record: flag (the label count when the label is an
array, else free), label (a float or an array of floats), id and id2 (the record's id, id2 the
high bits, usually 0)."""

_IR_FORMAT = 'IfQQ'
_IR_SIZE = struct.calcsize(_IR_FORMAT)


def pack(header, s):
    """Packs an IRHeader and the bytes s into one record's bytes. An array label is stored
    after the header as float32 values, with flag set to their count."""
    header = IRHeader(*header)
    if isinstance(header.label, numbers.Number):
        header = header._replace(flag=0)
    else:
        label = np.asarray(header.label, dtype=np.float32)
        header = header._replace(flag=label.size, label=0)
        s = label.tobytes() + s
    return struct.pack(_IR_FORMAT, *header) + s


def unpack(s):
    """Splits a record's bytes into (IRHeader, payload bytes)."""
    if len(s) < _IR_SIZE:
        raise MXNetError('recordio.unpack: a record holds at least the %d-byte header, got %d'
                         ' bytes' % (_IR_SIZE, len(s)))
    header = IRHeader(*struct.unpack(_IR_FORMAT, s[:_IR_SIZE]))
    s = s[_IR_SIZE:]
    if header.flag > 0:
        if len(s) < 4 * header.flag:
            raise MXNetError('recordio.unpack: the header announces %d labels but the record '
                             'holds %d bytes after it' % (header.flag, len(s)))
        header = header._replace(label=np.frombuffer(s, np.float32, header.flag))
        s = s[header.flag * 4:]
    return header, s


def unpack_img(s, iscolor=-1):
    """Unpacks a record into (IRHeader, image as a NumPy uint8 array decoded by OpenCV, BGR)."""
    cv2 = _cv2()
    header, s = unpack(s)
    img = cv2.imdecode(np.frombuffer(s, dtype=np.uint8), iscolor)
    if img is None:
        raise MXNetError('recordio.unpack_img: the record does not hold an image OpenCV can '
                         'decode')
    return header, img


def pack_img(header, img, quality=95, img_fmt='.jpg'):
    """Encodes img (a NumPy array, BGR as OpenCV uses) with OpenCV and packs it with header.
    quality is the JPEG quality (1-100) or the PNG compression level (0-9)."""
    cv2 = _cv2()
    params = None
    if img_fmt.upper() in ('.JPG', '.JPEG'):
        params = [cv2.IMWRITE_JPEG_QUALITY, quality]
    elif img_fmt.upper() == '.PNG':
        params = [cv2.IMWRITE_PNG_COMPRESSION, quality]
    ret, buf = cv2.imencode(img_fmt, np.asarray(img), params)
    if not ret:
        raise MXNetError('recordio.pack_img: OpenCV could not encode the image as %s' % img_fmt)
    return pack(header, buf.tobytes())
