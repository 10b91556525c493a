"""The Module API (MXNet's `mx.mod` / `mx.module`): symbolic training over the Symbol
executor. Module runs one symbol on one or several contexts; BucketingModule one per bucket
key with shared parameters; SequentialModule chains modules; PythonModule and
PythonLossModule are written in Python."""
from .base_module import BaseModule
from .bucketing_module import BucketingModule
from .executor_group import DataParallelExecutorGroup  # noqa: F401
from .module import Module
from .python_module import PythonLossModule, PythonModule
from .sequential_module import SequentialModule

__all__ = ['BaseModule', 'Module', 'BucketingModule', 'SequentialModule', 'PythonModule',
           'PythonLossModule']
