"""The ImageRecordIter cases that gen_recordio.py runs through real MXNet 1.9.1 and
tests/test_image_record_iter.py replays here (both import this table)."""
import os

# name -> (iterator class, keyword arguments)
CASES = {
    'plain_u8': ('ImageRecordUInt8Iter', dict(data_shape=(3, 32, 32), batch_size=12)),
    'resize_u8': ('ImageRecordUInt8Iter', dict(data_shape=(3, 40, 48), batch_size=12,
                                               resize=56)),
    'gray_u8': ('ImageRecordUInt8Iter', dict(data_shape=(1, 30, 30), batch_size=12)),
    'norm_f32': ('ImageRecordIter', dict(data_shape=(3, 24, 24), batch_size=4, mean_r=123.68,
                                         mean_g=116.28, mean_b=103.53, std_r=58.395,
                                         std_g=57.12, std_b=57.375, scale=0.5)),
    'mirror_f32': ('ImageRecordIter', dict(data_shape=(3, 24, 24), batch_size=4,
                                           mirror=True)),
    'int8': ('ImageRecordInt8Iter', dict(data_shape=(3, 16, 16), batch_size=4)),
    'int8_mean': ('ImageRecordInt8Iter', dict(data_shape=(3, 16, 16), batch_size=4,
                                              mean_r=140.6, mean_g=-20, std_g=2, scale=0.5)),
    'dtype_int8': ('ImageRecordIter', dict(data_shape=(3, 16, 16), batch_size=4, dtype='int8',
                                           mean_r=250.3, mean_b=99.5)),
    'dtype_u8': ('ImageRecordIter', dict(data_shape=(3, 16, 16), batch_size=4, dtype='uint8',
                                         mean_r=100, std_r=2)),
    'labels3': ('ImageRecordIter', dict(data_shape=(3, 16, 16), batch_size=5, label_width=3,
                                        path_imgidx=True, rec='labels3')),
    'parts': ('ImageRecordIter', dict(data_shape=(3, 16, 16), batch_size=2, num_parts=3,
                                      part_index=1)),
    'imglist2': ('ImageRecordIter', dict(data_shape=(3, 8, 8), batch_size=5, label_width=2,
                                         path_imglist='images.lst')),
    'aff_rot_scale': ('ImageRecordUInt8Iter', dict(data_shape=(3, 32, 32), batch_size=12,
                                                   rotate=30, min_random_scale=0.8,
                                                   max_random_scale=0.8, fill_value=7)),
    'aff_scale': ('ImageRecordUInt8Iter', dict(data_shape=(3, 32, 32), batch_size=12,
                                               min_random_scale=1.3, max_random_scale=1.3,
                                               inter_method=3)),
    'aff_pad_rot': ('ImageRecordUInt8Iter', dict(data_shape=(3, 32, 32), batch_size=12, pad=3,
                                                 rotate=45)),
    'aff_minsize': ('ImageRecordUInt8Iter', dict(data_shape=(3, 32, 32), batch_size=12,
                                                 min_img_size=70, max_img_size=80)),
    'pad': ('ImageRecordUInt8Iter', dict(data_shape=(3, 32, 32), batch_size=12, pad=4,
                                         fill_value=9)),
    'inter9': ('ImageRecordUInt8Iter', dict(data_shape=(3, 32, 32), batch_size=12, resize=80,
                                            inter_method=9)),
    'imglist1': ('ImageRecordIter', dict(data_shape=(3, 8, 8), batch_size=5,
                                         path_imglist='images.lst')),
}


def iterator_kwargs(kw, ref):
    """A case's keyword arguments with its files resolved under the fixture folder ref: `rec`
    names the .rec (default images), `path_imgidx=True` asks for its .idx, `path_imglist` is a
    file name there."""
    kw = dict(kw)
    rec = kw.pop('rec', 'images')
    if 'path_imglist' in kw:
        kw['path_imglist'] = os.path.join(ref, kw['path_imglist'])
    if kw.pop('path_imgidx', False):
        kw['path_imgidx'] = os.path.join(ref, rec + '.idx')
    kw['path_imgrec'] = os.path.join(ref, rec + '.rec')
    return kw
