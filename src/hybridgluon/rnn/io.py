"""Data helpers of the legacy `mx.rnn` package: `encode_sentences` (words to integer ids) and
`BucketSentenceIter` (batches of sentences padded to the nearest bucket length, for
BucketingModule)."""
import bisect
import random

import numpy as np

from .. import ndarray

from ..io import DataIter, DataBatch, DataDesc

__all__ = ['encode_sentences', 'BucketSentenceIter']


def encode_sentences(sentences, vocab=None, invalid_label=-1, invalid_key='\n', start_label=0,
                     unknown_token=None):
    """Encodes lists of words as lists of integer ids.

    Parameters
    ----------
    sentences : list of list of str
    vocab : dict of str to int, optional
        An existing vocabulary; None builds one (with `invalid_key` -> `invalid_label`).
    invalid_label : int, default -1
        The id reserved for padding: new ids skip it.
    invalid_key : str, default '\\n'
    start_label : int, default 0
        The first id given to a new word.
    unknown_token : str, optional
        With a given `vocab`, words not in it map to this token (added with a new id);
        without it such a word is an error.

    Returns
    -------
    (encoded sentences, vocab)
    """
    idx = start_label
    new_vocab = vocab is None
    if new_vocab:
        vocab = {invalid_key: invalid_label}
    res = []
    for sent in sentences:
        coded = []
        for word in sent:
            if word not in vocab:
                if not (new_vocab or unknown_token):
                    raise AssertionError('Unknown token %s' % word)
                if idx == invalid_label:
                    idx += 1
                if unknown_token:
                    word = unknown_token
                vocab[word] = idx
                idx += 1
            coded.append(vocab[word])
        res.append(coded)
    return res, vocab


class BucketSentenceIter(DataIter):
    """Iterates over sentences in batches, each batch from one bucket: sentences are
    padded with `invalid_label` to the smallest bucket length that holds them (longer
    ones are dropped), and the label is the sentence shifted left by one.

    Parameters
    ----------
    sentences : list of list of int
    batch_size : int
    buckets : list of int, optional
        Bucket lengths; by default every length that at least `batch_size` sentences
        have.
    invalid_label : int, default -1
    data_name, label_name : str
    dtype : str, default 'float32'
    layout : {'NT', 'TN'}, default 'NT'
    """

    def __init__(self, sentences, batch_size, buckets=None, invalid_label=-1,
                 data_name='data', label_name='softmax_label', dtype='float32',
                 layout='NT'):
        super().__init__()
        if not buckets:
            counts = np.bincount([len(s) for s in sentences])
            buckets = [n for n, c in enumerate(counts) if c >= batch_size]
        buckets = sorted(buckets)
        per_bucket = [[] for _ in buckets]
        used = [False] * len(buckets)
        ndiscard = 0
        for sent in sentences:
            b = bisect.bisect_left(buckets, len(sent))
            if b == len(buckets):
                ndiscard += 1
                continue
            used[b] = True
            row = np.full((buckets[b],), invalid_label, dtype=dtype)
            row[:len(sent)] = sent
            per_bucket[b].append(row)
        self.buckets = [n for n, u in zip(buckets, used) if u]
        self.data = [np.asarray(rows, dtype=dtype) for rows in per_bucket if rows]
        print('WARNING: discarded %d sentences longer than the largest bucket.' % ndiscard)
        self.batch_size = batch_size
        self.data_name = data_name
        self.label_name = label_name
        self.dtype = dtype
        self.invalid_label = invalid_label
        self.nddata = []
        self.ndlabel = []
        self.major_axis = layout.find('N')
        self.layout = layout
        self.default_bucket_key = max(self.buckets)
        if self.major_axis == 0:
            shape = (batch_size, self.default_bucket_key)
        elif self.major_axis == 1:
            shape = (self.default_bucket_key, batch_size)
        else:
            raise ValueError('Invalid layout %s: Must by NT (batch major) or TN (time '
                             'major)' % layout)
        self.provide_data = [DataDesc(name=data_name, shape=shape, layout=layout)]
        self.provide_label = [DataDesc(name=label_name, shape=shape, layout=layout)]
        self.idx = [(i, j) for i, rows in enumerate(self.data)
                    for j in range(0, len(rows) - batch_size + 1, batch_size)]
        self.curr_idx = 0
        self.reset()

    def reset(self):
        """Shuffles the batches and the sentences within each bucket."""
        self.curr_idx = 0
        random.shuffle(self.idx)
        for rows in self.data:
            np.random.shuffle(rows)
        self.nddata, self.ndlabel = [], []
        for rows in self.data:
            label = np.empty_like(rows)
            label[:, :-1] = rows[:, 1:]
            label[:, -1] = self.invalid_label
            self.nddata.append(ndarray.array(rows, dtype=self.dtype))
            self.ndlabel.append(ndarray.array(label, dtype=self.dtype))

    def next(self):
        """The next DataBatch (its bucket_key is the bucket length)."""
        if self.curr_idx == len(self.idx):
            raise StopIteration
        i, j = self.idx[self.curr_idx]
        self.curr_idx += 1
        data = self.nddata[i][j:j + self.batch_size]
        label = self.ndlabel[i][j:j + self.batch_size]
        if self.major_axis == 1:
            data, label = data.T, label.T
        return DataBatch([data], [label], pad=0, bucket_key=self.buckets[i],
                         provide_data=[DataDesc(name=self.data_name, shape=data.shape,
                                                layout=self.layout)],
                         provide_label=[DataDesc(name=self.label_name, shape=label.shape,
                                                 layout=self.layout)])
