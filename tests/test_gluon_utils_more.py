"""gluon.utils as MXNet 1.9.1 has it: replace_file, check_sha1 on the whole digest,
shape_is_known under both shape semantics, and download's errors with no network (a stand-in
`requests`, never the network)."""
import hashlib
import sys
import types

import pytest

import hybridgluon as mx
from hybridgluon.gluon import utils


def test_replace_file(tmp_path):
    src, dst = tmp_path / 'src', tmp_path / 'dst'
    src.write_bytes(b'new')
    dst.write_bytes(b'old')
    utils.replace_file(str(src), str(dst))
    assert dst.read_bytes() == b'new' and not src.exists()
    src.write_bytes(b'x')
    with pytest.raises(OSError, match='Please retry the download'):
        utils.replace_file(str(src), str(tmp_path / 'no' / 'such' / 'dir'))
    assert not src.exists()  # the temporary file does not stay behind
    assert 'replace_file' in utils.__all__


def test_check_sha1_whole_digest(tmp_path):
    f = tmp_path / 'f'
    f.write_bytes(b'abc' * 1000)
    digest = hashlib.sha1(b'abc' * 1000).hexdigest()
    assert utils.check_sha1(str(f), digest)
    assert not utils.check_sha1(str(f), digest[:10])
    assert not utils.check_sha1(str(f), digest.upper())


@pytest.mark.parametrize('shape,legacy,numpy', [
    (None, False, False), ((), False, True), ((2, 3), True, True), ((2, 0), False, True),
    ((0,), False, True), ((2, -1), False, False), ((1, 1, 1), True, True)])
def test_shape_is_known(shape, legacy, numpy):
    assert utils.shape_is_known(shape) is legacy
    with mx.util.np_shape(True):
        assert utils.shape_is_known(shape) is numpy
    with pytest.raises(ValueError, match='>= -1'):
        utils.shape_is_known((2, -2))


class _NoNetwork(OSError):
    """What a requests-like library raises with no network."""


@pytest.fixture
def offline(monkeypatch):
    calls = []

    def get(url, stream=False, verify=True):
        calls.append(url)
        raise _NoNetwork('Name or service not known')
    monkeypatch.setitem(sys.modules, 'requests', types.SimpleNamespace(get=get))
    return calls


def test_download_without_network_names_the_url(tmp_path, offline, capsys):
    url = 'https://data.example.invalid/set/train.rec'
    with pytest.raises(mx.MXNetError, match=r'download of https://data\.example\.invalid/set/'
                       r'train\.rec .*after 2 attempts') as err:
        utils.download(url, path=str(tmp_path), retries=2)
    # still what MXNet would have raised, for code that catches that
    assert isinstance(err.value, _NoNetwork)
    assert isinstance(err.value.__cause__, _NoNetwork)
    assert offline == [url, url]
    assert not list(tmp_path.iterdir())  # no partial file


def test_download_uses_existing_file_without_network(tmp_path, offline):
    f = tmp_path / 'train.rec'
    f.write_bytes(b'data')
    url = 'https://data.example.invalid/train.rec'
    assert utils.download(url, path=str(tmp_path)) == str(f)
    good = hashlib.sha1(b'data').hexdigest()
    assert utils.download(url, path=str(f), sha1_hash=good) == str(f)
    assert offline == []
    with pytest.raises(mx.MXNetError, match='train.rec'):  # wrong hash: fetches again
        utils.download(url, path=str(f), sha1_hash='0' * 40, retries=1)
    with pytest.raises(mx.MXNetError, match='train.rec'):  # overwrite: fetches again
        utils.download(url, path=str(f), overwrite=True, retries=0)
    assert len(offline) == 2 and f.read_bytes() == b'data'


def test_download_without_requests(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, 'requests', None)
    with pytest.raises(mx.MXNetError, match='requests') as err:
        utils.download('https://example.invalid/x.bin', path=str(tmp_path))
    assert isinstance(err.value, ImportError)
