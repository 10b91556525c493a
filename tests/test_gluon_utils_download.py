"""gluon.utils.download / check_sha1 against a stand-in `requests` module: never the network."""
import hashlib
import os
import sys
import types

import pytest

from hybridgluon.gluon import utils

CONTENT = b'hybridgluon download test\n' * 50


class _Response:
    def __init__(self, status, content):
        self.status_code = status
        self._content = content

    def iter_content(self, chunk_size):
        for i in range(0, len(self._content), chunk_size):
            yield self._content[i:i + chunk_size]


@pytest.fixture
def fake_requests(monkeypatch):
    calls = []
    responses = []

    def get(url, stream=False, verify=True):
        calls.append((url, verify))
        r = responses.pop(0) if responses else _Response(200, CONTENT)
        if isinstance(r, Exception):
            raise r
        return r
    module = types.SimpleNamespace(get=get)
    monkeypatch.setitem(sys.modules, 'requests', module)
    module.calls, module.responses = calls, responses
    return module


def test_check_sha1(tmp_path):
    f = tmp_path / 'a.bin'
    f.write_bytes(CONTENT)
    digest = hashlib.sha1(CONTENT).hexdigest()
    assert utils.check_sha1(str(f), digest)
    assert not utils.check_sha1(str(f), digest[:8])  # the whole digest, as MXNet compares
    assert not utils.check_sha1(str(f), '0' * 40)


def test_download_to_folder_file_and_cache(tmp_path, fake_requests):
    out = utils.download('https://example.invalid/x/model.params', path=str(tmp_path))
    assert out == os.path.join(str(tmp_path), 'model.params')
    assert open(out, 'rb').read() == CONTENT
    assert os.listdir(str(tmp_path)) == ['model.params']  # no temporary file left
    # present with a matching hash: nothing fetched
    digest = hashlib.sha1(CONTENT).hexdigest()
    utils.download('https://example.invalid/x/model.params', path=out, sha1_hash=digest)
    assert len(fake_requests.calls) == 1
    # a wrong hash on disk: fetched again; overwrite: fetched again
    open(out, 'wb').write(b'stale')
    utils.download('https://example.invalid/x/model.params', path=out, sha1_hash=digest)
    assert open(out, 'rb').read() == CONTENT and len(fake_requests.calls) == 2
    # overwrite fetches, but (as in MXNet) keeps an existing file that needs no replacing
    with pytest.warns(UserWarning, match='exists in file system'):
        utils.download('https://example.invalid/x/model.params', path=out, overwrite=True)
    assert len(fake_requests.calls) == 3 and os.listdir(str(tmp_path)) == ['model.params']
    sub = tmp_path / 'new' / 'dir' / 'f.txt'
    utils.download('https://example.invalid/f.txt', path=str(sub))
    assert sub.read_bytes() == CONTENT


def test_download_retries_then_raises(tmp_path, fake_requests):
    fake_requests.responses.extend([ConnectionError('down')] * 3)
    with pytest.raises(ConnectionError):
        utils.download('https://example.invalid/a', path=str(tmp_path / 'a'), retries=3)
    assert len(fake_requests.calls) == 3 and not (tmp_path / 'a').exists()
    fake_requests.responses.extend([_Response(404, b''), _Response(200, CONTENT)])
    utils.download('https://example.invalid/a', path=str(tmp_path / 'a'), retries=2)
    assert (tmp_path / 'a').read_bytes() == CONTENT


def test_download_hash_mismatch_and_bad_arguments(tmp_path, fake_requests):
    with pytest.raises(UserWarning, match='content hash does not match'):
        utils.download('https://example.invalid/b', path=str(tmp_path / 'b'),
                       sha1_hash='0' * 40, retries=1)
    with pytest.raises(AssertionError, match='file-name'):
        utils.download('https://example.invalid/dir/')
    with pytest.raises(AssertionError, match='retries'):
        utils.download('https://example.invalid/c', path=str(tmp_path / 'c'), retries=-1)


def test_download_without_ssl_verification_warns(tmp_path, fake_requests):
    with pytest.warns(UserWarning, match='^Unverified HTTPS request'):
        utils.download('https://example.invalid/d', path=str(tmp_path / 'd'), verify_ssl=False)
    assert fake_requests.calls[-1][1] is False


def test_repo_url(monkeypatch):
    monkeypatch.setenv('MXNET_GLUON_REPO', 'https://mirror.invalid/repo')
    assert utils._get_repo_file_url('gluon/models', 'a.zip') == \
        'https://mirror.invalid/repo/gluon/models/a.zip'
