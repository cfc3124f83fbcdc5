"""Cedar policy sets (``[[policies]]``): loaded at the worker's start, evaluated at plan.

``PolicySet.load`` reads, parses and validates a set (``PolicyError`` names file, line and
column); ``PolicySet.evaluate`` gives its ``PolicyVerdict`` on a ``Subject``. Needs the ``cedar``
extra (``cedarpy``).
"""

from toolcalls.activities.cedar.engine import PolicySet, Subject, evaluate_all, load_all
from toolcalls.activities.cedar.settings import PolicySetSettings
from toolcalls.activities.cedar.source import PolicyError

__all__ = ["PolicyError", "PolicySet", "PolicySetSettings", "Subject", "evaluate_all", "load_all"]
