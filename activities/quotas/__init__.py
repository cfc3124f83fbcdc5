"""``[[quotas]]``: limits on the calls that may execute, per principal, held by ledger workflows.

``QuotaSettings`` is one quota as configured; ``charges`` names the quotas a planned call is
charged to (its result goes into the plan); ``QuotaLedgers`` provides the reserve and release
activities. How the ledger works: ``toolcalls.workflows.models.quota``.
"""

from toolcalls.activities.quotas.ledgers import QuotaLedgers
from toolcalls.activities.quotas.settings import QuotaSettings, charged, charges

__all__ = ["QuotaLedgers", "QuotaSettings", "charged", "charges"]
