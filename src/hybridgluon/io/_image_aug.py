"""The geometric and colour augmentations of MXNet's ImageRecordIter (its default augmenter),
applied per image on the iterator's worker threads with OpenCV (whose calls release the GIL):

  resize     shorter side to `resize` (inter_method);
  affine     one cv2.warpAffine combining rotation (rotate / max_rotate_angle), shear
             (max_shear_ratio), scale (min/max_random_scale) and aspect ratio (max_aspect_ratio),
             to a canvas of scale x the image clipped to [min_img_size, max_img_size], the
             uncovered area filled with fill_value; used only when one of them is set;
  pad        a fill_value border of `pad` pixels;
  colour     HLS jitter: integer shifts in [-random_h, random_h] (hue, clipped to 0..180),
             [-random_l, random_l] and [-random_s, random_s] (clipped to 0..255);
  lighting   (float32 output only, applied by the C kernel through hg_image_norm) contrast
             1 + U(-1, 1) * max_random_contrast multiplies scale, and illumination
             U(-1, 1) * max_random_illumination * scale / std[c] is added.

The matrix and canvas follow MXNet 1.9.1's augmenter, so fixed settings (rotate=30, a fixed
scale, pad) give MXNet's images up to OpenCV's interpolation rounding. Random draws come from the
iterator's generator, one row of uniforms per image (`U_*` columns), so they are reproducible
with `seed_aug` but are not MXNet's own random sequence.
"""
import math

import numpy as np

from ..base import MXNetError

# Columns of the per-image uniform draws.
(U_CROP_Y, U_CROP_X, U_MIRROR, U_SHEAR, U_ANGLE, U_SCALE, U_RATIO, U_H, U_S, U_L, U_INTERP,
 U_CONTRAST, U_ILLUM) = range(13)
N_UNIFORMS = 13

_AFFINE_DEFAULTS = {'max_rotate_angle': 0, 'rotate': -1, 'max_shear_ratio': 0.0,
                    'max_aspect_ratio': 0.0, 'max_random_scale': 1.0, 'min_random_scale': 1.0,
                    'max_img_size': 1e10, 'min_img_size': 0.0}


class Augmenter:
    """The resize/affine/pad/colour settings of one iterator (MXNet's parameter names)."""

    def __init__(self, cv2, kw):
        self.cv2 = cv2
        self.resize = int(kw.get('resize', -1))
        self.inter_method = int(kw.get('inter_method', 1))
        if self.inter_method not in (0, 1, 2, 3, 4, 9, 10):
            raise MXNetError('ImageRecordIter: invalid inter_method %d: valid values are '
                             '0, 1, 2, 3, 4, 9, 10' % self.inter_method)
        self.fill_value = int(kw.get('fill_value', 255))
        self.pad = int(kw.get('pad', 0))
        p = {k: kw.get(k, v) for k, v in _AFFINE_DEFAULTS.items()}
        self.max_rotate_angle = int(p['max_rotate_angle'])
        self.rotate = int(p['rotate'])
        self.max_shear_ratio = float(p['max_shear_ratio'])
        self.max_aspect_ratio = float(p['max_aspect_ratio'])
        self.max_random_scale = float(p['max_random_scale'])
        self.min_random_scale = float(p['min_random_scale'])
        self.max_img_size = float(p['max_img_size'])
        self.min_img_size = float(p['min_img_size'])
        self.affine = any(p[k] != v for k, v in _AFFINE_DEFAULTS.items()) or self.rotate > 0
        self.hsl = (int(kw.get('random_h', 0)), int(kw.get('random_s', 0)),
                    int(kw.get('random_l', 0)))
        if self.pad < 0 or min(self.hsl) < 0 or self.max_rotate_angle < 0:
            raise MXNetError('ImageRecordIter: pad, random_h/s/l and max_rotate_angle must not '
                             'be negative')

    def _interp(self, src_w, src_h, dst_w, dst_h, u):
        """OpenCV interpolation flag for inter_method (9: by direction, 10: random)."""
        m = self.inter_method
        if m == 9:
            if dst_w > src_w and dst_h > src_h:
                return self.cv2.INTER_CUBIC
            if dst_w < src_w and dst_h < src_h:
                return self.cv2.INTER_AREA
            return self.cv2.INTER_LINEAR
        if m == 10:
            return min(int(u[U_INTERP] * 5), 4)
        return m

    def geometric(self, img, u, plain=False):
        """Resize, affine warp and pad of an (H, W, C) uint8 image."""
        cv2 = self.cv2
        if self.resize > 0:
            rows, cols = img.shape[:2]
            if rows > cols:
                size = (self.resize, self.resize * rows // cols)
            else:
                size = (self.resize * cols // rows, self.resize)
            img = cv2.resize(img, size, interpolation=self._interp(cols, rows, *size, u))
        if self.affine and not plain:
            img = self._warp(img, u)
        if self.pad > 0 and not plain:
            f = self.fill_value
            img = cv2.copyMakeBorder(img, self.pad, self.pad, self.pad, self.pad,
                                     cv2.BORDER_CONSTANT, value=(f, f, f, f))
        return img if img.ndim == 3 else img[:, :, None]

    def _warp(self, img, u):
        rows, cols = img.shape[:2]
        shear = u[U_SHEAR] * self.max_shear_ratio * 2 - self.max_shear_ratio
        n_angles = 2 * self.max_rotate_angle + 1
        angle = min(int(u[U_ANGLE] * n_angles), n_angles - 1) - self.max_rotate_angle
        if self.rotate > 0:
            angle = self.rotate
        a, b = math.cos(angle / 180.0 * math.pi), math.sin(angle / 180.0 * math.pi)
        scale = u[U_SCALE] * (self.max_random_scale - self.min_random_scale) + \
            self.min_random_scale
        ratio = u[U_RATIO] * self.max_aspect_ratio * 2 - self.max_aspect_ratio + 1
        hs = 2 * scale / (1 + ratio)
        ws = ratio * hs
        new_w = max(self.min_img_size, min(self.max_img_size, scale * cols))
        new_h = max(self.min_img_size, min(self.max_img_size, scale * rows))
        m = np.empty((2, 3), np.float32)
        m[0, 0] = hs * a - shear * b * ws
        m[1, 0] = -b * ws
        m[0, 1] = hs * b + shear * a * ws
        m[1, 1] = a * ws
        m[0, 2] = (new_w - (m[0, 0] * cols + m[0, 1] * rows)) / 2
        m[1, 2] = (new_h - (m[1, 0] * cols + m[1, 1] * rows)) / 2
        size = (int(new_w), int(new_h))
        if min(size) < 1:
            raise MXNetError('ImageRecordIter: the affine augmentation makes a %dx%d image'
                             % (size[1], size[0]))
        f = self.fill_value
        return self.cv2.warpAffine(img, m, size, flags=self._interp(cols, rows, *size, u),
                                   borderMode=self.cv2.BORDER_CONSTANT,
                                   borderValue=(f, f, f, f))

    def colour(self, img, u):
        """HLS jitter of a 3-channel BGR uint8 image (others pass through)."""
        if not any(self.hsl) or img.shape[2] != 3:
            return img
        cv2 = self.cv2
        rh, rs, rl = self.hsl
        shifts = (int(u[U_H] * rh * 2 - rh), int(u[U_L] * rl * 2 - rl),
                  int(u[U_S] * rs * 2 - rs))
        planes = list(cv2.split(cv2.cvtColor(img, cv2.COLOR_BGR2HLS)))
        for k, (d, top) in enumerate(zip(shifts, (180, 255, 255))):
            if d > 0:
                planes[k] = cv2.min(cv2.add(planes[k], d), top)
            elif d < 0:
                planes[k] = cv2.subtract(planes[k], -d)
        return cv2.cvtColor(cv2.merge(planes), cv2.COLOR_HLS2BGR)
