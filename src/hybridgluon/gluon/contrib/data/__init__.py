"""MXNet's `gluon.contrib.data`: IntervalSampler. (Its text datasets, WikiText-2/103, download
their data and are not provided.)"""
from .sampler import *  # noqa: F401,F403
