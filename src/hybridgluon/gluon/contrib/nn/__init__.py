"""Contributed layers (MXNet's `gluon.contrib.nn`): Concurrent, HybridConcurrent, Identity,
SparseEmbedding (dense), SyncBatchNorm (one device),
PixelShuffle1D/2D/3D."""
from .basic_layers import *  # noqa: F401,F403
