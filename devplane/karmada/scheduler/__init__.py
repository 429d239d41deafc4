"""The simulated karmada-scheduler (``pkg/scheduler``): filters, replica division and the scheduling controller."""

from .algorithm import Algorithm, AvailableReplicas
from .controller import setup_scheduler

__all__ = ["Algorithm", "AvailableReplicas", "setup_scheduler"]
