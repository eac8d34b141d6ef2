"""Automated optimization: tuning tasks, search spaces from schedule templates, loop-IR
features, an XGBoost rank cost model, explorers (random, grid, simulated annealing) and
resumable tuning records. Measurement (building and running candidates on a device) is the
runtime's business: ``runtime.measure`` provides the runners this package drives.
"""

from .space import Config, ConfigSpace, Knob
from .task import Task, conv2d_task, dense_task, resnet18_tasks, tasks_from_layers

__all__ = [
    "Config",
    "ConfigSpace",
    "Knob",
    "Task",
    "conv2d_task",
    "dense_task",
    "resnet18_tasks",
    "tasks_from_layers",
]
