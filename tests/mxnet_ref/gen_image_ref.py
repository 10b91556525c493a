"""mx.image fixtures: what real MXNet 1.9.1's image functions and augmenters give on fixed inputs
with fixed seeds, written to image.npz, which tests/test_image_module.py replays on hybridgluon.

    /work/mxnet-venv/bin/python tests/mxnet_ref/gen_image_ref.py [--out FILE]

Randomness in mx.image comes from Python's `random` and `np.random`, which behave the same in
both libraries, so seeding both before a call must reproduce MXNet's draws. Per case <c>:
'c_out' the output image (or array), 'c_box' crop coordinates where the function returns them,
'c_label' a detection label after the augmenter. 'src_f' (float32 HWC), 'src_u' (uint8 HWC) and
'label' (a detection label) are the inputs; 'meta' (JSON as uint8) holds the dumps() strings.
"""
import argparse
import json
import os
import random

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
EIGVAL = np.array([55.46, 4.794, 1.148])
EIGVEC = np.array([[-0.5675, 0.7192, 0.4009], [-0.5808, -0.0045, -0.8140],
                   [-0.5836, -0.6948, 0.4203]])


def seed(k):
    random.seed(k)
    np.random.seed(k)


def inputs():
    rng = np.random.RandomState(1234)
    src_f = (rng.rand(12, 16, 3) * 255).astype(np.float32)
    # A smooth uint8 image, so that resampling differences between OpenCV versions stay small.
    yy, xx = np.mgrid[0:41, 0:57]
    src_u = np.stack([(xx * 4 + yy) % 256, (yy * 6) % 256, (xx * yy) % 256], axis=2)
    label = np.array([[1, 0.1, 0.2, 0.5, 0.6, 0.0], [3, 0.4, 0.3, 0.9, 0.95, 1.0],
                      [0, 0.05, 0.5, 0.3, 0.9, 0.0]])
    return src_f, src_u.astype(np.uint8), label


def augmenter_cases(mx, src_f):
    img = mx.image
    return {
        'brightness': img.BrightnessJitterAug(0.3),
        'contrast': img.ContrastJitterAug(0.3),
        'saturation': img.SaturationJitterAug(0.3),
        'hue': img.HueJitterAug(0.3),
        'colorjitter': img.ColorJitterAug(0.2, 0.3, 0.4),
        'gray': img.RandomGrayAug(1.0),
        'lighting': img.LightingAug(0.1, EIGVAL, EIGVEC),
        'flip': img.HorizontalFlipAug(1.0),
        'normalize': img.ColorNormalizeAug(mx.nd.array([120.0, 110.0, 100.0]),
                                           np.array([50.0, 60.0, 70.0])),
        'cast': img.CastAug('float64'),
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--out', default=os.path.join(HERE, 'image.npz'))
    args = parser.parse_args()
    import mxnet as mx

    src_f, src_u, label = inputs()
    out = {'src_f': src_f, 'src_u': src_u, 'label': label}
    meta = {}
    for k, (name, aug) in enumerate(sorted(augmenter_cases(mx, src_f).items())):
        seed(100 + k)
        out[name + '_out'] = aug(mx.nd.array(src_f)).asnumpy()
        meta[name] = aug.dumps() if not isinstance(aug, mx.image.RandomOrderAug) else None
    x = mx.nd.array(src_u, dtype='uint8')
    for interp in range(5):
        out['resize%d_out' % interp] = mx.image.imresize(x, 23, 17, interp=interp).asnumpy()
        out['resize_up%d_out' % interp] = mx.image.imresize(x, 80, 61, interp=interp).asnumpy()
    for btype in range(5):
        out['border%d_out' % btype] = mx.image.copyMakeBorder(
            x, 2, 3, 4, 5, type=btype, values=[9, 19, 29]).asnumpy()
    out['resize_short_out'] = mx.image.resize_short(x, 20, interp=1).asnumpy()
    seed(7)
    res, box = mx.image.random_crop(x, (20, 15))
    out['random_crop_out'], out['random_crop_box'] = res.asnumpy(), np.array(box)
    res, box = mx.image.center_crop(x, (30, 20))
    out['center_crop_out'], out['center_crop_box'] = res.asnumpy(), np.array(box)
    boxes = []
    for k in range(20):
        seed(200 + k)
        _, box = mx.image.random_size_crop(x, (16, 16), 0.2, (0.5, 2.0), interp=1)
        boxes.append(box)
    out['random_size_crop_box'] = np.array(boxes)
    meta['create_augmenter'] = [a.dumps() for a in mx.image.CreateAugmenter(
        (3, 24, 24), resize=30, rand_crop=True, rand_resize=True, rand_mirror=True, mean=True,
        std=True, brightness=0.1, contrast=0.1, saturation=0.1, hue=0.1, pca_noise=0.1,
        rand_gray=0.2, inter_method=1) if not isinstance(a, mx.image.RandomOrderAug)]

    chw = mx.nd.array(src_f.transpose(2, 0, 1) / 255.0)
    for name, kw in [('rot', {}), ('rot_in', {'zoom_in': True}), ('rot_out', {'zoom_out': True})]:
        out[name + '_out'] = mx.image.imrotate(chw, 17, **kw).asnumpy()
    seed(11)
    out['random_rotate_out'] = mx.image.random_rotate(mx.nd.stack(chw, chw * 0.5),
                                                      (-30, 30)).asnumpy()

    det = mx.image
    det_cases = {
        'det_flip': det.DetHorizontalFlipAug(1.0),
        'det_crop': det.DetRandomCropAug(min_object_covered=0.3, area_range=(0.2, 0.9)),
        'det_pad': det.DetRandomPadAug(area_range=(1.2, 3.0), pad_val=(10, 20, 30)),
        'det_multi': det.CreateMultiRandCropAugmenter(min_object_covered=[0.1, 0.5],
                                                      area_range=[(0.1, 1.0)], skip_prob=0.2),
    }
    for k, (name, aug) in enumerate(sorted(det_cases.items())):
        for rep in range(3):
            seed(300 + 10 * k + rep)
            img, lab = aug(mx.nd.array(src_u, dtype='uint8'), label.copy())
            out['%s%d_out' % (name, rep)] = img.asnumpy()
            out['%s%d_label' % (name, rep)] = np.asarray(lab)
    meta['create_det_augmenter'] = [
        a.dumps() for a in det.CreateDetAugmenter((3, 30, 30), resize=40, rand_crop=0.5,
                                                  rand_pad=0.5, rand_gray=0.1, rand_mirror=True,
                                                  mean=True, std=True, hue=0.1, pca_noise=0.1,
                                                  inter_method=1)]
    out['meta'] = np.frombuffer(json.dumps(meta).encode('utf-8'), dtype=np.uint8)
    np.savez_compressed(args.out, **out)
    print('wrote', args.out, len(out), 'arrays')


if __name__ == '__main__':
    main()
